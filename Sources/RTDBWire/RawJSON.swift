import RTDBCore

/// A plain JSON document for protocol envelopes (realtime messages), which, unlike database
/// values, keep nulls, arrays and key order. Every value remembers its byte range in the source,
/// so the data inside an envelope can be handed to `JSONReader` and read by exactly the rules
/// of a REST body.
public struct RawJSON: Sendable {
    public enum Kind: Sendable {
        case object([(key: String, value: RawJSON)])
        case array([RawJSON])
        case string(String)
        case number(Double)
        case bool(Bool)
        case null
    }

    public var kind: Kind
    public var range: Range<Int>

    public init(kind: Kind, range: Range<Int>) {
        self.kind = kind
        self.range = range
    }

    public struct SyntaxError: Error, Sendable { public var offset: Int; public var message: String }

    public static let maxDepth = 600

    public static func parse(_ bytes: [UInt8]) throws -> RawJSON {
        var p = Reader(b: bytes)
        p.space()
        let v = try p.value(0)
        p.space()
        if p.i != bytes.count { throw SyntaxError(offset: p.i, message: "unexpected text after the JSON value") }
        return v
    }

    public subscript(_ key: String) -> RawJSON? {
        guard case .object(let members) = kind else { return nil }
        return members.last { $0.key == key }?.value
    }

    public var string: String? { if case .string(let s) = kind { return s }; return nil }
    public var isNull: Bool { if case .null = kind { return true }; return false }
    public var members: [(key: String, value: RawJSON)]? { if case .object(let m) = kind { return m }; return nil }
    public var items: [RawJSON]? { if case .array(let a) = kind { return a }; return nil }

    /// An integer value (a number without fraction that fits in 64 bits).
    public var int: Int64? {
        guard case .number(let d) = kind, d.rounded() == d, abs(d) < 9.0e18 else { return nil }
        return Int64(d)
    }

    /// This value read as database data (JSONReader's rules: nulls and empty objects vanish,
    /// `.value`/`.priority`/`.sv` as in any write).
    public func node(in source: [UInt8]) throws -> Node {
        try source[range].withContiguousStorageIfAvailable { try JSONReader.parse(UnsafeBufferPointer(rebasing: $0[...])) }
            ?? JSONReader.parse(Array(source[range]))
    }

    /// The value rebuilt as compact JSON (no spaces; numbers as JSONWriter writes them, strings
    /// re-escaped), so that what a peer sent can be sent back or passed on in one canonical form.
    public func compactText() -> [UInt8] {
        var out: [UInt8] = []
        appendCompact(to: &out)
        return out
    }

    private func appendCompact(to out: inout [UInt8]) {
        switch kind {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .number(let d): out += Array(JSONWriter.format(d).utf8)
        case .string(let s): JSONWriter.appendString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, v) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.appendCompact(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(m.key, to: &out)
                out.append(UInt8(ascii: ":"))
                m.value.appendCompact(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    struct Reader {
        let b: [UInt8]
        var i = 0

        mutating func space() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }

        func fail(_ m: String) -> SyntaxError { SyntaxError(offset: i, message: m) }

        mutating func value(_ depth: Int) throws -> RawJSON {
            if depth > RawJSON.maxDepth { throw fail("nested too deeply") }
            guard i < b.count else { throw fail("unexpected end of input") }
            let s = i
            switch b[i] {
            case UInt8(ascii: "{"):
                i += 1
                var members: [(key: String, value: RawJSON)] = []
                space()
                if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return RawJSON(kind: .object([]), range: s..<i) }
                while true {
                    space()
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                    let k = try string()
                    space()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    space()
                    members.append((k, try value(depth + 1)))
                    space()
                    guard i < b.count else { throw fail("unexpected end of input") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "}") { i += 1; break }
                    throw fail("expected ',' or '}'")
                }
                return RawJSON(kind: .object(members), range: s..<i)
            case UInt8(ascii: "["):
                i += 1
                var items: [RawJSON] = []
                space()
                if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return RawJSON(kind: .array([]), range: s..<i) }
                while true {
                    space()
                    items.append(try value(depth + 1))
                    space()
                    guard i < b.count else { throw fail("unexpected end of input") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "]") { i += 1; break }
                    throw fail("expected ',' or ']'")
                }
                return RawJSON(kind: .array(items), range: s..<i)
            case UInt8(ascii: "\""):
                let str = try string()
                return RawJSON(kind: .string(str), range: s..<i)
            case UInt8(ascii: "t"): try word("true"); return RawJSON(kind: .bool(true), range: s..<i)
            case UInt8(ascii: "f"): try word("false"); return RawJSON(kind: .bool(false), range: s..<i)
            case UInt8(ascii: "n"): try word("null"); return RawJSON(kind: .null, range: s..<i)
            default:
                return RawJSON(kind: .number(try number()), range: s..<i)
            }
        }

        mutating func word(_ w: String) throws {
            let u = Array(w.utf8)
            guard i + u.count <= b.count, Array(b[i..<(i + u.count)]) == u else { throw fail("invalid literal") }
            i += u.count
        }

        mutating func number() throws -> Double {
            let s = i
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while i < b.count, (b[i] >= 0x30 && b[i] <= 0x39) || b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: "e")
                    || b[i] == UInt8(ascii: "E") || b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
                i += 1
                digits += 1
            }
            guard digits > 0, let d = Double(String(decoding: b[s..<i], as: UTF8.self)), d.isFinite else {
                throw SyntaxError(offset: s, message: "invalid number")
            }
            return d
        }

        /// A string, decoded by the database's own JSON reader (the same escapes and checks).
        mutating func string() throws -> String {
            var pos = i
            do {
                let text = try b.withUnsafeBufferPointer { try JSONReader.string(in: $0, at: &pos) }
                i = pos
                return text
            } catch let e as RTDBError {
                throw SyntaxError(offset: pos, message: e.message)
            }
        }
    }
}
