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
        HTTPResponse(status: status, headers: [("Content-Type", jsonContentType)], body: Array(text.utf8))
    }

    /// `json` for a body already in bytes.
    public static func json(_ status: Int, bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", jsonContentType)], body: bytes)
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
        var out = serializeHead(keepAlive: keepAlive, minorVersion: minorVersion, reserving: body.count)
        if !HTTPResponse.bodyless(status) { out.append(contentsOf: body) }
        return out
    }

    /// The status line and header fields of `serialize`, up to the blank line: a server that
    /// sends a huge body after it need not copy the body behind the head.
    public func serializeHead(keepAlive: Bool, minorVersion: Int = 1, reserving extra: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + headers.count * 32 + extra)
        JSONWriter.append("HTTP/1.1 " as StaticString, to: &out)
        JSONWriter.appendInt(Int64(status), to: &out)
        out.append(0x20)
        append(HTTPResponse.reason(status), &out)
        JSONWriter.append("\r\n" as StaticString, to: &out)
        var hasLength = false
        var hasConnection = false
        for h in headers {
            if ASCII.equals(h.name, lowercase: "content-length") { hasLength = true }
            if ASCII.equals(h.name, lowercase: "connection") { hasConnection = true }
            append(h.name, &out)
            JSONWriter.append(": " as StaticString, to: &out)
            append(h.value, &out)
            JSONWriter.append("\r\n" as StaticString, to: &out)
        }
        let bodyless = HTTPResponse.bodyless(status)
        if !bodyless && !hasLength {
            JSONWriter.append("Content-Length: " as StaticString, to: &out)
            JSONWriter.appendInt(Int64(body.count), to: &out)
            JSONWriter.append("\r\n" as StaticString, to: &out)
        }
        if !hasConnection {
            if !keepAlive {
                JSONWriter.append("Connection: close\r\n" as StaticString, to: &out)
            } else if minorVersion == 0 {
                JSONWriter.append("Connection: keep-alive\r\n" as StaticString, to: &out)
            }
        }
        JSONWriter.append("\r\n" as StaticString, to: &out)
        return out
    }

    @inline(__always) private func append(_ s: String, _ out: inout [UInt8]) {
        JSONWriter.append(s, to: &out)
    }

    /// The reason phrase for a status (RFC 9110's, "Unknown" for others).
    public static func reason(_ status: Int) -> String {
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
