/// Firebase key ordering (the Android/iOS rule):
/// keys that parse as 32-bit integers (1–11 characters, optional leading `-`, digits only) come
/// first in numeric order, a shorter spelling first when the numbers tie (`"7"` < `"07"`); every
/// other key follows in UTF-16 code-unit order. Two byte-different keys never compare equal.
public enum KeyOrder {
    /// The 32-bit integer a key stands for under the Android/iOS rule, or nil.
    @inline(__always)
    public static func intValue(_ key: String) -> Int32? {
        let utf8 = key.utf8
        if let fast = utf8.withContiguousStorageIfAvailable({ intValue(bytes: $0) }) { return fast }
        return intValue(bytes: Array(utf8))
    }

    /// (Inlinable: other modules call it with their byte buffers, and an unspecialized generic
    /// call goes through the protocol for every byte.)
    @inlinable
    public static func intValue<C: Collection>(bytes: C) -> Int32? where C.Element == UInt8 {
        let n = bytes.count
        if n == 0 || n > 11 { return nil }
        var i = bytes.startIndex
        var negative = false
        if bytes[i] == UInt8(ascii: "-") {
            if n == 1 { return nil }
            negative = true
            i = bytes.index(after: i)
        }
        var value: Int64 = 0
        while i != bytes.endIndex {
            let c = bytes[i]
            if c < 48 || c > 57 { return nil }
            value = value * 10 + Int64(c - 48)
            i = bytes.index(after: i)
        }
        if negative { value = -value }
        if value < Int64(Int32.min) || value > Int64(Int32.max) { return nil }
        return Int32(value)
    }

    /// Three-way comparison of two keys: negative, zero (only for byte-identical keys) or positive.
    public static func compare(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in compare(bytes: pa, intValue(bytes: pa), pb, intValue(bytes: pb)) } }
    }

    /// `compare` on the UTF-8 bytes of two keys and their integer readings (`intValue`), for
    /// callers that hold keys as bytes and read each key's integer once.
    @inline(__always)
    public static func compare(bytes a: UnsafeBufferPointer<UInt8>, _ ia: Int32?,
                               _ b: UnsafeBufferPointer<UInt8>, _ ib: Int32?) -> Int {
        switch (ia, ib) {
        case let (x?, y?):
            if x != y { return x < y ? -1 : 1 }
            if a.count != b.count { return a.count < b.count ? -1 : 1 }
            return compareUTF16(bytes: a, b)
        case (.some, .none): return -1
        case (.none, .some): return 1
        case (.none, .none): return compareUTF16(bytes: a, b)
        }
    }

    @inline(__always)
    public static func less(_ a: String, _ b: String) -> Bool { compare(a, b) < 0 }

    /// Lexicographic comparison by UTF-16 code units, computed on the UTF-8 bytes: UTF-8 byte
    /// order equals code-point order, which differs from UTF-16 order only in that U+E000–U+FFFF
    /// (lead bytes 0xEE, 0xEF) sort after the supplementary planes (lead bytes 0xF0–0xF4).
    public static func compareUTF16(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in compareUTF16(bytes: pa, pb) } }
    }

    @inline(__always)
    static func remap(_ byte: UInt8) -> UInt8 {
        byte == 0xEE ? 0xF5 : (byte == 0xEF ? 0xF6 : byte)
    }

    public static func compareUTF16(bytes a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i < n {
            let x = a[i], y = b[i]
            if x != y {
                let rx = remap(x), ry = remap(y)
                return rx < ry ? -1 : 1
            }
            i += 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// Byte-for-byte key equality (Swift's `==` on String uses canonical equivalence, which
    /// would merge keys that Firebase keeps apart).
    @inlinable
    public static func same(_ a: String, _ b: String) -> Bool {
        if a.utf8.count != b.utf8.count { return false }
        // Native strings' bytes compared in place, by index (`elementsEqual` walks iterators,
        // several times slower on the short keys paths are made of); others one by one.
        let inPlace = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                var i = 0
                while i < pa.count {
                    if pa[i] != pb[i] { return false }
                    i += 1
                }
                return true
            }
        }
        if let inPlace, let result = inPlace { return result }
        return a.utf8.elementsEqual(b.utf8)
    }
}

/// A key with its integer reading computed once, for sorting many keys quickly.
public struct SortableKey: Sendable {
    public let key: String
    let int: Int64   // Int64.max marks "not an integer key"

    public init(_ key: String) {
        self.key = key
        if let v = KeyOrder.intValue(key) { int = Int64(v) } else { int = Int64.max }
    }

    public static func compare(_ a: SortableKey, _ b: SortableKey) -> Int {
        if a.int != Int64.max || b.int != Int64.max {
            if a.int != b.int { return a.int < b.int ? -1 : 1 }
            let la = a.key.utf8.count, lb = b.key.utf8.count
            if la != lb { return la < lb ? -1 : 1 }
        }
        return KeyOrder.compareUTF16(a.key, b.key)
    }
}
