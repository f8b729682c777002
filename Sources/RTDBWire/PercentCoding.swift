/// Percent-encoding by RFC 3986, as URLs carry Firebase paths and query values.
///
/// Decoding turns each `%XX` into its byte and leaves every other character alone; in
/// particular `+` stays `+` (HTML-form decoding would make it a space, and firebase-admin sends
/// a literal `+` inside JSON values). The decoded bytes must be UTF-8. A `%` not followed by
/// two hex digits is an error, never guessed at.
public enum PercentCoding {
    public struct DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Decodes `%XX` escapes; fails on a malformed escape or on bytes that are not UTF-8.
    public static func decode(_ text: some StringProtocol) throws -> String {
        // Most keys have no escapes: no copy of their bytes.
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        return try decodeEscapes(Array(text.utf8))
    }

    /// Decodes the UTF-8 bytes of a piece of a string (cut at ASCII bytes, so valid).
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws -> String {
        bytes.contains(UInt8(ascii: "%")) ? try decodeEscapes(Array(bytes)) : String(decoding: bytes, as: UTF8.self)
    }

    private static func decodeEscapes(_ u: [UInt8]) throws -> String {
        var out: [UInt8] = []
        out.reserveCapacity(u.count)
        var i = 0
        while i < u.count {
            let c = u[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < u.count, let hi = hexValue(u[i + 1]), let lo = hexValue(u[i + 2]) else {
                    throw DecodingError("malformed percent-encoding at byte \(i)")
                }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(c)
                i += 1
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else {
            throw DecodingError("percent-encoded bytes are not UTF-8")
        }
        return s
    }

    /// Splits a query string on `&`, each piece at its first `=`, and decodes both sides.
    /// Empty pieces (`a=1&&b=2`) are skipped; a piece without `=` has the empty value.
    public static func parseQuery(_ query: String?) throws -> [(name: String, value: String)] {
        guard var query, !query.isEmpty else { return [] }
        return try query.withUTF8 { try parseQuery(bytes: $0) }
    }

    /// `parseQuery` of a query string's bytes (a request parser's, read in place).
    public static func parseQuery(bytes: UnsafeBufferPointer<UInt8>) throws -> [(name: String, value: String)] {
        // Split on the bytes, in place: a long token (`auth=…`) read as Characters cost more than
        // the rest of a request.
        var out: [(name: String, value: String)] = []
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            if end > start {
                let piece = UnsafeBufferPointer(rebasing: bytes[start..<end])
                if let eq = piece.firstIndex(of: UInt8(ascii: "=")) {
                    out.append((try decode(UnsafeBufferPointer(rebasing: piece[..<eq])),
                                try decode(UnsafeBufferPointer(rebasing: piece[(eq + 1)...]))))
                } else {
                    out.append((try decode(piece), ""))
                }
            }
            start = end + 1
        }
        return out
    }

    /// Encodes everything except RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), as
    /// `encodeURIComponent` does for the characters that matter here (space is `%20`, `+` is `%2B`).
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            switch b {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Builds a query string from name/value pairs, each side encoded.
    public static func queryString(_ items: [(name: String, value: String)]) -> String {
        items.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
    }

    static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }
}
