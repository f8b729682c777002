/// Reading a request head: one pass over its bytes, in place in the receive buffer.
///
/// Every request pays for this, so it makes no per-line arrays and no strings beyond the ones
/// `HTTPRequest` keeps: the method is one of a few literals, the fields that decide framing and
/// keep-alive (Host, Expect, Content-Length, Transfer-Encoding, Connection) are recognised by
/// their bytes as they are read, and the query is split from the target's bytes.
///
/// Error precedence is that of reading all lines first, then the request line, the fields, the
/// query, Host, Expect and the framing: a bare CR anywhere in the head wins over any other
/// error (see `parseHead`), the rest are checked in that order.
extension HTTPRequestParser {
    /// Parses one field line `name: value` (trailer fields use it as it is).
    static func field(_ line: Bytes) throws -> (name: String, value: String) {
        let (name, value) = try fieldParts(line)
        return (ASCII.lowercased(name), String(decoding: value, as: UTF8.self))
    }

    /// The name and the value (surrounding spaces and tabs removed) of a field line, checked.
    static func fieldParts(_ line: Bytes) throws -> (name: Bytes, value: Bytes) {
        let base = line.base
        let from = line.startIndex, to = line.endIndex
        if base[from] == 0x20 || base[from] == 0x09 {
            throw HTTPParseError(status: 400, message: "obsolete line folding in a header field")
        }
        var colon = from
        while colon < to && base[colon] != UInt8(ascii: ":") { colon += 1 }
        if colon == to {
            throw HTTPParseError(status: 400, message: "a header line without ':'")
        }
        let name = base[from..<colon]
        var i = from
        while i < colon {
            if !ASCII.isTokenChar(base[i]) { break }
            i += 1
        }
        if name.isEmpty || i < colon {
            throw HTTPParseError(status: 400, message: "invalid header field name \(show(name))")
        }
        var lo = colon + 1, hi = to
        while lo < hi, base[lo] == 0x20 || base[lo] == 0x09 { lo += 1 }
        while hi > lo, base[hi - 1] == 0x20 || base[hi - 1] == 0x09 { hi -= 1 }
        i = lo
        while i < hi {
            let b = base[i]
            if (b < 0x20 && b != 0x09) || b == 0x7F {
                throw HTTPParseError(status: 400, message: "invalid character in header field \(show(name))")
            }
            i += 1
        }
        return (name, base[lo..<hi])
    }

    /// The next non-empty line from `cursor` (LF or CRLF ends it, neither included), or nil at
    /// the end of the head. A CR left inside a line is refused by the checks of what it holds.
    @inline(__always)
    static func nextLine(_ bytes: Bytes, _ cursor: inout Int) -> Bytes? {
        let base = bytes.base, end = bytes.endIndex
        while cursor < end {
            let lineStart = cursor
            var i = cursor
            while i < end && base[i] != 0x0A { i += 1 }
            cursor = i + 1
            var lineEnd = i
            if lineEnd > lineStart && base[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if lineEnd > lineStart { return base[lineStart..<lineEnd] }
        }
        return nil
    }

    /// Whether the head holds a CR that does not end a line.
    static func hasBareCR(_ bytes: Bytes) -> Bool {
        let base = bytes.base
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if base[i] == 0x0D && (i + 1 == bytes.endIndex || base[i + 1] != 0x0A) { return true }
            i += 1
        }
        return false
    }

    static func parseHead(_ bytes: Bytes, limits: HTTPLimits) throws -> (request: HTTPRequest, framing: Framing) {
        do {
            return try parseLines(bytes, limits: limits)
        } catch let e as HTTPParseError {
            // Every line is whole before anything else is judged: a bare CR is the error to
            // report, whatever else is wrong. Looked for only on this (rare) path; a bare CR
            // always fails a line's own checks, so a head that parsed has none.
            if hasBareCR(bytes) { throw HTTPParseError(status: 400, message: "a bare CR in the request head") }
            throw e
        }
    }

