/// One parsed HTTP/1.x request, as `HTTPRequestParser` delivers it: framing already removed
/// (the body is the decoded payload, chunked or not), header names lowercased, the query string
/// split and percent-decoded, the path left exactly as sent.
public struct HTTPRequest: Sendable {
    /// The method as sent (a token, case-sensitive: "GET", "PUT", …).
    public var method: String
    /// The raw request-target (origin-form `/a/b.json?x=1`, or absolute-form `http://h/a`).
    public var target: String
    /// The part of the target's path before `?`, NOT percent-decoded. For an absolute-form
    /// target this is the path after the authority (`/` when there is none).
    public var rawPath: String
    /// The query string split on `&` and `=`, each side percent-decoded by RFC 3986 (a `+` stays
    /// a `+`), in the order sent. A piece without `=` has the empty value; empty pieces are dropped.
    public var query: [(name: String, value: String)]
    /// Header fields in the order sent: names lowercased, values with surrounding spaces and
    /// tabs removed. Repeated fields stay separate entries.
    public var headers: [(name: String, value: String)]
    /// Trailer fields of a chunked body (same form as `headers`); never merged into `headers`.
    public var trailers: [(name: String, value: String)]
    /// The payload, with any chunked framing removed.
    public var body: [UInt8]
    /// HTTP/1.0 → 0, HTTP/1.1 → 1 (a later 1.x minor version is treated as 1).
    public var minorVersion: Int
    /// Whether the connection may carry another request after this one: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// The request carried `Expect: 100-continue`.
    public var expectsContinue: Bool

    /// Builds a request by hand (tests, clients): the target is split and its query decoded as
    /// the parser would (a malformed query string gives no parameters: the parser refuses it),
    /// header names are lowercased and `keepAlive` follows the version and `Connection`.
    public init(method: String, target: String, headers: [(name: String, value: String)] = [],
                body: [UInt8] = [], minorVersion: Int = 1) {
        self.method = method
        self.target = target
        let split = HTTPRequest.splitTarget(target)
        self.rawPath = split.path
        self.query = (try? PercentCoding.parseQuery(split.query)) ?? []
        self.headers = headers.map { (name: ASCII.lowercased($0.name), value: $0.value) }
        self.trailers = []
        self.body = body
        self.minorVersion = minorVersion
        self.keepAlive = HTTPRequest.keepAlive(headers: self.headers, minorVersion: minorVersion)
        self.expectsContinue = false
    }

    /// The parser's: every part already read from the head (nothing is split or parsed twice).
    init(method: String, target: String, rawPath: String, query: [(name: String, value: String)],
         headers: [(name: String, value: String)], minorVersion: Int, keepAlive: Bool) {
        self.method = method
        self.target = target
        self.rawPath = rawPath
        self.query = query
        self.headers = headers
        self.trailers = []
        self.body = []
        self.minorVersion = minorVersion
        self.keepAlive = keepAlive
        self.expectsContinue = false
    }

    /// The first header named `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        // A server asks for several fields of every request: compared as bytes, lengths first,
        // without a lowercased copy of the name.
        var name = name
        return name.withUTF8 { wanted in
            for h in headers where ASCII.isLowercase(of: wanted, h.name) { return h.value }
            return nil
        }
    }

    /// Every value of the headers named `name` (case-insensitive), in order.
    public func headerValues(_ name: String) -> [String] {
        var name = name
        return name.withUTF8 { wanted in
            var values: [String] = []
            for h in headers where ASCII.isLowercase(of: wanted, h.name) { values.append(h.value) }
            return values
        }
    }

    /// The last query parameter named `name` (exact, case-sensitive), or nil.
    public func queryValue(_ name: String) -> String? {
        for q in query.reversed() where q.name == name { return q.value }
        return nil
    }

    /// Splits a request-target into its path (before `?`) and its query string (after `?`,
    /// nil when there is no `?`). An absolute-form target loses its scheme and authority.
    static func splitTarget(_ target: String) -> (path: String, query: String?) {
        if target.utf8.first == UInt8(ascii: "/") {
            // Origin form ("/path?query"), which nearly every request uses: cut in place.
            var bytes = target
            guard let q = bytes.withUTF8({ $0.firstIndex(of: UInt8(ascii: "?")) }) else { return (target, nil) }
            return bytes.withUTF8 { u in
                (String(decoding: UnsafeBufferPointer(rebasing: u[..<q]), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(rebasing: u[(q + 1)...]), as: UTF8.self))
            }
        }
        var t = Substring(target)
        let lower = ASCII.lowercased(String(t.prefix(8)))
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            t = t[t.index(t.startIndex, offsetBy: lower.hasPrefix("http://") ? 7 : 8)...]
            if let slash = t.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                t = t[slash...]
            } else {
                t = ""
            }
            if t.first == "?" || t.isEmpty { t = "/" + t }
        }
        if let q = t.utf8.firstIndex(of: UInt8(ascii: "?")) {
            return (String(t[..<q]), String(t[t.utf8.index(after: q)...]))
        }
        return (String(t), nil)
    }

    static func keepAlive(headers: [(name: String, value: String)], minorVersion: Int) -> Bool {
        var close = false, keep = false
        for h in headers where h.name == "connection" {
            connectionOptions(h.value, close: &close, keepAlive: &keep)
        }
        if close { return false }
        return minorVersion >= 1 || keep
    }

    /// Notes the `close` and `keep-alive` options of one Connection field value.
    static func connectionOptions(_ value: String, close: inout Bool, keepAlive: inout Bool) {
        for token in value.split(separator: ",") {
            let t = ASCII.lowercased(ASCII.trimmed(String(token)))
            if t == "close" { close = true }
            if t == "keep-alive" { keepAlive = true }
        }
    }
}

