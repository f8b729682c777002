import Testing
import RTDBCore
import RTDBRules
import RTDBWire
@testable import RTDBServer

private func request(_ method: String, _ target: String, _ headers: [(String, String)] = [], body: String = "") -> HTTPRequest {
    HTTPRequest(method: method, target: target, headers: [("Host", "localhost:9000")] + headers.map { ($0.0, $0.1) },
                body: Array(body.utf8))
}

private let upgradeHeaders = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                              ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]

@Suite("The HTTP handler: parsed requests in, answers out")
struct HTTPHandlerTests {
    let harness = Harness()
    var http: HTTPHandler { HTTPHandler(rest: harness.handler, url: { "http://127.0.0.1:9000" }) }

    @Test func readsRunAtOnceWritesInTheGroupCommitUpgradesSwitch() {
        #expect(HTTPHandler.kind(request("GET", "/a.json")) == .read)
        #expect(HTTPHandler.kind(request("HEAD", "/a.json")) == .read)
        #expect(HTTPHandler.kind(request("OPTIONS", "/a.json")) == .read)
        #expect(HTTPHandler.kind(request("GET", "/a.json", [("Accept", "text/event-stream")])) == .read)
        for m in ["PUT", "POST", "PATCH", "DELETE"] { #expect(HTTPHandler.kind(request(m, "/a.json")) == .write) }
        #expect(HTTPHandler.kind(request("GET", "/.ws?v=5&ns=demo", upgradeHeaders)) == .upgrade)
        // Without Upgrade: websocket it is a plain GET (answered 404 by REST).
        #expect(HTTPHandler.kind(request("GET", "/.ws?v=5&ns=demo")) == .read)
    }

    @Test func aWriteThenAReadGiveFirebasesAnswers() {
        let put = http.write(request("PUT", "/users/ada.json?ns=demo", body: #"{"age":36}"#))
        #expect(put.status == 200 && String(decoding: put.body, as: UTF8.self) == #"{"age":36}"#)
        guard case .response(let get) = http.read(request("GET", "/users.json?ns=demo")) else {
            Issue.record("not a response"); return
        }
        #expect(String(decoding: get.body, as: UTF8.self) == #"{"ada":{"age":36}}"#)
        guard case .stream(let s) = http.read(request("GET", "/users.json?ns=demo", [("Accept", "text/event-stream")])) else {
            Issue.record("not a stream"); return
        }
        #expect(s.namespace == "demo" && s.path.unrooted == "users")
    }

    @Test func theFramingSaysWhetherTheConnectionStaysOpen() {
        let ok = HTTPResponse.json(200, "null")
        #expect(HTTPHandler.frame(ok, to: request("GET", "/a.json"), stopping: false).keepAlive)
        #expect(!HTTPHandler.frame(ok, to: request("GET", "/a.json", [("Connection", "close")]), stopping: false).keepAlive)
        let stopping = HTTPHandler.frame(ok, to: request("GET", "/a.json"), stopping: true)
        #expect(!stopping.keepAlive)
        #expect(String(decoding: stopping.bytes, as: UTF8.self).contains("Connection: close\r\n"))
        let lost = HTTPHandler.lost(RTDBError(.ioError, "disk full"))
        #expect(lost.status == 500 && String(decoding: lost.body, as: UTF8.self) == #"{"error":"The write could not be committed: disk full"}"#)
    }

    @Test func anUpgradeIsAcceptedWithItsSessionDetailsOrRefused() {
        guard case .accept(let key, let ns, let host, let previous, let credentials) =
                http.upgrade(request("GET", "/.ws?v=5&ns=demo&ls=old1", upgradeHeaders + [("Authorization", "Bearer owner")])) else {
            Issue.record("refused"); return
        }
        #expect(key == "dGhlIHNhbXBsZSBub25jZQ==" && ns == "demo" && host == "localhost:9000" && previous == "old1")
        #expect(credentials.header("authorization") == "Bearer owner")
        #expect(String(decoding: HTTPHandler.switchingProtocols(key: key), as: UTF8.self)
                == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
        guard case .refuse(let noKey, let close) = http.upgrade(request("GET", "/.ws?v=5", [("Upgrade", "websocket")])) else {
            Issue.record("accepted without a key"); return
        }
        #expect(noKey.status == 400 && close)
        guard case .refuse(let badNamespace, let keep) = http.upgrade(request("GET", "/.ws?v=5&ns=a.b", upgradeHeaders)) else {
            Issue.record("accepted a bad namespace"); return
        }
        #expect(badNamespace.status == 400 && !keep)
    }
}

@Suite("One error table for HTTP and realtime answers")
struct ErrorStatusTests {
    @Test(arguments: [
        (RTDBError.Code.invalidPath, 400, RealtimeStatus.failure),
        (.invalidData, 400, .failure),
        (.tooLarge, 400, .tooBig),
        (.notCommitted, 409, .failure),
        (.unavailable, 503, .unavailable),
        (.timeout, 503, .unavailable),
        (.unsupported, 501, .failure),
        (.permissionDenied, 500, .failure),
        (.ioError, 500, .failure),
    ])
    func table(code: RTDBError.Code, http: Int, realtime: RealtimeStatus) {
        #expect(ErrorStatus.http(code) == http)
        #expect(ErrorStatus.realtime(code) == realtime)
        #expect(RESTError.from(RTDBError(code, "m")).status == http)
    }

    @Test func refusalsStatedAsHTTPStatusesAndAnythingElse() {
        #expect(ErrorStatus.refusal(3, RESTError.permissionDenied) == .failure(3, .permissionDenied, "Permission denied"))
        #expect(ErrorStatus.refusal(4, RESTError(400, "Index not defined")) == .failure(4, .failure, "Index not defined"))
        #expect(ErrorStatus.refusal(5, RTDBError(.tooLarge, "big")) == .failure(5, .tooBig, "big"))
        // Firebase words a body that is not JSON its own way.
        #expect(RESTError.from(RTDBError(.invalidJSON, "x")).message == RESTError.invalidJSON.message)
        #expect(ErrorStatus.response(RTDBError(.unavailable, "busy")).status == 503)
    }
}
