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
    var http: HTTPHandler { HTTPHandler(rest: harness.handler, url: { "http://127.0.0.1:9000" }, viewer: true) }
    var withoutViewer: HTTPHandler { HTTPHandler(rest: harness.handler, url: { "http://127.0.0.1:9000" }, viewer: false) }

    func answer(_ h: HTTPHandler, _ r: HTTPRequest) -> HTTPResponse? {
        guard case .response(let response) = h.read(r) else { Issue.record("not a response"); return nil }
        return response
    }

    @Test func theViewersFilesAreAnsweredUnderUIWithAPolicyThatKeepsThemToTheServer() throws {
        for (target, type) in [("/.ui/", "text/html"), ("/.ui/index.html", "text/html"),
                               ("/.ui/viewer.js?ns=x", "text/javascript"), ("/.ui/viewer.css", "text/css")] {
            let r = try #require(answer(http, request("GET", target)))
            #expect(r.status == 200, "\(target)")
            #expect(r.header("content-type")?.hasPrefix(type) == true, "\(target)")
            #expect(!r.body.isEmpty)
            #expect(r.header("content-security-policy")?.contains("default-src 'none'") == true)
            #expect(r.header("content-security-policy")?.contains("connect-src 'self'") == true)
            #expect(r.header("x-frame-options") == "DENY")
            // HEAD: the same head, no body, the length of the body it leaves out.
            let head = try #require(answer(http, request("HEAD", target)))
            #expect(head.status == 200 && head.body.isEmpty && head.header("content-length") == String(r.body.count))
        }
        #expect(answer(http, request("GET", "/.ui/secret.txt"))?.status == 404)
        // The page carries no data and no credential: the same bytes whatever the request holds.
        let plain = try #require(answer(http, request("GET", "/.ui/")))
        let other = try #require(answer(http, request("GET", "/.ui/?ns=demo&auth=token", [("Authorization", "Bearer owner")])))
        #expect(plain.body == other.body)
    }

    @Test func aBrowserOpeningTheRootIsSentToTheViewerWithItsQuery() throws {
        let r = try #require(answer(http, request("GET", "/?ns=demo", [("Accept", "text/html,application/xhtml+xml")])))
        #expect(r.status == 302 && r.header("location") == "/.ui/?ns=demo")
        #expect(answer(http, request("GET", "/.ui"))?.header("location") == "/.ui/")
        // Not a browser: the REST API's answer as before.
        #expect(answer(http, request("GET", "/"))?.status == 404)
        #expect(answer(http, request("GET", "/", [("Accept", "application/json")]))?.status == 404)
        // Writes are never the viewer's.
        #expect(http.write(request("PUT", "/.ui/", body: "1")).status == 404)
    }

    @Test func withoutTheViewerItsPathsAreTheRESTAPIsAsBefore() throws {
        for (target, headers) in [("/.ui/", [(String, String)]()), ("/.ui/viewer.js", []), ("/", [("Accept", "text/html")])] {
            let off = try #require(answer(withoutViewer, request("GET", target, headers)))
            let rest = harness.handler.handle(request("GET", target, headers))
            guard case .response(let expected) = rest else { Issue.record("not a response"); continue }
            #expect(off.status == 404 && off.body == expected.body, "\(target)")
        }
    }

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
