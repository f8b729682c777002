import Testing
@testable import RTDBWire

/// Parses `text` fed in pieces of `split` bytes; returns the requests, or the error.
func parseAll(_ bytes: [UInt8], split: Int = .max, limits: HTTPLimits = HTTPLimits()) -> (requests: [HTTPRequest], error: HTTPParseError?) {
    var p = HTTPRequestParser(limits: limits)
    var out: [HTTPRequest] = []
    var i = 0
    repeat {
        let end = split >= bytes.count - i ? bytes.count : i + split
        p.append(Array(bytes[i..<end]))
        i = end
        do {
            while let r = try p.next() { out.append(r) }
        } catch let e as HTTPParseError {
            return (out, e)
        } catch {
            return (out, HTTPParseError(status: -1, message: "\(error)"))
        }
    } while i < bytes.count
    return (out, nil)
}

func parseAll(_ text: String, split: Int = .max, limits: HTTPLimits = HTTPLimits()) -> (requests: [HTTPRequest], error: HTTPParseError?) {
    parseAll(Array(text.utf8), split: split, limits: limits)
}

func bodyText(_ r: HTTPRequest) -> String { String(decoding: r.body, as: UTF8.self) }

@Suite("HTTP request parser")
struct HTTPRequestParserTests {
    let simple = "GET /users/jack.json?print=pretty&orderBy=%22%24key%22 HTTP/1.1\r\nHost: mydb.localhost:9000\r\nX-Firebase-ETag: true\r\nAccept:  */* \r\n\r\n"
    let withBody = "PUT /a/b.json HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"first\":\"Jack\",\"n\":12345}"
    let chunked = "POST /list.json HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3;ext=1\r\n123\r\n1\r\n}\r\n0\r\nX-Trailer: yes\r\n\r\n"

    @Test("a GET: method, target, path, decoded query, headers")
    func get() throws {
        let (rs, err) = parseAll(simple)
        #expect(err == nil)
        try #require(rs.count == 1)
        let r = rs[0]
        #expect(r.method == "GET")
        #expect(r.target == "/users/jack.json?print=pretty&orderBy=%22%24key%22")
        #expect(r.rawPath == "/users/jack.json")
        #expect(r.query.map(\.name) == ["print", "orderBy"])
        #expect(r.queryValue("orderBy") == "\"$key\"")
        #expect(r.header("host") == "mydb.localhost:9000")
        #expect(r.header("X-FIREBASE-ETAG") == "true")
        #expect(r.header("accept") == "*/*")
        #expect(r.headers.map(\.name) == ["host", "x-firebase-etag", "accept"])
        #expect(r.minorVersion == 1)
        #expect(r.keepAlive)
        #expect(r.body.isEmpty)
        #expect(!r.expectsContinue)
    }

    @Test("every byte split gives the same requests", arguments: [1, 2, 3, 5, 7, 16, 64])
    func splits(size: Int) throws {
        for text in [simple, withBody, chunked, simple + withBody + chunked] {
            let whole = parseAll(text)
            let pieces = parseAll(text, split: size)
            #expect(pieces.error == nil)
            try #require(pieces.requests.count == whole.requests.count)
            for (a, b) in zip(whole.requests, pieces.requests) {
                #expect(a.target == b.target)
                #expect(a.body == b.body)
                #expect(a.headers.map(\.name) == b.headers.map(\.name))
                #expect(a.headers.map(\.value) == b.headers.map(\.value))
            }
        }
    }

    @Test("every split point of a pipelined pair, fed in two appends")
    func everySplitPoint() throws {
        let bytes = Array((withBody + chunked).utf8)
        for cut in 0...bytes.count {
            var p = HTTPRequestParser()
            var got: [HTTPRequest] = []
            p.append(Array(bytes[..<cut]))
            while let r = try p.next() { got.append(r) }
            p.append(Array(bytes[cut...]))
            while let r = try p.next() { got.append(r) }
            #expect(got.count == 2, "cut at \(cut)")
            #expect(got.first.map(bodyText) == "{\"first\":\"Jack\",\"n\":12345}", "cut at \(cut)")
            #expect(got.last.map(bodyText) == "{\"a\":123}", "cut at \(cut)")
            #expect(!p.hasPartialRequest)
        }
    }

