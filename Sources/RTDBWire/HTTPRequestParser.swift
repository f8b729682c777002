/// An incremental, bounded HTTP/1.x request reader (RFC 9112).
///
/// Invariant: `buffer[start...]` holds the bytes received but not yet consumed; everything before
/// `start` belongs to requests already returned (or to the head and body bytes of the request
/// being read, which are kept in `pending` and `body`). Bytes may arrive in any split, one at a
/// time or several pipelined requests at once; `next()` returns requests in order. Memory is
/// bounded by the limits: a head (request line and fields) longer than `maxHeaderBytes` is 431,
/// a body longer than `maxBodyBytes` is 413 as soon as its length is known, before it is read.
///
/// Decisions where the RFC leaves a choice:
/// * a bare LF ends a line like CRLF (RFC 9112 §2.2 allows it); a CR anywhere else in the head is
///   400, as is obsolete line folding (a field line starting with a space or tab);
/// * empty lines before a request line are skipped;
/// * more than one Content-Length field (even with equal values), a list value, or
///   Content-Length together with Transfer-Encoding is 400 (the framing would be ambiguous);
/// * Transfer-Encoding must be exactly `chunked` (other codings are 501); chunk extensions are
///   ignored and trailer fields are kept apart in `trailers`;
/// * an HTTP/1.1 request needs exactly one Host field;
/// * `Expect: 100-continue` is reported through `needsContinue` (answer it with
///   `HTTPResponse.continueHead` and call `continueSent()`); any other expectation is 417;
/// * methods other than GET HEAD POST PUT PATCH DELETE OPTIONS are 501.
///
/// After an error every later `next()` throws the same error: the connection must be answered
/// (`error.response`) and closed, since where the next request would start is unknown.
public struct HTTPRequestParser: Sendable {
    public let limits: HTTPLimits

    /// Methods this parser accepts; others are 501.
    public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    enum State {
        case head
        case fixed(remaining: Int)
        case chunked(ChunkedDecoder)
    }

    enum ContinueState { case none, needed, sent }

