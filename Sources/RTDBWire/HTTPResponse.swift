import RTDBCore

/// An HTTP/1.1 response to serialize. Headers are sent in the order given; `serialize` adds the
/// framing (`Content-Length`) and `Connection: close` itself, so callers never set them unless
/// they mean to override (a HEAD answer sets `Content-Length` to the length of the body it omits).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static let jsonContentType = "application/json; charset=utf-8"

    /// A JSON body (`text` is already JSON) with `Content-Type: application/json; charset=utf-8`.
    public static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders(), body: Array(text.utf8))
    }

    /// `json` for a body already in bytes.
    public static func json(_ status: Int, bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: jsonHeaders(), body: bytes)
    }

    /// The content type, with room for the few fields a server adds to nearly every answer
    /// (CORS, ETag, …) without growing the array again.
    private static func jsonHeaders() -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(4)
        headers.append(("Content-Type", jsonContentType))
        return headers
    }

    /// Firebase's error shape: `{"error":"…"}` with the message JSON-escaped.
    public static func error(_ status: Int, _ message: String) -> HTTPResponse {
        var out: [UInt8] = Array("{\"error\":".utf8)
        JSONWriter.appendString(message, to: &out)
        out.append(UInt8(ascii: "}"))
        return json(status, bytes: out)
    }

    /// The interim answer to `Expect: 100-continue`.
    public static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The first header named `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let lower = ASCII.lowercased(name)
        for h in headers where ASCII.lowercased(h.name) == lower { return h.value }
        return nil
    }

    /// Statuses whose responses never carry a body (RFC 9110 §6.4.1).
    public static func bodyless(_ status: Int) -> Bool {
        status < 200 || status == 204 || status == 304
    }

    /// Status line, headers, `Content-Length` (omitted for 1xx/204/304, or when the headers set
    /// one), `Connection: close` when `!keepAlive` (or `Connection: keep-alive` for an HTTP/1.0
    /// client that may keep the connection), the blank line, then the body (none for 1xx/204/304).
    public func serialize(keepAlive: Bool, minorVersion: Int = 1) -> [UInt8] {
        write(keepAlive: keepAlive, minorVersion: minorVersion, withBody: !HTTPResponse.bodyless(status), reserving: 0)
    }

    /// The status line and header fields of `serialize`, up to the blank line: a server that
    /// sends a huge body after it need not copy the body behind the head.
    public func serializeHead(keepAlive: Bool, minorVersion: Int = 1, reserving extra: Int = 0) -> [UInt8] {
        write(keepAlive: keepAlive, minorVersion: minorVersion, withBody: false, reserving: extra)
    }

    /// Every answer goes through here, so it measures the head first and writes it, and the
    /// body after it, into one array of exactly that size: no growth, no generic appends.
    private func write(keepAlive: Bool, minorVersion: Int, withBody: Bool, reserving extra: Int) -> [UInt8] {
        let reason = HTTPResponse.reasonPhrase(status)
        var hasLength = false
        var hasConnection = false
        var size = 9 + HeadWriter.digits(status) + 1 + reason.utf8CodeUnitCount + 2
        for h in headers {
            let n = h.name.utf8.count
            // The lengths first: comparing the letters of every name would cost more.
            if n == 14 && ASCII.equals(h.name, lowercase: "content-length") { hasLength = true }
            if n == 10 && ASCII.equals(h.name, lowercase: "connection") { hasConnection = true }
            size += n + 2 + h.value.utf8.count + 2
        }
        let writesLength = !HTTPResponse.bodyless(status) && !hasLength
        if writesLength { size += 16 + HeadWriter.digits(body.count) + 2 }
        let connection: StaticString? = hasConnection ? nil
            : !keepAlive ? "Connection: close\r\n"
            : minorVersion == 0 ? "Connection: keep-alive\r\n" : nil
        if let connection { size += connection.utf8CodeUnitCount }
        size += 2
        let total = size + (withBody ? body.count : 0)
        return [UInt8](unsafeUninitializedCapacity: total + extra) { buffer, count in
            var w = HeadWriter(at: buffer.baseAddress!)
            w.put("HTTP/1.1 " as StaticString)
            w.put(status)
            w.put(" " as StaticString)
            w.put(reason)
            w.put("\r\n" as StaticString)
            for h in headers {
                w.put(h.name)
                w.put(": " as StaticString)
                w.put(h.value)
                w.put("\r\n" as StaticString)
            }
            if writesLength {
                w.put("Content-Length: " as StaticString)
                w.put(body.count)
                w.put("\r\n" as StaticString)
            }
            if let connection { w.put(connection) }
            w.put("\r\n" as StaticString)
            if withBody { body.withUnsafeBufferPointer { w.put($0) } }
            count = w.at - buffer.baseAddress!
        }
    }

    /// The reason phrase for a status (RFC 9110's, "Unknown" for others).
    public static func reason(_ status: Int) -> String {
        reasonPhrase(status).description
    }

    static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Unknown"
        }
    }
}

/// Writes the pieces of a response into memory already sized for them (`HTTPResponse.write`
/// measures first): plain copies, no bounds to grow.
struct HeadWriter {
    private(set) var at: UnsafeMutablePointer<UInt8>

    init(at start: UnsafeMutablePointer<UInt8>) { at = start }

    mutating func put(_ s: StaticString) {
        at.initialize(from: s.utf8Start, count: s.utf8CodeUnitCount)
        at += s.utf8CodeUnitCount
    }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let from = bytes.baseAddress else { return }
        at.initialize(from: from, count: bytes.count)
        at += bytes.count
    }

    mutating func put(_ s: String) {
        var s = s
        s.withUTF8 { put($0) }
    }

    /// A decimal number, `digits(n)` bytes.
    mutating func put(_ n: Int) {
        if n < 0 { put("-" as StaticString) }
        var m = n.magnitude
        let count = HeadWriter.digits(n) - (n < 0 ? 1 : 0)
        var i = count
        repeat {
            i -= 1
            at[i] = UInt8(ascii: "0") + UInt8(m % 10)
            m /= 10
        } while i > 0
        at += count
    }

    /// How many bytes `put(n)` writes.
    static func digits(_ n: Int) -> Int {
        var m = n.magnitude, count = n < 0 ? 2 : 1
        while m >= 10 { m /= 10; count += 1 }
        return count
    }
}

/// Server-Sent Events framing (the WHATWG event-stream format) for REST streaming.
public enum SSE {
    /// "event: NAME\ndata: DATA\n\n"; DATA containing line breaks (LF, CR or CRLF) is split
    /// over several `data:` lines, which a client joins back with LF.
    public static func frame(event: String, data: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(event.utf8.count + data.utf8.count + 16)
        out.append(contentsOf: "event: ".utf8)
        out.append(contentsOf: event.utf8)
        out.append(0x0A)
        out.append(contentsOf: "data: ".utf8)
        let d = Array(data.utf8)
        var i = 0
        while i < d.count {
            let b = d[i]
            if b == 0x0D || b == 0x0A {
                if b == 0x0D, i + 1 < d.count, d[i + 1] == 0x0A { i += 1 }
                out.append(0x0A)
                out.append(contentsOf: "data: ".utf8)
            } else {
                out.append(b)
            }
            i += 1
        }
        out.append(0x0A)
        out.append(0x0A)
        return out
    }

    /// The response head of a stream: 200, `Content-Type: text/event-stream`, `Cache-Control:
    /// no-cache`, no `Content-Length` (the stream ends when the connection closes).
    public static func head() -> [UInt8] {
        Array(("HTTP/1.1 200 OK\r\n" +
               "Content-Type: text/event-stream\r\n" +
               "Cache-Control: no-cache\r\n" +
               "Access-Control-Allow-Origin: *\r\n\r\n").utf8)
    }
}
