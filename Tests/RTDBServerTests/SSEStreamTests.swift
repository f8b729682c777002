import Testing
import RTDBCore
import RTDBRules
import RTDBWire
@testable import RTDBServer

@Suite("An event stream's own frames: cancel, auth_revoked, keep-alive")
struct SSEStreamTests {
    func stream(governed: Bool) -> SSEStream {
        let access = StreamAccess(namespace: "demo", path: Path(validatedKeys: ["a"]), principal: .anonymous, query: RuleQuery())
        return SSEStream(subscriber: StreamSubscriber(id: 1, connID: 16, kind: .sse(export: false)), access: governed ? access : nil)
    }

    @Test func itOpensWithItsHeadAndTheWholeValue() {
        let bytes = SSEStream.opening(.put(.root, .int(1)), export: false)
        #expect(String(decoding: bytes, as: UTF8.self) == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                + "Access-Control-Allow-Origin: *\r\n\r\nevent: put\ndata: {\"path\":\"/\",\"data\":1}\n\n")
    }

    @Test func aLocationNoLongerReadableCancelsOnce() {
        let s = stream(governed: true)
        #expect(s.recheck { _ in true } == nil)
        #expect(s.recheck { _ in false } == .end(Array("event: cancel\ndata: \"Permission denied\"\n\n".utf8)))
        #expect(s.recheck { _ in false } == nil)
        // A stream the rules do not govern is never cancelled.
        #expect(stream(governed: false).recheck { _ in false } == nil)
    }

    @Test func quietStreamsAreKeptAliveAndExpiredTokensRevoked() {
        let s = stream(governed: true)
        #expect(s.sweep(quietFor: 29_999, keepAliveMillis: 30_000, expired: { _ in false }) == nil)
        #expect(s.sweep(quietFor: 30_000, keepAliveMillis: 30_000, expired: { _ in false })
                == .send(Array("event: keep-alive\ndata: null\n\n".utf8)))
        #expect(s.sweep(quietFor: 0, keepAliveMillis: 30_000, expired: { _ in true })
                == .end(Array("event: auth_revoked\ndata: credential is no longer valid\n\n".utf8)))
    }
}