    @Test("a Content-Length body")
    func contentLength() throws {
        let (rs, err) = parseAll(withBody)
        #expect(err == nil)
        try #require(rs.count == 1)
        #expect(bodyText(rs[0]) == "{\"first\":\"Jack\",\"n\":12345}")
    }

    @Test("a chunked body with extensions and trailers")
    func chunkedBody() throws {
        let (rs, err) = parseAll(chunked)
        #expect(err == nil)
        try #require(rs.count == 1)
        #expect(bodyText(rs[0]) == "{\"a\":123}")
        #expect(rs[0].trailers.count == 1)
        #expect(rs[0].trailers.first?.name == "x-trailer")
        #expect(rs[0].header("x-trailer") == nil)
    }

    @Test("chunked with upper-case hex sizes and no trailers")
    func chunkedHex() throws {
        let payload = String(repeating: "x", count: 0x1A)
        let (rs, err) = parseAll("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n1A\r\n\(payload)\r\n0\r\n\r\n")
        #expect(err == nil)
        #expect(rs.first.map(bodyText) == payload)
    }

    @Test("pipelined requests come out in order, bytes of the next kept")
    func pipelined() throws {
        var p = HTTPRequestParser()
        p.append(Array((simple + withBody + "GET /x.json HTTP/1.1\r\nHo").utf8))
        #expect(try p.next()?.method == "GET")
        #expect(try p.next()?.method == "PUT")
        #expect(try p.next() == nil)
        #expect(p.hasPartialRequest)
        p.append(Array("st: h\r\n\r\n".utf8))
        #expect(try p.next()?.rawPath == "/x.json")
        #expect(!p.hasPartialRequest)
        #expect(try p.next() == nil)
    }

    @Test("bare LF line ends are accepted")
    func bareLF() throws {
        let (rs, err) = parseAll("PUT /a.json HTTP/1.1\nHost: h\nContent-Length: 2\n\n{}" + "GET /b.json HTTP/1.1\nHost: h\n\r\n")
        #expect(err == nil)
        #expect(rs.map(\.rawPath) == ["/a.json", "/b.json"])
        #expect(rs.first.map(bodyText) == "{}")
    }

    @Test("empty lines before a request line are skipped")
    func leadingEmptyLines() throws {
        let (rs, err) = parseAll("\r\n\r\n\n" + simple)
        #expect(err == nil)
        #expect(rs.count == 1)
        var p = HTTPRequestParser()
        p.append(Array("\r\n".utf8))
        #expect(try p.next() == nil)
        #expect(!p.hasPartialRequest)
    }

    @Test("keep-alive by version and Connection", arguments: [
        ("HTTP/1.1", "", true),
        ("HTTP/1.1", "Connection: close\r\n", false),
        ("HTTP/1.1", "Connection: Keep-Alive, Close\r\n", false),
        ("HTTP/1.0", "", false),
        ("HTTP/1.0", "Connection: keep-alive\r\n", true),
        ("HTTP/1.0", "Connection: Keep-Alive\r\n", true),
        ("HTTP/1.1", "Connection: upgrade\r\n", true),
    ])
    func keepAlive(version: String, header: String, expected: Bool) throws {
        let (rs, err) = parseAll("GET / \(version)\r\nHost: h\r\n\(header)\r\n")
        #expect(err == nil)
        #expect(rs.first?.keepAlive == expected)
        #expect(rs.first?.minorVersion == (version == "HTTP/1.0" ? 0 : 1))
    }

    @Test("HTTP/1.0 without Host is fine; a later 1.x minor is read as 1.1")
    func versions() throws {
        #expect(parseAll("GET / HTTP/1.0\r\n\r\n").requests.count == 1)
        #expect(parseAll("GET / HTTP/1.9\r\nHost: h\r\n\r\n").requests.first?.minorVersion == 1)
    }

