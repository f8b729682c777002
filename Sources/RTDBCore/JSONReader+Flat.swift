extension JSONReader {
    /// Thrown by `flatValue` when a value is not flat: the caller reads it again with
    /// `value(depth:)`, which gives its normal form or its error.
    struct NotFlat: Error {}

    /// The largest object whose keys may come in any order: a larger one must have its keys in
    /// key order, so that its rows are written in order (`Node.object(normalizing:)` sorts the
    /// others, on the ordinary path).
    static let flatUnorderedMembers = 32

    /// Reads the value at the reading position into `out` (emptied first) when it is flat: when
    /// `value(depth:)` and `Limits.validate` would accept it and storing it takes nothing but
    /// dropping nulls and empty nodes. Not flat (`NotFlat`, the reading position then
    /// undefined): a key starting with `.` other than `.priority` (`.value`, `.sv`, an invalid
    /// key), any invalid key, a repeated key, a priority that is not a string or a number,
    /// a string over the length limit, a key deeper than `room` levels below the value,
    /// nesting past `maxNesting`, or an object of more than `flatUnorderedMembers` keys out of
    /// key order. Invalid JSON is thrown as `value(depth:)` throws it.
    mutating func flatValue(into out: inout FlatValue, depth: Int, room: Int) throws {
        out.clear()
        try flatNode(&out, depth: depth, room: room)
    }

    private mutating func flatNode(_ out: inout FlatValue, depth: Int, room: Int) throws {
        guard i < end else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"): try flatObject(&out, depth: depth + 1, room: room)
        case UInt8(ascii: "["): try flatArray(&out, depth: depth + 1, room: room)
        case UInt8(ascii: "n"): try literal("null")
        default: out.tokens.append(.leaf(try flatScalar(&out)))
        }
    }

    /// A string, a number or a boolean (anything else is invalid JSON, thrown as `value` throws it).
    private mutating func flatScalar(_ out: inout FlatValue) throws -> FlatValue.Scalar {
        switch b[i] {
        case UInt8(ascii: "\""):
            let r = try JSONReader.narrow(string(appendingTo: &out.bytes))
            if r.count > Limits.maxStringBytes { throw NotFlat() }
            return .string(r)
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            switch try number() {
            case .int(let v): return .int(v)
            case .double(let v): return .double(v)
            default: throw NotFlat()
            }
        default:
            _ = try value(depth: 0)   // throws the error of the text
            throw NotFlat()
        }
    }

    private mutating func flatObject(_ out: inout FlatValue, depth: Int, room: Int) throws {
        if depth > JSONReader.maxNesting { throw NotFlat() }
        i += 1
        skipSpace()
        if peek() == UInt8(ascii: "}") { i += 1; return }
        let firstToken = out.tokens.count
        let firstMember = out.members.count
        var priority: FlatValue.Scalar? = nil
        var ordered = true
        var previousInt: Int32? = nil
        while true {
            skipSpace()
            guard peek() == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try JSONReader.narrow(string(appendingTo: &out.bytes))
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            let isPriority = try out.bytes.withUnsafeBufferPointer { all -> Bool in
                let k = UnsafeBufferPointer(rebasing: all[Int(key.lowerBound)..<Int(key.upperBound)])
                if k.first == UInt8(ascii: ".") {
                    guard k.elementsEqual(".priority".utf8) else { throw NotFlat() }
                    return true
                }
                if Limits.keyFault(k) != nil || room < 1 { throw NotFlat() }
                // A key in key order after the one before cannot repeat an earlier one; past
                // the first key out of order, each is compared with all before it.
                let int = KeyOrder.intValue(bytes: k)
                let members = out.members.count - firstMember
                if members > 0 {
                    if ordered, let last = out.members.last {
                        let previous = UnsafeBufferPointer(rebasing: all[Int(last.lowerBound)..<Int(last.upperBound)])
                        ordered = KeyOrder.compare(bytes: previous, previousInt, k, int) < 0
                    }
                    if !ordered {
                        if members >= JSONReader.flatUnorderedMembers { throw NotFlat() }
                        for m in out.members[firstMember...] where m.count == key.count {
                            if UnsafeBufferPointer(rebasing: all[Int(m.lowerBound)..<Int(m.upperBound)]).elementsEqual(k) { throw NotFlat() }
                        }
                    }
                }
                previousInt = int
                return false
            }
            if isPriority {
                out.bytes.removeSubrange(Int(key.lowerBound)...)
                priority = try flatPriority(&out)
            } else {
                out.members.append(key)
                try flatMember(&out, key: key, depth: depth, room: room - 1)
            }
            if try !another(before: UInt8(ascii: "}")) { break }
        }
        out.members.removeSubrange(firstMember...)
        // An empty node takes no priority.
        if let priority, out.tokens.count > firstToken { out.tokens.append(.priority(priority)) }
    }

    /// The value of a `.priority` key: nil for null (no priority), a string or a number.
    private mutating func flatPriority(_ out: inout FlatValue) throws -> FlatValue.Scalar? {
        guard i < end else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "n"):
            try literal("null")
            return nil
        case UInt8(ascii: "\""), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try flatScalar(&out)
        default:
            throw NotFlat()   // a server value, or an error `value` reports
        }
    }

    private mutating func flatArray(_ out: inout FlatValue, depth: Int, room: Int) throws {
        if depth > JSONReader.maxNesting { throw NotFlat() }
        i += 1
        skipSpace()
        if peek() == UInt8(ascii: "]") { i += 1; return }
        var index = 0
        while true {
            skipSpace()
            if room < 1 { throw NotFlat() }
            let key = try JSONReader.narrow(JSONReader.appendDecimal(index, to: &out.bytes))
            try flatMember(&out, key: key, depth: depth, room: room - 1)
            index += 1
            if try !another(before: UInt8(ascii: "]")) { break }
        }
    }

    /// The value of the member `key` of the current node: one `child` token for a leaf, nothing
    /// for null or an empty node, else its tokens between `enter` and `leave`.
    private mutating func flatMember(_ out: inout FlatValue, key: Range<Int32>, depth: Int, room: Int) throws {
        guard i < end else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            out.tokens.append(.enter(key))
            let mark = out.tokens.count
            try flatNode(&out, depth: depth, room: room)
            if out.tokens.count == mark { out.tokens.removeLast() } else { out.tokens.append(.leave) }
        case UInt8(ascii: "n"):
            try literal("null")
        default:
            out.tokens.append(.child(key, try flatScalar(&out)))
        }
    }

    /// A range of `FlatValue.bytes` in the 32-bit offsets its tokens hold (a larger value is
    /// not flat; it is read the ordinary way).
    @inline(__always)
    private static func narrow(_ r: Range<Int>) throws -> Range<Int32> {
        guard r.upperBound <= Int(Int32.max) else { throw NotFlat() }
        return Int32(r.lowerBound)..<Int32(r.upperBound)
    }

    /// Appends the decimal digits of `n` (not negative), an array index as a key.
    private static func appendDecimal(_ n: Int, to out: inout [UInt8]) -> Range<Int> {
        let from = out.count
        var n = n
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(n % 10))
            n /= 10
        } while n > 0
        out[from...].reverse()
        return from..<out.count
    }
}
