/// The head of an HTTP/1.x response as a client reads it: header names lowercased, values
/// trimmed, repeated fields kept apart.
public struct HTTPResponseHead: Sendable {
    public var status: Int
    public var reason: String
    public var minorVersion: Int
    public var headers: [(name: String, value: String)]

    public init(status: Int, reason: String = "", minorVersion: Int = 1, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.reason = reason
        self.minorVersion = minorVersion
        self.headers = headers.map { (ASCII.lowercased($0.name), $0.value) }
    }

    /// The first header named `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        let lower = ASCII.lowercased(name)
        for h in headers where h.name == lower { return h.value }
        return nil
    }

    /// Whether the server lets the connection carry another request: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        HTTPRequest.keepAlive(headers: headers, minorVersion: minorVersion)
    }
}

/// A complete response: head and decoded body.
public struct HTTPClientResponse: Sendable {
    public var head: HTTPResponseHead
    public var body: [UInt8]
    public var status: Int { head.status }
    public func header(_ name: String) -> String? { head.header(name) }
    public init(head: HTTPResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }
}

/// Why a response could not be read (the connection is then unusable).
public struct HTTPResponseParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An incremental, bounded HTTP/1.x response reader for a client (RFC 9112 §4).
///
/// Invariant: `buffer[start...]` holds received bytes not yet consumed. One response is read at
/// a time: `head(forMethod:)` returns its head once complete (skipping 1xx interim answers),
/// then `takeBody()` hands out the decoded body bytes as they arrive (so a Server-Sent Events
/// stream can be read while it lasts) until `bodyComplete`; `reset()` then starts the next
/// response on the same connection, keeping any bytes already received. The body is framed by,
/// in this order: no body (HEAD, 1xx, 204, 304), `Transfer-Encoding: chunked`,
/// `Content-Length`, else it lasts until the connection closes (`endOfInput()`).
/// A head longer than `maxHeaderBytes` or a body longer than `maxBodyBytes` is an error, as is
/// malformed framing; after an error the connection must be closed.
public struct HTTPResponseParser {
    public let maxHeaderBytes: Int
    public let maxBodyBytes: Int

    enum State: Equatable {
        case head
        case none
        case fixed(remaining: Int)
        case untilClose
        case chunked(ChunkedDecoder)
        case done
    }

    var buffer: [UInt8] = []
    var start = 0
    var state = State.head
    var bodyBytes = 0
    var decoded: [UInt8] = []

