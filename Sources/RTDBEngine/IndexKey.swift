import RTDBCore

/// An order-preserving, prefix-free byte encoding of sort values (`ValueOrder`): comparing two
/// encodings byte by byte gives Firebase's value order (null < false < true < numbers <
/// strings < objects, all objects alike). An index entry is a child's encoded sort value
/// followed by its `StorageKey` segment, so entries sort as `orderByChild`/`orderByValue` do:
/// by value, then by key.
///
/// * null `01`, false `02`, true `03`, any object `06`;
/// * a number: `04`, its value as a double in eight order-preserving bytes, then nine bytes
///   that order numbers sharing that double exactly (doubles hold integers only up to 2^53);
/// * a string: `05`, its UTF-8 bytes moved to UTF-16 order as in `StorageKey` (a zero byte
///   written `00 FF`), then `00 01`.
enum IndexKey {
    static func encode(_ v: Node) -> [UInt8] {
        var out: [UInt8] = []
        append(v, to: &out)
        return out
    }

    static func append(_ v: Node, to out: inout [UInt8]) {
        switch v {
        case .prioritized(let base, _): append(base, to: &out)
        case .null: out.append(0x01)
        case .bool(let b): out.append(b ? 0x03 : 0x02)
        case .int(let i):
            out.append(0x04)
            appendDouble(Double(i), to: &out)
            appendExact(i, flag: 1, to: &out)
        case .double(let d):
            out.append(0x04)
            appendDouble(d, to: &out)
            if d.isNaN {
                appendExact(Int64.max, flag: 3, to: &out)
            } else if d >= 9223372036854775808.0 {
                appendExact(Int64.max, flag: 2, to: &out)
            } else if d < -9223372036854775808.0 {
                appendExact(Int64.min, flag: 0, to: &out)
            } else {
                // Only integral doubles share their eight bytes with other numbers.
                appendExact(Int64(d.rounded(.down)), flag: 1, to: &out)
            }
        case .string(let s):
            out.append(0x05)
            for b in s.utf8 {
                switch b {
                case 0x00: out.append(0x00); out.append(0xFF)
                case 0xEE: out.append(0xF5)
                case 0xEF: out.append(0xF6)
                default: out.append(b)
                }
            }
            out.append(0x00)
            out.append(0x01)
        case .object: out.append(0x06)
        }
    }

    private static func appendDouble(_ d: Double, to out: inout [UInt8]) {
        let d = d == 0 ? 0.0 : d   // -0 sorts as 0
        let bits = d.bitPattern
        let ordered = d.sign == .minus ? ~bits : bits | (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
    }

    private static func appendExact(_ i: Int64, flag: UInt8, to out: inout [UInt8]) {
        let ordered = UInt64(bitPattern: i) ^ (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
        out.append(flag)
    }

    /// The length of the encoded value at the start of `bytes` (the rest is the key segment).
    static func valueLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let tag = bytes.first else { return 0 }
        switch tag {
        case 0x04: return min(bytes.count, 18)
        case 0x05:
            var i = 1
            while i + 1 < bytes.count {
                if bytes[i] == 0x00 {
                    if bytes[i + 1] == 0x01 { return i + 2 }
                    i += 2
                } else {
                    i += 1
                }
            }
            return bytes.count
        default: return 1
        }
    }

    /// The child key at the end of an index entry.
    static func key(ofEntry bytes: UnsafeBufferPointer<UInt8>) -> String {
        let start = valueLength(bytes)
        return StorageKey.key(bytes, start..<StorageKey.segmentEnd(bytes, from: start))
    }
}
