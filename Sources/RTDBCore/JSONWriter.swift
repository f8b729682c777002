/// Our JSON writer: compact (one line) or indented like `JSON.stringify(v, null, 2)`.
/// Numbers print as JavaScript prints them, strings with the minimal escapes and raw UTF-8,
/// object keys in key order, and objects whose keys are array indices render as arrays.
///
/// Priorities print only in the export form (`export: true`, Firebase's `format=export`): a leaf
/// with a priority as `{".value":v,".priority":p}`, an object with one gains a last
/// `".priority"` key, and objects never turn into arrays, so that `JSONReader` reads the text
/// back into the very same tree. Otherwise priorities are left out, as normal reads show data.
public struct JSONWriter {
    public var pretty: Bool
    public var export: Bool
    public init(pretty: Bool = false, export: Bool = false) {
        self.pretty = pretty
        self.export = export
    }

    public static func string(_ node: Node, pretty: Bool = false, export: Bool = false) -> String {
        var out: [UInt8] = []
        JSONWriter(pretty: pretty, export: export).write(node, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func write(_ node: Node, into out: inout [UInt8]) {
        write(node, into: &out, level: 0)
    }

    /// Writes `node` as it appears nested `level` deep (its indentation when pretty).
    public func write(_ node: Node, into out: inout [UInt8], level: Int) {
        write(node, priority: nil, into: &out, level: level)
    }

    /// Writes `node`; `priority` (export form only) is the priority of the node being written.
    func write(_ node: Node, priority: Node?, into out: inout [UInt8], level: Int) {
        switch node {
        case .prioritized(let base, let p):
            if !export {
                write(base, priority: nil, into: &out, level: level)
            } else if base.isObject {
                write(base, priority: p, into: &out, level: level)
            } else {
                out.append(UInt8(ascii: "{"))
                member("\".value\":", base, into: &out, level: level)
                out.append(UInt8(ascii: ","))
                member("\".priority\":", p, into: &out, level: level)
                newline(&out, level)
                out.append(UInt8(ascii: "}"))
            }
        case .null: JSONWriter.append("null", to: &out)
        case .bool(let v): JSONWriter.append(v ? "true" : "false", to: &out)
        case .int(let v): JSONWriter.appendInt(v, to: &out)
        case .double(let v): JSONWriter.append(JSONWriter.format(v), to: &out)
        case .string(let s): JSONWriter.appendString(s, to: &out)
        case .object(let list):
            if !export, let count = JSONWriter.arrayLength(list) {
                out.append(UInt8(ascii: "["))
                var next = 0
                for idx in 0..<count {
                    if idx > 0 { out.append(UInt8(ascii: ",")) }
                    newline(&out, level + 1)
                    if next < list.count, Int(list[next].key) == idx {
                        write(list[next].node, into: &out, level: level + 1)
                        next += 1
                    } else {
                        JSONWriter.append("null", to: &out)
                    }
                }
                newline(&out, level)
                out.append(UInt8(ascii: "]"))
            } else {
                writeObject(list, priority: priority, into: &out, level: level)
            }
        }
    }

    /// Writes an object whose members are `members` in the order given, such as a query's
    /// order (`Query.orderedMembers`), rather than key order; never as an array.
    public func write(members: [Node.Entry], into out: inout [UInt8], level: Int = 0) {
        writeObject(members, priority: nil, into: &out, level: level)
    }

    private func writeObject(_ list: [Node.Entry], priority: Node?, into out: inout [UInt8], level: Int) {
        out.append(UInt8(ascii: "{"))
        for (n, e) in list.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            newline(&out, level + 1)
            JSONWriter.appendString(e.key, to: &out)
            out.append(UInt8(ascii: ":"))
            if pretty { out.append(0x20) }
            write(e.node, into: &out, level: level + 1)
        }
        if let p = priority {
            out.append(UInt8(ascii: ","))
            member("\".priority\":", p, into: &out, level: level)
        }
        newline(&out, level)
        out.append(UInt8(ascii: "}"))
    }

    /// A member of an object written at `level` whose name needs no escaping (`"\".priority\":"`):
    /// the line break, the name, a space when pretty, then `node`.
    public func member(_ quotedName: StaticString, _ node: Node, into out: inout [UInt8], level: Int) {
        memberName(quotedName, into: &out, level: level)
        write(node, into: &out, level: level + 1)
    }

    /// A member's start, up to where its value goes (for a value written by other means).
    public func memberName(_ quotedName: StaticString, into out: inout [UInt8], level: Int) {
        newline(&out, level + 1)
        JSONWriter.append(quotedName, to: &out)
        if pretty { out.append(0x20) }
    }

    @inline(__always) func newline(_ out: inout [UInt8], _ level: Int) {
        guard pretty else { return }
        out.append(0x0A)
        for _ in 0..<(level * 2) { out.append(0x20) }
    }

    /// The length of the array an object renders as, or nil when it renders as an object:
    /// every key must be an array index (`0` or no leading zero) and the largest index must be
    /// below twice the number of children.
    public static func arrayLength(_ list: [Node.Entry]) -> Int? {
        guard let last = list.last else { return nil }
        for e in list where !isIndex(e.key) { return nil }
        // Children are sorted, and index keys are integer keys, so the last is the largest.
        guard let maxKey = Int(last.key), maxKey < 2 * list.count else { return nil }
        return maxKey + 1
    }

    /// True for a key that can stand for an array index: `0`, or digits without a leading zero
    /// that fit in 32 bits.
    public static func isIndex(_ key: String) -> Bool {
        let u = key.utf8
        guard let first = u.first, u.count <= 10 else { return false }
        if first == UInt8(ascii: "0") { return u.count == 1 }
        for c in u where c < 48 || c > 57 { return false }
        return KeyOrder.intValue(key) != nil
    }

    @inline(__always) public static func append(_ s: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Copies the text's bytes at once (the generic UTF-8 view goes byte by byte: for the
    /// twenty short pieces of an HTTP head that cost more than the rest of the head).
    @inline(__always) public static func append(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { out.append(contentsOf: $0) }
    }

    public static func appendInt(_ v: Int64, to out: inout [UInt8]) {
        if v >= 0 && v < 10 { out.append(UInt8(48 + v)); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        var m = v.magnitude
        withUnsafeMutableBytes(of: &digits) { buf in
            repeat {
                buf[n] = UInt8(48 + m % 10)
                m /= 10
                n += 1
            } while m > 0
            if v < 0 { out.append(UInt8(ascii: "-")) }
            while n > 0 { n -= 1; out.append(buf[n]) }
        }
    }

    static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    public static func appendString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendString(bytes: $0, to: &out) }
    }

    /// As `appendString(_:to:)` for text given as its UTF-8 bytes.
    public static func appendString(bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(0x22)
        for c in bytes {
            switch c {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 48, 48, hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(0x22)
    }

    /// A double as JavaScript's `Number.prototype.toString` prints it: the shortest digits that
    /// round-trip, fixed notation for decimal exponents in [-6, 21), exponential otherwise.
    public static func format(_ d: Double) -> String {
        if d == 0 { return "0" }
        if d.isNaN || d.isInfinite { return "null" }
        // Swift's description gives the shortest round-trip digits; re-layout them.
        var text = d.magnitude.description
        var exp10 = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exp10 = Int(text[text.index(after: e)...]) ?? 0
            text = String(text[..<e])
        }
        var digits = ""
        var pointPos = 0
        var seenPoint = false
        for ch in text {
            if ch == "." { seenPoint = true; continue }
            digits.append(ch)
            if !seenPoint { pointPos += 1 }
        }
        // Strip leading zeros (moving the point) and trailing zeros.
        while digits.count > 1, digits.first == "0" { digits.removeFirst(); pointPos -= 1 }
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        let k = digits.count
        let n = pointPos + exp10   // value = 0.digits × 10^n
        var out = d < 0 ? "-" : ""
        if k <= n && n <= 21 {
            out += digits + String(repeating: "0", count: n - k)
        } else if 0 < n && n <= 21 {
            let idx = digits.index(digits.startIndex, offsetBy: n)
            out += digits[..<idx] + "." + digits[idx...]
        } else if -6 < n && n <= 0 {
            out += "0." + String(repeating: "0", count: -n) + digits
        } else {
            let e = n - 1
            let first = digits.prefix(1)
            let rest = digits.dropFirst()
            out += first + (rest.isEmpty ? "" : "." + rest) + "e" + (e < 0 ? "-" : "+") + String(e.magnitude)
        }
        return out
    }
}
