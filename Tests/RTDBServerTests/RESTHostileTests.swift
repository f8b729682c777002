import Foundation
import Testing
import RTDBCore
import RTDBWire
@testable import RTDBServer

@Suite("REST: hostile and malformed requests change nothing")
struct RESTHostileTests {
    @Test("bad paths", arguments: [
        ("/a/b", 404), ("/", 404), ("/a.JSON", 404), ("/a.json/x", 404),
        ("/a%2Fb.json", 400), ("/a%zz.json", 400), ("/a%C3.json", 400), ("/a$b.json", 400), ("/a[0].json", 400),
        ("/a%23b.json", 400), ("/a%00b.json", 400), ("/.foo.json", 400), ("/a/.info.json", 400),
    ])
    func badPaths(path: String, status: Int) {
        let h = Harness()
        let r = h.send("PUT", path, "1")
        #expect(r.status == status, "\(path): \(r.text)")
        #expect(r.text.hasPrefix("{\"error\":"))
        #expect(h.stored("/") == "null")
    }

    @Test("percent-decoded segments keep + and reach the database as keys")
    func decodedSegments() {
        let h = Harness()
        #expect(h.send("PUT", "/a+b/%E6%97%A5%20x.json", "1").status == 200)
        #expect(h.stored("/a+b/日 x") == "1")
        #expect(h.send("GET", "/a+b.json").text == "{\"日 x\":1}")
        #expect(h.send("GET", "//a+b//.json").text == "{\"日 x\":1}")
    }

    @Test("too deep, too long a key, too long a string")
    func limits() {
        let h = Harness()
        let deep = "/" + (0..<33).map { "k\($0)" }.joined(separator: "/") + ".json"
        #expect(h.send("PUT", deep, "1").status == 400)
        let nearly = "/" + (0..<32).map { "k\($0)" }.joined(separator: "/") + ".json"
        #expect(h.send("PUT", nearly, "1").status == 200)
        #expect(h.send("PUT", String(nearly.dropLast(5)) + "/x.json", "1").status == 400)
        #expect(h.send("PUT", "/a.json", "{\"b\":" + String(repeating: "{\"c\":", count: 32) + "1" + String(repeating: "}", count: 33)).status == 400)
        #expect(h.send("PUT", "/" + String(repeating: "k", count: 769) + ".json", "1").status == 400)
        #expect(h.send("PUT", "/a.json", "{\"" + String(repeating: "k", count: 769) + "\":1}").status == 400)
        let big = "\"" + String(repeating: "x", count: Limits.maxStringBytes + 1) + "\""
        let r = h.send("PUT", "/a.json", big)
        #expect(r.status == 400)
        #expect(h.stored("/a") == "null")
        #expect(h.stored("/k0") != "null")
    }

    @Test("bad bodies", arguments: ["", " ", "{", "[1,", "nul", "{\"a\":1}x", "\u{FF}", "{\"a\":NaN}", "1e999",
                                    "{\".value\":1,\"b\":2}", "{\".bad\":1}", "{\"a\":{\".sv\":1}}"])
    func badBodies(body: String) {
        let h = Harness()
        for method in ["PUT", "POST", "PATCH"] {
            let r = h.send(method, "/x.json", body)
            #expect(r.status == 400, "\(method) \(body.debugDescription): \(r.text)")
        }
        #expect(h.stored("/") == "null")
    }

    @Test("unknown parameters and methods")
    func unknown() {
        let h = Harness()
        let p = h.send("GET", "/x.json?foo=1")
        #expect(p.status == 400)
        #expect(p.text.contains("unknown query parameter \\\"foo\\\""))
        let m = h.send("BREW", "/x.json")
        #expect(m.status == 405)
        #expect(m.header("Allow")?.contains("GET") == true)
        #expect(h.send("PUT", "/x.json?shallow=true", "1").status == 400)
        #expect(h.send("GET", "/x.json?format=raw").status == 400)
    }

    @Test("bytes through the parser into the handler: pipelined, chunked, keep-alive")
    func wire() throws {
        let h = Harness()
        var parser = HTTPRequestParser()
        parser.append(Array(("PUT /w.json HTTP/1.1\r\nHost: wdb.localhost\r\nTransfer-Encoding: chunked\r\n\r\n" +
            "4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n" +
            "GET /w/a.json HTTP/1.1\r\nHost: wdb.localhost\r\nConnection: close\r\n\r\n").utf8))
        var answers: [String] = []
        while let request = try parser.next() {
            guard case .response(let r) = h.handler.handle(request) else { Issue.record("stream"); continue }
            answers.append(String(decoding: r.serialize(keepAlive: request.keepAlive), as: UTF8.self))
        }
        #expect(answers.count == 2)
        #expect(answers.first?.hasSuffix("Content-Length: 7\r\n\r\n{\"a\":1}") == true)
        #expect(answers.last?.hasSuffix("Content-Length: 1\r\nConnection: close\r\n\r\n1") == true)
        #expect(h.stored("/w", ns: "wdb") == "{\"a\":1}")
    }
}

@Suite("REST: streams")
struct RESTStreamTests {
    @Test("Accept: text/event-stream on a readable URL is a stream request")
    func stream() throws {
        let h = Harness()
        let s = try #require(h.stream("/rooms/1.json?ns=chat"))
        #expect(s.namespace == "chat")
        #expect(s.path.description == "/rooms/1")
        #expect(s.query == nil)
        let root = try #require(h.stream("/.json"))
        #expect(root.path.isRoot)
        #expect(root.namespace == "fake-server")
        // Accept lists are matched by media type.
        #expect(h.stream("/x.json", headers: []) != nil)
        if case .response = h.outcome("GET", "/x.json", headers: [("Accept", "application/json, text/event-stream;q=0.9")]) {
            Issue.record("expected a stream")
        }
    }

    @Test("queries carry over; an orderBy alone is the whole value")
    func queries() throws {
        let h = Harness()
        let q = try #require(h.stream("/s.json?orderBy=%22n%22&limitToLast=2"))
        let query = try #require(q.query)
        #expect(query.limit == .last(2))
        if case .child(let p) = query.order { #expect(p.description == "/n") } else { Issue.record("order") }
        #expect(try #require(h.stream("/s.json?orderBy=%22n%22")).query == nil)
    }

    @Test("streams are validated like reads")
    func validated() {
        let h = Harness()
        for target in ["/a.b.json", "/x", "/x.json?orderBy=bad", "/x.json?callback=cb", "/x.json?shallow=true",
                       "/x.json?print=silent", "/x.json?download=f", "/x.json?nope=1", "/x/.priority.json"] {
            switch h.outcome("GET", target, headers: [("Accept", "text/event-stream")]) {
            case .stream: Issue.record("\(target) was accepted")
            case .response(let r): #expect(r.status >= 400, "\(target)")
            }
        }
    }
}
