import Testing
import RTDBCore
@testable import RTDBWire

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

@Suite("HTTP response and SSE writers")
struct HTTPResponseTests {
    @Test("a JSON response: status line, content type, length, body")
    func json() {
        let r = HTTPResponse.json(200, "{\"a\":1}")
        #expect(text(r.serialize(keepAlive: true)) ==
            "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
    }

    @Test("Connection: close when the connection ends; keep-alive spelled out for HTTP/1.0")
    func connection() {
        let r = HTTPResponse.json(200, "null")
        #expect(text(r.serialize(keepAlive: false)).contains("\r\nConnection: close\r\n\r\nnull"))
        #expect(!text(r.serialize(keepAlive: true)).contains("Connection"))
        #expect(text(r.serialize(keepAlive: true, minorVersion: 0)).contains("\r\nConnection: keep-alive\r\n"))
        #expect(text(r.serialize(keepAlive: false, minorVersion: 0)).contains("\r\nConnection: close\r\n"))
    }

    @Test("204 and 304 carry neither Content-Length nor a body", arguments: [204, 304])
    func bodyless(status: Int) {
        var r = HTTPResponse(status: status, headers: [("ETag", "abc")], body: Array("x".utf8))
        r.headers.append(("X-A", "1"))
        let s = text(r.serialize(keepAlive: true))
        #expect(s == "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\nETag: abc\r\nX-A: 1\r\n\r\n")
    }

    @Test("an explicit Content-Length is kept (HEAD answers)")
    func explicitLength() {
        let r = HTTPResponse(status: 200, headers: [("Content-Length", "42")])
        #expect(text(r.serialize(keepAlive: true)) == "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n")
    }

    @Test("error bodies are Firebase's shape with the message escaped")
    func error() {
        let r = HTTPResponse.error(400, "bad \"x\"\n")
        #expect(r.status == 400)
        #expect(text(r.body) == "{\"error\":\"bad \\\"x\\\"\\n\"}")
        #expect(r.header("content-type") == "application/json; charset=utf-8")
        #expect(text(HTTPParseError(status: 431, message: "too long").response.serialize(keepAlive: false))
            .hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
    }

    @Test("the head and body are written whole, whatever the sizes of their parts", arguments: [0, 1, 9, 10, 99, 100, 12_345, 70_000])
    func sizes(bodyBytes: Int) {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: bodyBytes)
        let r = HTTPResponse(status: 200, headers: [("X-Ünïcode", "välue ✓"), ("Empty", "")], body: body)
        let expectedHead = "HTTP/1.1 200 OK\r\nX-Ünïcode: välue ✓\r\nEmpty: \r\nContent-Length: \(bodyBytes)\r\n"
        #expect(text(r.serialize(keepAlive: true)) == expectedHead + "\r\n" + String(repeating: "x", count: bodyBytes))
        #expect(text(r.serialize(keepAlive: false)) == expectedHead + "Connection: close\r\n\r\n" + String(repeating: "x", count: bodyBytes))
        let head = r.serializeHead(keepAlive: true, reserving: bodyBytes)
        #expect(text(head) == expectedHead + "\r\n")
        #expect(head.capacity >= head.count + bodyBytes)
    }

    @Test("statuses of any width, and a Connection field set by the caller", arguments: [0, 7, 42, 999, 1000, -5])
    func statuses(status: Int) {
        let r = HTTPResponse(status: status, headers: [("connection", "upgrade")], body: Array("ab".utf8))
        let s = text(r.serialize(keepAlive: false, minorVersion: 0))
        let body = HTTPResponse.bodyless(status) ? "" : "Content-Length: 2\r\n"
        #expect(s == "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\nconnection: upgrade\r\n\(body)\r\n"
            + (HTTPResponse.bodyless(status) ? "" : "ab"))
    }

    @Test("the interim 100 Continue")
    func continueHead() {
        #expect(text(HTTPResponse.continueHead) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test("reason phrases", arguments: [(200, "OK"), (301, "Moved Permanently"), (302, "Found"), (412, "Precondition Failed"), (413, "Content Too Large"),
                                        (501, "Not Implemented"), (505, "HTTP Version Not Supported"), (299, "Unknown")])
    func reasons(status: Int, reason: String) {
        #expect(HTTPResponse.reason(status) == reason)
    }

    @Test("SSE frames: one data line, or several for multi-line data")
    func frames() {
        #expect(text(SSE.frame(event: "put", data: "{\"path\":\"/\",\"data\":null}")) ==
            "event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n")
        #expect(text(SSE.frame(event: "keep-alive", data: "null")) == "event: keep-alive\ndata: null\n\n")
        #expect(text(SSE.frame(event: "x", data: "a\nb\r\nc\rd")) == "event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
        #expect(text(SSE.frame(event: "x", data: "")) == "event: x\ndata: \n\n")
    }

    @Test("the SSE response head")
    func sseHead() {
        let h = text(SSE.head())
        #expect(h.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(h.contains("\r\nContent-Type: text/event-stream\r\n"))
        #expect(h.contains("\r\nCache-Control: no-cache\r\n"))
        #expect(!h.contains("Content-Length"))
        #expect(h.hasSuffix("\r\n\r\n"))
    }

    @Test("frames written by SSE decode back, in any split")
    func roundTrip() throws {
        let bytes = SSE.frame(event: "put", data: "{\"a\":1}") + SSE.frame(event: "patch", data: "line1\nline2")
            + Array(": comment\r\nid: 7\r\nretry: 2500\r\nevent: keep-alive\r\ndata: null\r\n\r\n".utf8)
            + Array("data: no name\r\rdata: pending".utf8)
        for split in [1, 2, 5, bytes.count] {
            var d = SSEDecoder()
            var events: [SSEDecoder.Event] = []
            var i = 0
            while i < bytes.count {
                let end = min(bytes.count, i + split)
                events += try d.feed(Array(bytes[i..<end]))
                i = end
            }
            #expect(events == [
                SSEDecoder.Event(event: "put", data: "{\"a\":1}"),
                SSEDecoder.Event(event: "patch", data: "line1\nline2"),
                SSEDecoder.Event(event: "keep-alive", data: "null", id: "7"),
                SSEDecoder.Event(event: "message", data: "no name", id: "7"),
            ], "split \(split)")
            #expect(d.retry == 2500)
            #expect(d.lastEventID == "7")
        }
    }

    @Test("an SSE event without data is not dispatched; an oversized one is refused")
    func decoderEdges() throws {
        var d = SSEDecoder(maxEventBytes: 10)
        #expect(try d.feed(Array("event: x\n\n".utf8)).isEmpty)
        #expect(throws: SSEDecoder.TooLarge.self) { try d.feed(Array("data: 0123456789".utf8)) }
    }
}