    @Test("absolute-form and asterisk targets")
    func targetForms() throws {
        let (rs, err) = parseAll("GET http://db.example:9000/a/b.json?ns=x HTTP/1.1\r\nHost: h\r\n\r\n" +
                                 "GET HTTP://db.example?ns=y HTTP/1.1\r\nHost: h\r\n\r\n" +
                                 "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(err == nil)
        #expect(rs.map(\.rawPath) == ["/a/b.json", "/", "*"])
        #expect(rs.map { $0.queryValue("ns") } == ["x", "y", nil])
    }

    @Test("query decoding: RFC 3986, + stays +, empty pieces skipped, last value wins")
    func query() throws {
        let (rs, _) = parseAll("GET /x.json?a=1+2&&b&c=%7B%22k%22%3A1%7D&a=%C3%A9&=v HTTP/1.1\r\nHost: h\r\n\r\n")
        let r = try #require(rs.first)
        #expect(r.query.map(\.name) == ["a", "b", "c", "a", ""])
        #expect(r.query.first?.value == "1+2")
        #expect(r.queryValue("b") == "")
        #expect(r.queryValue("c") == "{\"k\":1}")
        #expect(r.queryValue("a") == "é")
        #expect(r.queryValue("zz") == nil)
    }

    @Test("Expect: 100-continue is reported until the body starts")
    func expectContinue() throws {
        var p = HTTPRequestParser()
        p.append(Array("PUT /a.json HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n".utf8))
        #expect(try p.next() == nil)
        #expect(p.needsContinue)
        #expect(p.pendingHead?.rawPath == "/a.json")
        p.continueSent()
        #expect(!p.needsContinue)
        p.append(Array("true".utf8))
        let r = try #require(try p.next())
        #expect(r.expectsContinue)
        #expect(bodyText(r) == "true")
        #expect(p.pendingHead == nil)

        // The client may send the body without waiting: no interim answer is needed then.
        var q = HTTPRequestParser()
        q.append(Array("PUT /a.json HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\ntr".utf8))
        #expect(try q.next() == nil)
        #expect(!q.needsContinue)

        // Without a body there is nothing to wait for.
        var z = HTTPRequestParser()
        z.append(Array("GET /a.json HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n".utf8))
        #expect(try z.next() != nil)
        #expect(!z.needsContinue)
    }

    @Test("malformed input gets a precise status", arguments: [
        ("GET /x HTTP/1.1\r\n\r\n", 400, "without a Host"),
        ("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host"),
        ("GET  /x HTTP/1.1\r\nHost: h\r\n\r\n", 400, "request line"),
        ("GET /x\r\nHost: h\r\n\r\n", 400, "request line"),
        ("GET /x HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400, "malformed request line"),
        ("G(T /x HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid method"),
        ("BREW /x HTTP/1.1\r\nHost: h\r\n\r\n", 501, "not implemented"),
        ("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 501, "not implemented"),
        ("GET x.json HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid request target"),
        ("GET /a\u{7F}b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid request target"),
        ("GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid request target"),
        ("GET /é HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid request target"),
        ("GET /x HTTP/2.0\r\nHost: h\r\n\r\n", 505, "not supported"),
        ("GET /x http/1.1\r\nHost: h\r\n\r\n", 400, "invalid HTTP version"),
        ("GET /x HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 400, "invalid header field name"),
        ("GET /x HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400, "invalid header field name"),
        ("GET /x HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400, "without ':'"),
        ("GET /x HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  folded\r\n\r\n", 400, "obsolete line folding"),
        ("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400, "bare CR"),
        ("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\u{0}b\r\n\r\n", 400, "invalid character"),
        ("GET /x?a=%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400, "malformed query"),
        ("GET /x?a=%C3 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "not UTF-8"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400, "more than one Content-Length"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", 400, "more than one Content-Length"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\nx", 400, "more than one Content-Length value"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400, "invalid Content-Length"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400, "invalid Content-Length"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400, "invalid Content-Length"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, "larger than"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both Content-Length and Transfer-Encoding"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "does not end with chunked"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "not implemented"),
        ("PUT /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "invalid chunk size"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400, "invalid chunk size"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\n", 400, "invalid chunk size"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 400, "longer than its chunk size"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\rx", 400, "not followed by CRLF"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n", 413, "larger than"),
        ("PUT /x HTTP/1.1\r\nHost: h\r\nExpect: something-else\r\n\r\n", 417, "unsupported expectation"),
    ])
    func malformed(text: String, status: Int, message: String) throws {
        for split in [Int.max, 1] {
            let (_, err) = parseAll(text, split: split)
            let e = try #require(err, "\(text.debugDescription) split \(split)")
            #expect(e.status == status, "\(text.debugDescription)")
            #expect(e.message.contains(message), "\(e.message) for \(text.debugDescription)")
        }
    }

    @Test("a bare CR anywhere in the head is the error reported, whatever else is wrong", arguments: [
        "G(T /x HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",          // invalid method
        "BREW /x HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",         // unknown method
        "GET /x HTTP/2.0\r\nHost: h\r\nX-A: a\rb\r\n\r\n",          // unsupported version
        "GET /x HTTP/1.1\r\nBad Name: v\r\nX-A: a\rb\r\n\r\n",      // invalid field name first
        "GET /x HTTP/1.1\r\nX-A: a\rb\r\n\r\n",                     // no Host
        "GET /x?a=%zz HTTP/1.1\r\nHost: h\r\n\r\r\n\r\n",            // bad query, CR alone on a line
    ])
    func bareCRFirst(text: String) throws {
        for split in [Int.max, 1] {
            let e = try #require(parseAll(text, split: split).error)
            #expect(e == HTTPParseError(status: 400, message: "a bare CR in the request head"), "\(text.debugDescription)")
        }
    }

    @Test("the methods read are exactly the known ones, case-sensitive")
    func methods() throws {
        for m in HTTPRequestParser.knownMethods {
            let (rs, err) = parseAll("\(m) /x HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(err == nil)
            #expect(rs.first?.method == m)
        }
        for m in ["get", "Get", "GETS", "GE", "PUTT", "OPTION", "DELETES", "TRACE"] {
            #expect(parseAll("\(m) /x HTTP/1.1\r\nHost: h\r\n\r\n").error?.status == 501, "\(m)")
        }
    }

    @Test("the fields that frame a request are known in any case")
    func framingFieldsAnyCase() throws {
        let (rs, err) = parseAll("PUT /x HTTP/1.1\r\nHOST: h\r\nCONTENT-length: 3\r\nCONNECTION: Close\r\n\r\nabc")
        #expect(err == nil)
        let r = try #require(rs.first)
        #expect(bodyText(r) == "abc")
        #expect(!r.keepAlive)
        #expect(r.header("Host") == "h")
        #expect(parseAll("GET /x HTTP/1.1\r\nHost: a\r\nhOsT: b\r\n\r\n").error?.message.contains("more than one Host") == true)
        let chunked = parseAll("PUT /x HTTP/1.1\r\nHost: h\r\nTRANSFER-ENCODING: Chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n")
        #expect(chunked.error == nil)
        #expect(chunked.requests.first.map(bodyText) == "z")
        var p = HTTPRequestParser()
        p.append(Array("PUT /x HTTP/1.1\r\nHost: h\r\nEXPECT: 100-Continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(try p.next() == nil)
        #expect(p.needsContinue)
        // A name that only shares a length with one of them is just a field.
        let same = parseAll("GET /x HTTP/1.1\r\nHost: h\r\nhosx: 1\r\nexpecx: nope\r\nconnectiox: close\r\n" +
                            "content-lengtx: zz\r\ntransfer-encodinx: gzip\r\n\r\n")
        #expect(same.error == nil)
        #expect(same.requests.first?.keepAlive == true)
    }

    @Test("fields are looked up by name in any case, lengths and all")
    func headerLookup() throws {
        let (rs, _) = parseAll("GET /x HTTP/1.1\r\nHost: h\r\nAccept: a\r\nX-Long-Name: 1\r\naccept: b\r\nAcceptX: c\r\n\r\n")
        let r = try #require(rs.first)
        #expect(r.header("accept") == "a")
        #expect(r.header("ACCEPT") == "a")
        #expect(r.headerValues("Accept") == ["a", "b"])
        #expect(r.header("x-long-name") == "1")
        #expect(r.header("x-long-nam") == nil)
        #expect(r.header("acceptx") == "c")
        #expect(r.header("") == nil)
        #expect(r.headerValues("nope").isEmpty)
    }

    @Test("path and query are cut from the target's bytes")
    func pathAndQuery() throws {
        let (rs, err) = parseAll("GET /a%20b.json?x=%41&&y&z=1=2 HTTP/1.1\r\nHost: h\r\n\r\nGET /? HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(err == nil)
        let r = try #require(rs.first)
        #expect(r.target == "/a%20b.json?x=%41&&y&z=1=2")
        #expect(r.rawPath == "/a%20b.json")
        #expect(r.query.map(\.name) == ["x", "y", "z"])
        #expect(r.query.map(\.value) == ["A", "", "1=2"])
        #expect(rs.last?.rawPath == "/")
        #expect(rs.last?.query.isEmpty == true)
    }

    @Test("an error sticks: later calls throw the same error")
    func sticky() throws {
        var p = HTTPRequestParser()
        p.append(Array("BAD\r\n\r\n".utf8))
        #expect(throws: HTTPParseError.self) { try p.next() }
        p.append(Array(simple.utf8))
        #expect(throws: HTTPParseError(status: 400, message: "a malformed request line")) { try p.next() }
    }

    @Test("a head over the limit is 431 before its end arrives")
    func headLimit() throws {
        let limits = HTTPLimits(maxHeaderBytes: 100, maxBodyBytes: 1000)
        let long = "GET /x HTTP/1.1\r\nHost: h\r\nX-Pad: " + String(repeating: "a", count: 200)
        let (_, err) = parseAll(long, limits: limits)
        #expect(err?.status == 431)
        // Exactly at the limit is fine.
        let head = "GET /x HTTP/1.1\r\nHost: h\r\n"
        let pad = 100 - head.utf8.count - "X: \r\n\r\n".utf8.count
        let fits = head + "X: " + String(repeating: "b", count: pad) + "\r\n\r\n"
        #expect(fits.utf8.count == 100)
        #expect(parseAll(fits, limits: limits).requests.count == 1)
        #expect(parseAll(fits.replacingOccurrences("X: ", "X: c"), limits: limits).error?.status == 431)
        // The default is 64 KiB.
        let big = "GET /x HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n"
        #expect(parseAll(big, split: 4096).error?.status == 431)
    }

    @Test("trailers over the limit are 431")
    func trailerLimit() throws {
        let limits = HTTPLimits(maxHeaderBytes: 100, maxBodyBytes: 1000)
        let text = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "a", count: 200)
        #expect(parseAll(text, limits: limits).error?.status == 431)
    }

    @Test("a body over the limit is 413 as soon as its length is known")
    func bodyLimit() throws {
        let limits = HTTPLimits(maxHeaderBytes: 1000, maxBodyBytes: 10)
        var p = HTTPRequestParser(limits: limits)
        p.append(Array("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n".utf8))
        #expect(throws: HTTPParseError.self) { try p.next() }
        #expect(parseAll("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits).requests.count == 1)
        // Chunked: refused at the chunk size that passes the limit, before its data.
        var q = HTTPRequestParser(limits: limits)
        q.append(Array("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n".utf8))
        do {
            _ = try q.next()
            Issue.record("expected 413")
        } catch let e as HTTPParseError {
            #expect(e.status == 413)
        }
        let ok = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n"
        #expect(parseAll(ok, limits: limits).requests.first.map(bodyText) == "0123456789")
    }

    @Test("a huge declared length is not allocated up front")
    func noPreallocation() throws {
        var p = HTTPRequestParser()
        p.append(Array("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 200000000\r\n\r\nab".utf8))
        #expect(try p.next() == nil)
        #expect(p.body.capacity <= 1 << 21)
        #expect(p.hasPartialRequest)
    }

    @Test("a chunk-size line without an end is bounded")
    func chunkLineLimit() throws {
        let text = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 5000)
        #expect(parseAll(text).error?.status == 400)
    }

    @Test("a body with a GET is read and kept")
    func getWithBody() throws {
        let (rs, _) = parseAll("GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /y HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(rs.map(\.rawPath) == ["/x", "/y"])
        #expect(rs.first.map(bodyText) == "abc")
    }

    @Test("the convenience initialiser splits the target and lowercases header names")
    func initialiser() {
        let r = HTTPRequest(method: "GET", target: "/a.json?x=%22y%22", headers: [("Host", "h"), ("Connection", "close")])
        #expect(r.rawPath == "/a.json")
        #expect(r.queryValue("x") == "\"y\"")
        #expect(r.header("HOST") == "h")
        #expect(!r.keepAlive)
    }
}

extension String {
    func replacingOccurrences(_ a: String, _ b: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: a) {
            out += rest[..<r.lowerBound] + b
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
