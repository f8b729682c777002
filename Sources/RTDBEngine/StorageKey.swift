import RTDBCore

/// The row key of a path in `data` and `priorities` (schema version 3): each key of the path
/// becomes one segment, and the segments are concatenated. The encoding is chosen so that byte
/// order (SQLite's order for blobs) is Firebase's key order among siblings, and every subtree is
/// one contiguous range:
///
/// * a key that is a 32-bit integer (`KeyOrder.intValue`): `0x02`, the value plus 2^31 as four
///   big-endian bytes, the length of its spelling (one byte), then the spelling itself — numeric
///   order, then shorter spellings first, then spellings by code unit, as `KeyOrder.compare`;
/// * any other key: `0x03`, its UTF-8 bytes with the lead bytes `0xEE`/`0xEF` moved to
///   `0xF5`/`0xF6` (which turns UTF-8 byte order into UTF-16 code-unit order), then `0x01`.
///
/// No segment is a prefix of another (an integer segment has its length inside it; a string
/// segment ends with `0x01`, a byte no valid key contains), so the rows below a path `P` are
/// exactly those in [P·0x02, P·0x04), and the children of `P` sort in key order. The root is
/// the empty key.
enum StorageKey {
    static let intTag: UInt8 = 0x02
    static let stringTag: UInt8 = 0x03
    static let stringEnd: UInt8 = 0x01
    /// One past the largest tag: the exclusive upper end of every descendant range.
    static let tagLimit: UInt8 = 0x04

    static func encode(_ path: Path) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.keys.reduce(0) { $0 + $1.utf8.count + 2 })
        for k in path.keys { append(k, to: &out) }
        return out
    }

    /// Appends the segment of one key.
    static func append(_ key: String, to out: inout [UInt8]) {
        var key = key
        key.withUTF8 { append(bytes: $0, to: &out) }
    }

    /// Appends the segment of the key whose UTF-8 bytes are `key`.
    @inline(__always)
    static func append(bytes key: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        if let v = KeyOrder.intValue(bytes: key) {
            let biased = UInt32(bitPattern: v) ^ 0x8000_0000
            out.append(intTag)
            out.append(UInt8(truncatingIfNeeded: biased >> 24))
            out.append(UInt8(truncatingIfNeeded: biased >> 16))
            out.append(UInt8(truncatingIfNeeded: biased >> 8))
            out.append(UInt8(truncatingIfNeeded: biased))
            out.append(UInt8(truncatingIfNeeded: key.count))
            out.append(contentsOf: key)
        } else {
            out.append(stringTag)
            for b in key { out.append(b == 0xEE ? 0xF5 : (b == 0xEF ? 0xF6 : b)) }
            out.append(stringEnd)
        }
    }

    static func segment(_ key: String) -> [UInt8] {
        var out: [UInt8] = []
        append(key, to: &out)
        return out
    }

    /// True when `key` can be encoded exactly as a bound (a string segment must not contain
    /// the bytes that end it); keys of stored data always can.
    static func encodable(_ key: String) -> Bool {
        KeyOrder.intValue(key) != nil || !key.utf8.contains(where: { $0 < 0x20 })
    }

    /// The end (exclusive) of the segment starting at `start`, or `bytes.count` for malformed
    /// input (never read past the end).
    @inline(__always)
    static func segmentEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard start < bytes.count else { return bytes.count }
        if bytes[start] == intTag {
            guard start + 5 < bytes.count else { return bytes.count }
            return min(bytes.count, start + 6 + Int(bytes[start + 5]))
        }
        var i = start + 1
        while i < bytes.count, bytes[i] != stringEnd { i += 1 }
        return min(bytes.count, i + 1)
    }

    /// The key a segment stands for.
    static func key(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        guard range.count > 0 else { return "" }
        let start = range.lowerBound
        if bytes[start] == intTag {
            let from = min(range.upperBound, start + 6)
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<range.upperBound]), as: UTF8.self)
        }
        var end = range.upperBound
        if end > start + 1, bytes[end - 1] == stringEnd { end -= 1 }
        let body = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<end])
        if !body.contains(where: { $0 == 0xF5 || $0 == 0xF6 }) {
            return String(decoding: body, as: UTF8.self)
        }
        return String(decoding: body.map { $0 == 0xF5 ? 0xEE : ($0 == 0xF6 ? 0xEF : $0) }, as: UTF8.self)
    }

    /// The keys of an encoded path.
    static func keys(_ bytes: UnsafeBufferPointer<UInt8>) -> [String] {
        var out: [String] = []
        var i = 0
        while i < bytes.count {
            let end = segmentEnd(bytes, from: i)
            out.append(key(bytes, i..<end))
            i = end
        }
        return out
    }

    /// The smallest key greater than every key that starts with `enc` (its last byte plus one;
    /// encoded keys never end in 0xFF).
    static func successor(_ enc: [UInt8]) -> [UInt8] {
        var out = enc
        if let last = out.last {
            out[out.count - 1] = last &+ 1
        } else {
            out.append(tagLimit)
        }
        return out
    }

    /// The key range [lo, hi) holding every strict descendant of the encoded path.
    static func descendants(_ enc: [UInt8]) -> (lo: [UInt8], hi: [UInt8]) {
        (enc + [intTag], enc + [tagLimit])
    }

    /// The key range [lo, hi) holding the encoded path's own row and its descendants' (every
    /// key in it continues the path with a segment, and segments start with a tag).
    static func subtree(_ enc: [UInt8]) -> (lo: [UInt8], hi: [UInt8]) {
        (enc, enc + [tagLimit])
    }

    /// The schema-version-2 encoding (keys joined by `/`, as text) turned into this one.
    static func fromLegacy(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 8)
        var start = 0
        for i in 0...text.count where i == text.count || text[i] == UInt8(ascii: "/") {
            if i > start {
                append(String(decoding: UnsafeBufferPointer(rebasing: text[start..<i]), as: UTF8.self), to: &out)
            }
            start = i + 1
        }
        return out
    }
}