@Suite("Percent coding")
struct PercentCodingTests {
    @Test("decoding", arguments: [
        ("abc", "abc"), ("a%20b", "a b"), ("a+b", "a+b"), ("%22%24key%22", "\"$key\""),
        ("%e6%97%a5", "日"), ("%2F", "/"), ("", ""), ("%25", "%"),
    ])
    func decode(input: String, output: String) throws {
        #expect(try PercentCoding.decode(input) == output)
    }

    @Test("malformed escapes and non-UTF-8 are errors", arguments: ["%", "%2", "%zz", "a%g0", "%C3", "%FF%FE"])
    func malformed(input: String) {
        #expect(throws: PercentCoding.DecodingError.self) { try PercentCoding.decode(input) }
    }

    @Test("encoding keeps only unreserved characters")
    func encode() throws {
        #expect(PercentCoding.encode("a b+c/\"$key\"~日") == "a%20b%2Bc%2F%22%24key%22~%E6%97%A5")
        for s in ["", "x", "a b&c=d", "\"é\",\"k\""] {
            #expect(try PercentCoding.decode(PercentCoding.encode(s)) == s)
        }
        #expect(PercentCoding.queryString([("orderBy", "\"$key\""), ("limitToFirst", "2")]) ==
            "orderBy=%22%24key%22&limitToFirst=2")
    }

    @Test("query strings split on & and the first =")
    func query() throws {
        let q = try PercentCoding.parseQuery("a=1=2&b&&c=%26")
        #expect(q.map(\.name) == ["a", "b", "c"])
        #expect(q.map(\.value) == ["1=2", "", "&"])
        #expect(try PercentCoding.parseQuery(nil).isEmpty)
        #expect(try PercentCoding.parseQuery("").isEmpty)
        let edges = try PercentCoding.parseQuery("&=v&k=&auth=eyJ.x_y-z.&")
        #expect(edges.map(\.name) == ["", "k", "auth"])
        #expect(edges.map(\.value) == ["v", "", "eyJ.x_y-z."])
        #expect(throws: PercentCoding.DecodingError.self) { try PercentCoding.parseQuery("a=%2") }
        #expect(throws: PercentCoding.DecodingError.self) { try PercentCoding.parseQuery("a=%C3%28") }
    }
}
