import RTDBCore
import RTDBWire
@testable import RTDBRemote
import Testing

/// The realtime client's pure pieces: the upgrade answer check, hosts from hellos and resets,
/// request bodies.
@Suite struct RealtimePiecesTests {
    let key = "dGhlIHNhbXBsZSBub25jZQ=="
    var accept: String { WebSocket.acceptValue(forKey: key) }

    @Test func anUpgradeAnswerNeeds101UpgradeAndTheRightAccept() throws {
        #expect(accept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        try WebSocketConnection.checkUpgrade("HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)",
                                             key: key, host: "h")
        let cases: [(String, String)] = [
            ("HTTP/1.1 404 Not Found\r\nContent-Length: 0", "HTTP 404"),
            ("HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: \(accept)", "Upgrade: websocket"),
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: x\(accept)", "Sec-WebSocket-Accept"),
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket", "Sec-WebSocket-Accept"),
            ("SSH-2.0-OpenSSH", "HTTP"),
        ]
        for (head, words) in cases {
            do {
                try WebSocketConnection.checkUpgrade(head, key: key, host: "h")
                Issue.record("accepted: \(head)")
            } catch let e as RTDBError {
                #expect(e.code == .unavailable)
                #expect(e.message.contains(words), "\(e.message)")
            }
        }
    }

    @Test func theHeadEndsAtTheFirstBlankLine() {
        #expect(WebSocketConnection.headEnd(Array("HTTP/1.1 101 x\r\n\r\n\u{81}".utf8)) == 14)
        #expect(WebSocketConnection.headEnd(Array("HTTP/1.1 101 x\r\n".utf8)) == nil)
        #expect(WebSocketConnection.headEnd([]) == nil)
    }

    @Test func resetAndHelloHostsKeepTheSchemeAndPortUnlessNamed() throws {
        let t = RemoteTarget(secure: true, host: "db.firebaseio.com", port: 443, namespace: "db", emulator: false)
        let c = RealtimeClient(target: t, credential: .none, timeoutSeconds: 1, caFile: nil)
        #expect(c.movedEndpoint("s-usc1c-nss-114.firebaseio.com") == Endpoint(secure: true, host: "s-usc1c-nss-114.firebaseio.com", port: 443))
        #expect(c.movedEndpoint("127.0.0.1:9000") == Endpoint(secure: true, host: "127.0.0.1", port: 9000))
        #expect(c.movedEndpoint("") == nil)
        #expect(c.movedEndpoint("bad host/x") == nil)
        #expect(c.movedEndpoint("h:99999") == nil)
        #expect(c.upgradeTarget == "/.ws?v=5&ns=db")
        #expect(c.info.isObject)
        #expect(JSONWriter.string(c.info) == #"{"connected":false}"#)
    }

    /// The bytes of one request the client sends.
    func sent(_ action: RealtimeRequest.Action) -> String {
        String(decoding: RealtimeMessage.request(RealtimeRequest(r: 1, action)).encode(), as: UTF8.self)
    }

    @Test func bodiesAreJSONWithPathsAndExportValues() throws {
        #expect(sent(.onDisconnectCancel(path: try Path("/a/b"))) == #"{"t":"d","d":{"r":1,"a":"oc","b":{"p":"/a/b","d":null}}}"#)
        #expect(sent(.onDisconnectCancel(path: Path(validatedKeys: []))).contains(#""p":"/""#))
        #expect(sent(.onDisconnectCancel(path: Path(validatedKeys: ["q\"uote"]))).contains(#""p":"/q\"uote""#))
        let value = try JSONReader.parse(#"{"x":{".value":1,".priority":2},"t":{".sv":"timestamp"}}"#)
        let text = sent(.put(path: .root, value: value, hash: nil))
        #expect(text.contains(#"".priority":2"#))
        #expect(text.contains(#"{".sv":"timestamp"}"#))
        let merge = sent(.merge(path: .root, children: [Node.Entry("a/b", .int(1)), Node.Entry("c", .null)]))
        #expect(merge.contains(#""d":{"a/b":1,"c":null}"#))
        // A listen: the query object and tag only for a query listen, and no cached value.
        #expect(sent(.listen(RealtimeClient.listen(try Path("/a"), nil, nil))) == #"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","h":""}}}"#)
        let q = try JSONText(validating: #"{"l":2,"vf":"r","i":"x"}"#)
        #expect(sent(.listen(RealtimeClient.listen(try Path("/q"), q, 1)))
                == #"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/q","q":{"l":2,"vf":"r","i":"x"},"t":1,"h":""}}}"#)
    }
}