    var buffer: [UInt8] = []
    var start = 0
    /// Where the search for the end of the head (or trailer section) resumes, relative to `start`.
    var scanFrom = 0
    var state = State.head
    var pending: HTTPRequest?
    var body: [UInt8] = []
    var failure: HTTPParseError?
    var continueState = ContinueState.none

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Adds received bytes. Cheap: parsing happens in `next()`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        appendReceived(bytes, to: &buffer, consumedUpTo: &start)
    }

    /// `append` for a byte array (tests, callers holding arrays).
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete request, nil when more bytes are needed; throws on malformed input
    /// (after which the connection is answered with the error and closed).
    public mutating func next() throws -> HTTPRequest? {
        if let failure { throw failure }
        do {
            let r = try step()
            compact()
            return r
        } catch let e as HTTPParseError {
            failure = e
            throw e
        }
    }

    /// Some bytes of an unfinished request are buffered (a head or body is partly received).
    public var hasPartialRequest: Bool {
        if case .head = state { return start < buffer.count }
        return true
    }

    /// True when the request being read asked for `Expect: 100-continue`, its body has not
    /// started to arrive and no interim answer was sent yet: the server should send
    /// `HTTPResponse.continueHead` now (then call `continueSent()`), or answer with a final
    /// status and close instead.
    public var needsContinue: Bool { continueState == .needed }

    /// Records that `100 Continue` was sent for the request being read.
    public mutating func continueSent() {
        if continueState == .needed { continueState = .sent }
    }

    /// The head of the request whose body is still arriving (nil between requests): lets a
    /// server refuse a request (say 401) before its body is sent.
    public var pendingHead: HTTPRequest? { pending }

    /// The body bytes the request being read holds or will hold: its declared Content-Length
    /// (what the reader reserves once the body really arrives), or for a chunked body what has
    /// been decoded so far; 0 between requests. Lets a server bound bodies across connections.
    public var pendingBodyBytes: Int {
        switch state {
        case .head: return 0
        case .fixed(let remaining): return body.count + remaining
        case .chunked: return body.count
        }
    }

    // MARK: steps

    private mutating func step() throws -> HTTPRequest? {
        while true {
            switch state {
            case .head:
                // Empty lines before a request line are skipped (RFC 9112 §2.2).
                while start < buffer.count, buffer[start] == 0x0D || buffer[start] == 0x0A {
                    start += 1
                    scanFrom = 0
                }
                guard let end = try findBlankLine(limit: limits.maxHeaderBytes, what: "request head") else {
                    return nil
                }
                let (request, framing) = try buffer.withUnsafeBufferPointer { try HTTPRequestParser.parseHead($0[start..<end], limits: limits) }
                start = end
                scanFrom = 0
                if framing == .none || framing == .length(0) {
                    // No body (most requests): the request goes out as parsed, never parked in
                    // `pending` (each move of it there and back costs a copy).
                    continueState = .none
                    return request
                }
                pending = request
                body = []
                continueState = request.expectsContinue ? .needed : .none
                switch framing {
                case .none:
                    return finish()
                case .length(let n):
                    body.reserveCapacity(min(n, 1 << 20))
                    state = .fixed(remaining: n)
                case .chunked:
                    state = .chunked(ChunkedDecoder(maxBodyBytes: limits.maxBodyBytes, maxTrailerBytes: limits.maxHeaderBytes))
                }
            case .fixed(let remaining):
                // Once a large body is really arriving, its whole declared length is reserved:
                // growing by doubling would copy it again and again and, at the last step, hold
                // up to twice its size. (Not before: a length alone, never sent, costs nothing.)
                if remaining > 0 && body.count >= 1 << 20 && body.capacity < body.count + remaining {
                    body.reserveCapacity(body.count + remaining)
                }
                let n = takeBody(remaining)
                if n == remaining { return finish() }
                state = .fixed(remaining: remaining - n)
                return nil
            case .chunked(var decoder):
                let before = body.count
                let progress: ChunkedDecoder.Progress
                do { progress = try decoder.decode(buffer, from: &start, into: &body) } catch { throw HTTPRequestParser.error(error, limits) }
                if body.count > before && continueState == .needed { continueState = .none }   // the client did not wait
                state = .chunked(decoder)
                guard case .complete(let trailers) = progress else { return nil }
                if !trailers.isEmpty {
                    pending?.trailers = try buffer.withUnsafeBufferPointer { all in
                        try HTTPRequestParser.lines(all[trailers]).map { try HTTPRequestParser.field($0) }
                    }
                }
                scanFrom = 0
                return finish()
            }
        }
    }

    /// Copies up to `wanted` body bytes out of the buffer; returns how many.
    private mutating func takeBody(_ wanted: Int) -> Int {
        let n = min(wanted, buffer.count - start)
        if n > 0 {
            body.append(contentsOf: buffer[start..<(start + n)])
            start += n
            if continueState == .needed { continueState = .none }   // the client did not wait
        }
        return n
    }

    private mutating func finish() -> HTTPRequest? {
        // Moved out, not copied: `pending` and `body` are left empty.
        var taken: HTTPRequest? = nil
        swap(&taken, &pending)
        guard var r = taken else { return nil }
        swap(&r.body, &body)
        state = .head
        scanFrom = 0
        continueState = .none
        return r
    }

    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
        } else if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
    }

    /// The end (exclusive) of the first blank line from `start`, i.e. of a field section,
    /// or nil when it has not arrived. Throws 431 once more than `limit` bytes are waiting.
    private mutating func findBlankLine(limit: Int, what: String) throws -> Int? {
        let count = buffer.count
        // Read through a pointer: the checked subscript of the array cost more than the test.
        let (found, i) = buffer.withUnsafeBufferPointer { b -> (Int?, Int) in
            var i = start + scanFrom
            while i < count {
                if b[i] == 0x0A {
                    if i + 1 >= count { break }
                    if b[i + 1] == 0x0A { return (i + 2, i) }
                    if b[i + 1] == 0x0D {
                        if i + 2 >= count { break }
                        if b[i + 2] == 0x0A { return (i + 3, i) }
                    }
                }
                i += 1
            }
            return (nil, i)
        }
        if let found { return try within(found, limit, what) }
        scanFrom = i - start
        if count - start > limit {
            throw HTTPParseError(status: 431, message: "the \(what) is longer than \(limit) bytes")
        }
        return nil
    }

    private func within(_ end: Int, _ limit: Int, _ what: String) throws -> Int {
        if end - start > limit {
            throw HTTPParseError(status: 431, message: "the \(what) is longer than \(limit) bytes")
        }
        return end
    }

    /// A chunked body's failure as the answer to send (413 for the size limit, 431 for the
    /// trailer limit, 400 otherwise).
    static func error(_ f: ChunkedDecoder.Failure, _ limits: HTTPLimits) -> HTTPParseError {
        switch f {
        case .sizeLineTooLong(let n): return HTTPParseError(status: 400, message: "a chunk-size line is longer than \(n) bytes")
        case .invalidSize: return HTTPParseError(status: 400, message: "invalid chunk size")
        case .invalidExtension: return HTTPParseError(status: 400, message: "invalid character in a chunk extension")
        case .bodyTooLarge(let n): return HTTPParseError(status: 413, message: "the body is larger than \(n) bytes")
        case .dataNotFollowedByCRLF: return HTTPParseError(status: 400, message: "chunk data is not followed by CRLF")
        case .dataLongerThanSize: return HTTPParseError(status: 400, message: "chunk data is longer than its chunk size")
        case .trailersTooLong(let n): return HTTPParseError(status: 431, message: "the trailer section is longer than \(n) bytes")
        }
    }

    // MARK: the head

    /// A piece of the buffer, read in place (indices are the buffer's, as with an ArraySlice).
    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// Splits a field section into lines (LF or CRLF ends a line), dropping the terminating
    /// blank line. A CR that does not end a line is an error.
    static func lines(_ bytes: Bytes) throws -> [Bytes] {
        var out: [Bytes] = []
        out.reserveCapacity(8)
        let base = bytes.base
        var lineStart = bytes.startIndex
        var i = lineStart
        while i < bytes.endIndex {
            if base[i] == 0x0A {
                var end = i
                if end > lineStart && base[end - 1] == 0x0D { end -= 1 }
                var j = lineStart
                while j < end {
                    if base[j] == 0x0D { throw HTTPParseError(status: 400, message: "a bare CR in the request head") }
                    j += 1
                }
                if end > lineStart { out.append(base[lineStart..<end]) }
                lineStart = i + 1
            }
            i += 1
        }
        return out
    }

    /// A short printable form of protocol bytes for error messages.
    static func show<C: Collection<UInt8>>(_ bytes: C) -> String {
        var s = "\""
        for b in bytes.prefix(64) {
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                s.unicodeScalars.append(UnicodeScalar(b))
            } else {
                s += "\\x"
                s.unicodeScalars.append(UnicodeScalar(PercentCoding.hexDigits[Int(b >> 4)]))
                s.unicodeScalars.append(UnicodeScalar(PercentCoding.hexDigits[Int(b & 15)]))
            }
        }
        return s + (bytes.count > 64 ? "…\"" : "\"")
    }

    /// `HTTP/1.0` → 0, `HTTP/1.1` (or a later 1.x) → 1; another major version is 505.
    static func version(_ v: Bytes) throws -> Int {
        let a = v.startIndex
        guard v.count == 8, v[a] == 0x48, v[a + 1] == 0x54, v[a + 2] == 0x54, v[a + 3] == 0x50, v[a + 4] == 0x2F,
              v[a + 5] >= 0x30 && v[a + 5] <= 0x39, v[a + 6] == 0x2E, v[a + 7] >= 0x30 && v[a + 7] <= 0x39 else {
            throw HTTPParseError(status: 400, message: "invalid HTTP version \(show(v))")
        }
        if v[a + 5] != 0x31 {
            throw HTTPParseError(status: 505, message: "HTTP version \(show(v)) is not supported")
        }
        return v[a + 7] == 0x30 ? 0 : 1
    }
}

/// Adds received bytes to a parser's buffer whose bytes before `start` are consumed; once all
/// of it is consumed it is emptied first (its capacity kept), so it never grows with the
/// connection's lifetime.
func appendReceived(_ bytes: UnsafeRawBufferPointer, to buffer: inout [UInt8], consumedUpTo start: inout Int) {
    if start > 0 && start == buffer.count {
        buffer.removeAll(keepingCapacity: true)
        start = 0
    }
    buffer.append(contentsOf: bytes)
}