    private static func parseLines(_ bytes: Bytes, limits: HTTPLimits) throws -> (request: HTTPRequest, framing: Framing) {
        var cursor = bytes.startIndex
        guard let requestLine = nextLine(bytes, &cursor) else {
            throw HTTPParseError(status: 400, message: "an empty request")
        }
        let base = bytes.base
        // Exactly two spaces: method, target, version.
        let lineEnd = requestLine.endIndex
        var space1 = requestLine.startIndex
        while space1 < lineEnd && base[space1] != 0x20 { space1 += 1 }
        var space2 = space1 + 1
        while space2 < lineEnd && base[space2] != 0x20 { space2 += 1 }
        var extra = space2 + 1
        while extra < lineEnd && base[extra] != 0x20 { extra += 1 }
        guard space2 < lineEnd, extra >= lineEnd else {
            throw HTTPParseError(status: 400, message: "a malformed request line")
        }
        let methodBytes = base[requestLine.startIndex..<space1], targetBytes = base[(space1 + 1)..<space2]
        let versionBytes = base[(space2 + 1)..<lineEnd]
        if methodBytes.isEmpty || !methodBytes.allSatisfy(ASCII.isTokenChar) {
            throw HTTPParseError(status: 400, message: "invalid method \(show(methodBytes))")
        }
        let minor = try version(versionBytes)
        if targetBytes.isEmpty || !targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) {
            throw HTTPParseError(status: 400, message: "invalid request target")
        }
        guard let method = knownMethod(methodBytes) else {
            throw HTTPParseError(status: 501, message: "method \(show(methodBytes)) is not implemented")
        }
        let target = String(decoding: targetBytes, as: UTF8.self)
        // Origin form ("/path"), which nearly every request uses, is known by its first byte.
        let origin = base[targetBytes.startIndex] == UInt8(ascii: "/")
        let absolute = !origin && {
            let lowerTarget = ASCII.lowercased(String(target.prefix(8)))
            return lowerTarget.hasPrefix("http://") || lowerTarget.hasPrefix("https://")
        }()
        if !(origin || absolute || (method == "OPTIONS" && target == "*")) {
            throw HTTPParseError(status: 400, message: "invalid request target")
        }

        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(8)
        var facts = FramingFacts()
        while let line = nextLine(bytes, &cursor) {
            let (name, valueBytes) = try fieldParts(line)
            let value = String(decoding: valueBytes, as: UTF8.self)
            if let known = FramingField(name) { facts.note(known, value) }
            headers.append((ASCII.lowercased(name), value))
        }

        let rawPath: String
        let query: [(name: String, value: String)]
        do {
            if origin {
                // Cut at `?` in the bytes: no second look at the target as a string.
                var q = targetBytes.startIndex
                while q < targetBytes.endIndex && base[q] != UInt8(ascii: "?") { q += 1 }
                if q == targetBytes.endIndex {
                    rawPath = target
                    query = []
                } else {
                    rawPath = String(decoding: base[targetBytes.startIndex..<q], as: UTF8.self)
                    query = try PercentCoding.parseQuery(bytes: UnsafeBufferPointer(rebasing: base[(q + 1)..<targetBytes.endIndex]))
                }
            } else {
                let split = HTTPRequest.splitTarget(target)
                rawPath = split.path
                query = try PercentCoding.parseQuery(split.query)
            }
        } catch let e as PercentCoding.DecodingError {
            throw HTTPParseError(status: 400, message: "malformed query string: \(e.message)")
        }

        var request = HTTPRequest(method: method, target: target, rawPath: rawPath, query: query,
                                  headers: headers, minorVersion: minor,
                                  keepAlive: !facts.close && (minor >= 1 || facts.keepAlive))

        if minor >= 1 {
            if facts.hosts == 0 { throw HTTPParseError(status: 400, message: "an HTTP/1.1 request without a Host header") }
            if facts.hosts > 1 { throw HTTPParseError(status: 400, message: "more than one Host header") }
            if let other = facts.otherExpectation {
                throw HTTPParseError(status: 417, message: "unsupported expectation \(show(ArraySlice(other.utf8)))")
            }
            request.expectsContinue = facts.expectsContinue
        }