/// Bounds on what one request may occupy while it is being read.
public struct HTTPLimits: Sendable {
    /// Request line plus header fields (and, separately, the trailer fields of a chunked body).
    public var maxHeaderBytes = 65_536
    /// The decoded body (256 MiB: Firebase's REST write limit).
    public var maxBodyBytes = 268_435_456
    public init(maxHeaderBytes: Int = 65_536, maxBodyBytes: Int = 268_435_456) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Why a request could not be read, as the HTTP status to answer with (400, 413, 417, 431,
/// 501, 505) and a sentence for the `{"error": …}` body. After one, the connection is answered
/// and closed: the framing of anything that follows is unknown.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { "\(status) \(message)" }

    /// The answer to send before closing: the status with `{"error": message}`.
    public var response: HTTPResponse { .error(status, message) }
}

/// Byte-level ASCII helpers that never consult Unicode tables (HTTP syntax is ASCII).
enum ASCII {
    static func lowercased(_ s: String) -> String {
        var s = s
        // Names looked up are nearly always lowercase already: no copy for them.
        return s.withUTF8 { bytes in
            bytes.contains(where: isCapital) ? String(decoding: bytes.map(lower), as: UTF8.self) : nil
        } ?? s
    }

    /// Whether `s` is `lowercase` (all lowercase ASCII) but for ASCII case, without a copy.
    static func equals(_ s: String, lowercase: StaticString) -> Bool {
        var s = s
        let n = lowercase.utf8CodeUnitCount, l = lowercase.utf8Start
        return s.withUTF8 { bytes in
            guard bytes.count == n else { return false }
            for i in 0..<n where lower(bytes[i]) != l[i] { return false }
            return true
        }
    }

    /// Whether `lowercase` (a name as the parser keeps it, all lowercase) is `bytes` but for
    /// ASCII case.
    @inline(__always) static func isLowercase(of bytes: UnsafeBufferPointer<UInt8>, _ lowercase: String) -> Bool {
        guard lowercase.utf8.count == bytes.count else { return false }
        var lowercase = lowercase
        return lowercase.withUTF8 { l in
            for i in 0..<l.count where lower(bytes[i]) != l[i] { return false }
            return true
        }
    }

    /// Whether the bytes are exactly `text`.
    @inline(__always) static func same(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount, t = text.utf8Start, base = bytes.base, from = bytes.startIndex
        guard bytes.count == n else { return false }
        for i in 0..<n where base[from + i] != t[i] { return false }
        return true
    }

    /// Whether the bytes are `lowercase` (all lowercase ASCII) but for ASCII case.
    @inline(__always) static func sameIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        let n = lowercase.utf8CodeUnitCount, t = lowercase.utf8Start, base = bytes.base, from = bytes.startIndex
        guard bytes.count == n else { return false }
        for i in 0..<n where lower(base[from + i]) != t[i] { return false }
        return true
    }

    @inline(__always) static func isCapital(_ b: UInt8) -> Bool { b >= 0x41 && b <= 0x5A }
    @inline(__always) static func lower(_ b: UInt8) -> UInt8 { isCapital(b) ? b + 0x20 : b }

    /// The bytes as a string, ASCII letters lowercased (a header name as it arrives, read in
    /// place in the receive buffer): written straight into the new string.
    static func lowercased(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { out in
            var n = 0
            for b in bytes { out[n] = lower(b); n += 1 }
            return n
        }
    }

    static func uppercased(_ s: String) -> String {
        var bytes = Array(s.utf8)
        for i in bytes.indices where bytes[i] >= 0x61 && bytes[i] <= 0x7A { bytes[i] -= 0x20 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Removes spaces and tabs at both ends.
    static func trimmed(_ s: String) -> String {
        let u = Array(s.utf8)
        var lo = 0, hi = u.count
        while lo < hi, u[lo] == 0x20 || u[lo] == 0x09 { lo += 1 }
        while hi > lo, u[hi - 1] == 0x20 || u[hi - 1] == 0x09 { hi -= 1 }
        if lo == 0 && hi == u.count { return s }
        return String(decoding: u[lo..<hi], as: UTF8.self)
    }

    /// RFC 9110 `tchar`: the characters of a token (methods, header names).
    static func isTokenChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
             UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }
}