    public init(maxHeaderBytes: Int = 65_536, maxBodyBytes: Int = 268_435_456 + 1_048_576) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        appendReceived(bytes, to: &buffer, consumedUpTo: &start)
    }

    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Bytes received beyond the current response (or before any head).
    public var hasUnreadBytes: Bool { start < buffer.count }

    /// True once the whole body of the current response has been received.
    public var bodyComplete: Bool { state == .done }

    /// Starts reading the next response on the same connection.
    public mutating func reset() {
        state = .head
        bodyBytes = 0
        decoded = []
        compact()
    }

    /// The head of the current response once it has fully arrived (nil while more bytes are
    /// needed). `method` is the request's method: the answer to HEAD has no body.
    public mutating func head(forMethod method: String) throws -> HTTPResponseHead? {
        guard state == .head else { throw HTTPResponseParseError("the response head was already read") }
        while true {
            guard let end = try findBlankLine(limit: maxHeaderBytes, what: "response head") else { return nil }
            let head = try HTTPResponseParser.parseHead(buffer[start..<end])
            start = end
            if head.status >= 100 && head.status < 200 && head.status != 101 { continue }   // interim answer
            state = try framing(head, method: method)
            try advance()
            return head
        }
    }

    /// The decoded body bytes received so far and not yet taken.
    public mutating func takeBody() throws -> [UInt8] {
        try advance()
        defer { decoded = [] }
        compact()
        return decoded
    }

    /// The connection has closed: a body that lasts until the close is now complete; any other
    /// unfinished response is truncated (an error).
    public mutating func endOfInput() throws {
        switch state {
        case .untilClose: state = .done
        case .done: break
        case .head where start == buffer.count: throw HTTPResponseParseError("the connection closed before a response arrived")
        default: throw HTTPResponseParseError("the connection closed in the middle of a response")
        }
    }

    /// A whole response in one go (head and complete body), nil while bytes are missing.
    /// For a body that lasts until the close, call `endOfInput()` first.
    public mutating func response(forMethod method: String, pendingHead: inout HTTPResponseHead?, body: inout [UInt8]) throws -> HTTPClientResponse? {
        if pendingHead == nil {
            guard let h = try head(forMethod: method) else { return nil }
            pendingHead = h
        }
        body.append(contentsOf: try takeBody())
        guard bodyComplete, let h = pendingHead else { return nil }
        return HTTPClientResponse(head: h, body: body)
    }

    // MARK: framing

    func framing(_ head: HTTPResponseHead, method: String) throws -> State {
        if method == "HEAD" || head.status == 204 || head.status == 304 || head.status < 200 { return .done }
        let codings = head.headers.filter { $0.name == "transfer-encoding" }.map { ASCII.lowercased($0.value) }
        if !codings.isEmpty {
            let last = codings.joined(separator: ",").split(separator: ",").last.map { ASCII.trimmed(String($0)) }
            guard last == "chunked" else {
                return .untilClose   // RFC 9112 §6.3: not chunked last → read until close
            }
            // A stream's body may last for days: only each chunk is bounded, not the total.
            return .chunked(ChunkedDecoder(maxBodyBytes: Int.max, maxTrailerBytes: maxHeaderBytes))
        }
        let lengths = head.headers.filter { $0.name == "content-length" }.map(\.value)
        if let first = lengths.first {
            let values = Set(lengths.flatMap { $0.split(separator: ",").map { ASCII.trimmed(String($0)) } })
            guard values.count == 1, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 || $0 == 0x2C || $0 == 0x20 }),
                  let only = values.first, let n = Int(only), !only.isEmpty else {
                throw HTTPResponseParseError("invalid Content-Length \(first)")
            }
            if n > maxBodyBytes { throw HTTPResponseParseError("response body of \(n) bytes is over the limit of \(maxBodyBytes)") }
            return n == 0 ? .done : .fixed(remaining: n)
        }
        return .untilClose
    }

    mutating func advance() throws {
        while true {
            switch state {
            case .head, .none, .done:
                return
            case .fixed(let remaining):
                let n = take(remaining)
                state = n == remaining ? .done : .fixed(remaining: remaining - n)
                return
            case .untilClose:
                _ = take(buffer.count - start)
                return
            case .chunked(var decoder):
                let before = decoded.count
                let progress: ChunkedDecoder.Progress
                do { progress = try decoder.decode(buffer, from: &start, into: &decoded) } catch {
                    throw HTTPResponseParser.error(error)
                }
                bodyBytes += decoded.count - before
                state = .chunked(decoder)
                // Trailer fields are read past and dropped: nothing a client does needs them.
                if case .complete = progress { state = .done }
                return
            }
        }
    }

    /// A chunked body's failure as an error.
    static func error(_ f: ChunkedDecoder.Failure) -> HTTPResponseParseError {
        switch f {
        case .sizeLineTooLong: return HTTPResponseParseError("chunk size line is too long")
        case .invalidSize: return HTTPResponseParseError("invalid chunk size")
        case .invalidExtension: return HTTPResponseParseError("invalid character in a chunk extension")
        case .bodyTooLarge: return HTTPResponseParseError("chunk size is too large")
        case .dataNotFollowedByCRLF: return HTTPResponseParseError("chunk data is not followed by CRLF")
        case .dataLongerThanSize: return HTTPResponseParseError("chunk data is longer than its chunk size")
        case .trailersTooLong(let n): return HTTPResponseParseError("trailer section is longer than \(n) bytes")
        }
    }

    /// Moves up to `wanted` bytes into `decoded`; returns how many.
    mutating func take(_ wanted: Int) -> Int {
        let n = min(wanted, buffer.count - start)
        if n > 0 {
            decoded.append(contentsOf: buffer[start..<(start + n)])
            start += n
            bodyBytes += n
        }
        return n
    }

    mutating func compact() {
        if start > 0 && (start == buffer.count || start > 1 << 16) {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }

    /// The index just past the blank line that ends the head starting at `start` (LF or CRLF
    /// line ends), nil when it has not arrived.
    mutating func findBlankLine(limit: Int, what: String) throws -> Int? {
        var i = start
        var lineStart = start
        while i < buffer.count {
            if buffer[i] == 0x0A {
                let lineEnd = i > lineStart && buffer[i - 1] == 0x0D ? i - 1 : i
                if lineEnd == lineStart && lineStart > start { return i + 1 }
                lineStart = i + 1
            }
            i += 1
            if i - start > limit { throw HTTPResponseParseError("\(what) is longer than \(limit) bytes") }
        }
        if buffer.count - start > limit { throw HTTPResponseParseError("\(what) is longer than \(limit) bytes") }
        return nil
    }

    /// Status line and header fields (bytes without the final blank line).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws -> HTTPResponseHead {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        for i in bytes.indices where bytes[i] == 0x0A {
            var line = bytes[lineStart..<i]
            if line.last == 0x0D { line = line.dropLast() }
            if !line.isEmpty { lines.append(line) }
            lineStart = i + 1
        }
        guard let statusLine = lines.first else { throw HTTPResponseParseError("empty response head") }
        // HTTP/1.x SP 3DIGIT SP reason
        let s = Array(statusLine)
        guard s.count >= 12, Array(s[0..<7]) == Array("HTTP/1.".utf8), s[7] >= 0x30, s[7] <= 0x39, s[8] == 0x20,
              s[9...11].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), s.count == 12 || s[12] == 0x20 else {
            throw HTTPResponseParseError("invalid status line \(String(decoding: s.prefix(80), as: UTF8.self))")
        }
        let status = Int(s[9] - 0x30) * 100 + Int(s[10] - 0x30) * 10 + Int(s[11] - 0x30)
        let reason = s.count > 13 ? String(decoding: s[13...], as: UTF8.self) : ""
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy(ASCII.isTokenChar) else {
                throw HTTPResponseParseError("invalid header line")
            }
            let name = ASCII.lowercased(String(decoding: line[line.startIndex..<colon], as: UTF8.self))
            let value = ASCII.trimmed(String(decoding: line[(colon + 1)...], as: UTF8.self))
            headers.append((name, value))
        }
        return HTTPResponseHead(status: status, reason: reason, minorVersion: Int(s[7] - 0x30) == 0 ? 0 : 1, headers: headers)
    }
}

/// Serialises a client request: request line, `Host`, the caller's headers,
/// `Content-Length` when there is a body (or the method carries one), then the body.
public enum HTTPRequestWriter {
    public static func serialize(method: String, target: String, host: String,
                                 headers: [(name: String, value: String)], body: [UInt8]?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + target.utf8.count + (body?.count ?? 0))
        out.append(contentsOf: method.utf8)
        out.append(0x20)
        out.append(contentsOf: target.utf8)
        out.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        out.append(contentsOf: host.utf8)
        out.append(contentsOf: "\r\n".utf8)
        for h in headers {
            out.append(contentsOf: h.name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: h.value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        if let body {
            out.append(contentsOf: "Content-Length: ".utf8)
            out.append(contentsOf: String(body.count).utf8)
            out.append(contentsOf: "\r\n\r\n".utf8)
            out.append(contentsOf: body)
        } else {
            out.append(contentsOf: "\r\n".utf8)
        }
        return out
    }
}