        if facts.hasTransferEncoding {
            let codings = facts.codings
            if minor == 0 {
                throw HTTPParseError(status: 400, message: "Transfer-Encoding in an HTTP/1.0 request")
            }
            if facts.lengths > 0 {
                throw HTTPParseError(status: 400, message: "both Content-Length and Transfer-Encoding are present")
            }
            guard codings.last == "chunked" else {
                throw HTTPParseError(status: 400, message: "the body length is unknown: Transfer-Encoding does not end with chunked")
            }
            if codings.count > 1 {
                let other = codings.first { $0 != "chunked" } ?? "chunked"
                throw HTTPParseError(status: 501, message: "transfer coding \(show(ArraySlice(other.utf8))) is not implemented")
            }
            return (request, .chunked)
        }
        if facts.lengths > 1 {
            throw HTTPParseError(status: 400, message: "more than one Content-Length header")
        }
        if let text = facts.firstLength {
            let digits = text.utf8
            if digits.contains(UInt8(ascii: ",")) {
                throw HTTPParseError(status: 400, message: "more than one Content-Length value")
            }
            if digits.isEmpty || !digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                throw HTTPParseError(status: 400, message: "invalid Content-Length \(show(ArraySlice(digits)))")
            }
            var n = 0
            for d in digits {
                n = n * 10 + Int(d - 0x30)
                if n > limits.maxBodyBytes {
                    throw HTTPParseError(status: 413, message: "the body is larger than \(limits.maxBodyBytes) bytes")
                }
            }
            return (request, n == 0 ? .none : .length(n))
        }
        return (request, .none)
    }

    /// The method as one of the literals of `knownMethods` (no string is built, no set is
    /// hashed), or nil for any other token (case-sensitive: `get` is not `GET`).
    static func knownMethod(_ m: Bytes) -> String? {
        switch m.count {
        case 3:
            if ASCII.same(m, "GET") { return "GET" }
            if ASCII.same(m, "PUT") { return "PUT" }
        case 4:
            if ASCII.same(m, "POST") { return "POST" }
            if ASCII.same(m, "HEAD") { return "HEAD" }
        case 5:
            if ASCII.same(m, "PATCH") { return "PATCH" }
        case 6:
            if ASCII.same(m, "DELETE") { return "DELETE" }
        case 7:
            if ASCII.same(m, "OPTIONS") { return "OPTIONS" }
        default:
            break
        }
        return nil
    }
}

/// The header fields the parser itself acts on, known by their (case-insensitive) names.
enum FramingField {
    case host, expect, contentLength, transferEncoding, connection

    init?(_ name: HTTPRequestParser.Bytes) {
        switch name.count {
        case 4 where ASCII.sameIgnoringCase(name, "host"): self = .host
        case 6 where ASCII.sameIgnoringCase(name, "expect"): self = .expect
        case 10 where ASCII.sameIgnoringCase(name, "connection"): self = .connection
        case 14 where ASCII.sameIgnoringCase(name, "content-length"): self = .contentLength
        case 17 where ASCII.sameIgnoringCase(name, "transfer-encoding"): self = .transferEncoding
        default: return nil
        }
    }
}

/// What those fields said, gathered while the fields are read and judged once all are read.
struct FramingFacts {
    var hosts = 0
    /// The first Expect value other than `100-continue` (417 for HTTP/1.1).
    var otherExpectation: String?
    var expectsContinue = false
    var lengths = 0
    var firstLength: String?
    var hasTransferEncoding = false
    /// The transfer codings listed, lowercased, in order, across all Transfer-Encoding fields.
    var codings: [String] = []
    /// Connection options seen: `close` wins over `keep-alive`.
    var close = false
    var keepAlive = false

    mutating func note(_ field: FramingField, _ value: String) {
        switch field {
        case .host:
            hosts += 1
        case .expect:
            if ASCII.equals(value, lowercase: "100-continue") {
                expectsContinue = true
            } else if otherExpectation == nil {
                otherExpectation = value
            }
        case .contentLength:
            lengths += 1
            if firstLength == nil { firstLength = value }
        case .transferEncoding:
            hasTransferEncoding = true
            for c in value.split(separator: ",") {
                let t = ASCII.lowercased(ASCII.trimmed(String(c)))
                if !t.isEmpty { codings.append(t) }
            }
        case .connection:
            HTTPRequest.connectionOptions(value, close: &close, keepAlive: &keepAlive)
        }
    }
}
