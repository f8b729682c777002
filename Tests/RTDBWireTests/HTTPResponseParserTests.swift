import RTDBWire
import Testing

/// Feeds `text` in pieces of `step` bytes and returns the complete response.
private func parse(_ text: String, method: String = "GET", step: Int = 1, close: Bool = false) throws -> HTTPClientResponse? {
    var p = HTTPResponseParser()
    var head: HTTPResponseHead? = nil
    var body: [UInt8] = []
    let bytes = Array(text.utf8)
    var i = 0
    while i < bytes.count {
        p.append(Array(bytes[i..<min(i + step, bytes.count)]))
        i += step
        if let r = try p.response(forMethod: method, pendingHead: &head, body: &body) { return r }
    }
    if close {
        try p.endOfInput()
        return try p.response(forMethod: method, pendingHead: &head, body: &body)
    }
    return nil
}

@Suite struct HTTPResponseParserTests {
    @Test(arguments: [1, 3, 1000])
    func contentLengthBody(step: Int) throws {
        let r = try #require(try parse("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: abc=\r\nContent-Length: 7\r\n\r\n{\"a\":1}", step: step))
        #expect(r.status == 200)
        #expect(r.header("etag") == "abc=")
        #expect(r.header("Content-Type") == "application/json")
        #expect(String(decoding: r.body, as: UTF8.self) == "{\"a\":1}")
        #expect(r.head.keepAlive)
    }

    @Test(arguments: [1, 2, 1000])
    func chunkedBodyWithExtensionsAndTrailers(step: Int) throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nnull\r\n3\r\n,12\r\n0\r\nX-T: 1\r\n\r\n"
        let r = try #require(try parse(text, step: step))
        #expect(String(decoding: r.body, as: UTF8.self) == "null,12")
        let bare = try #require(try parse("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n", step: step))
        #expect(String(decoding: bare.body, as: UTF8.self) == "ok")
    }

    @Test func bodyUntilCloseNeedsTheClose() throws {
        let text = "HTTP/1.0 200 OK\r\n\r\nhello"
        #expect(try parse(text) == nil)
        let r = try #require(try parse(text, close: true))
        #expect(String(decoding: r.body, as: UTF8.self) == "hello")
        #expect(!r.head.keepAlive)
    }

    @Test func bodylessAnswers() throws {
        #expect(try parse("HTTP/1.1 204 No Content\r\n\r\n")?.body == [])
        #expect(try parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n")?.body == [])
        #expect(try parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", method: "HEAD")?.body == [])
        // An interim 100 Continue is skipped.
        #expect(try parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")?.status == 201)
    }

    @Test func twoResponsesOnOneConnection() throws {
        var p = HTTPResponseParser()
        p.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1HTTP/1.1 412 Precondition Failed\r\nContent-Length: 1\r\nConnection: close\r\n\r\n2".utf8))
        var head: HTTPResponseHead? = nil
        var body: [UInt8] = []
        let first = try #require(try p.response(forMethod: "PUT", pendingHead: &head, body: &body))
        #expect(first.body == [0x31])
        #expect(p.hasUnreadBytes)
        p.reset()
        head = nil
        body = []
        let second = try #require(try p.response(forMethod: "PUT", pendingHead: &head, body: &body))
        #expect(second.status == 412)
        #expect(second.body == [0x32])
        #expect(!second.head.keepAlive)
    }

    @Test func streamingBodyArrivesInPieces() throws {
        var p = HTTPResponseParser()
        p.append(Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: put\n".utf8))
        let head = try #require(try p.head(forMethod: "GET"))
        #expect(head.header("content-type") == "text/event-stream")
        #expect(try p.takeBody() == Array("event: put\n".utf8))
        p.append(Array("data: 1\n\n".utf8))
        #expect(try p.takeBody() == Array("data: 1\n\n".utf8))
        #expect(!p.bodyComplete)
    }

    @Test(arguments: [
        "HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
    ])
    func malformedResponsesAreErrors(_ text: String) {
        #expect(throws: HTTPResponseParseError.self) { _ = try parse(text, step: 1000) }
    }

    @Test func limitsAreEnforced() {
        var p = HTTPResponseParser(maxHeaderBytes: 64, maxBodyBytes: 10)
        p.append(Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 100)).utf8))
        #expect(throws: HTTPResponseParseError.self) { _ = try p.head(forMethod: "GET") }
        var q = HTTPResponseParser(maxHeaderBytes: 64, maxBodyBytes: 10)
        q.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n".utf8))
        #expect(throws: HTTPResponseParseError.self) { _ = try q.head(forMethod: "GET") }
    }

    @Test func truncatedResponsesAreErrorsAtTheClose() throws {
        var p = HTTPResponseParser()
        p.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab".utf8))
        _ = try p.head(forMethod: "GET")
        #expect(throws: HTTPResponseParseError.self) { try p.endOfInput() }
    }

    @Test func requestWriterFramesTheBody() {
        let bytes = HTTPRequestWriter.serialize(method: "PUT", target: "/a.json?ns=x", host: "h:1",
                                                headers: [("if-match", "abc")], body: Array("1".utf8))
        #expect(String(decoding: bytes, as: UTF8.self)
                == "PUT /a.json?ns=x HTTP/1.1\r\nHost: h:1\r\nif-match: abc\r\nContent-Length: 1\r\n\r\n1")
        let get = HTTPRequestWriter.serialize(method: "GET", target: "/.json", host: "h", headers: [], body: nil)
        #expect(String(decoding: get, as: UTF8.self) == "GET /.json HTTP/1.1\r\nHost: h\r\n\r\n")
    }
}
