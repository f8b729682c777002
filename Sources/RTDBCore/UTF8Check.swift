/// Whether bytes are well-formed UTF-8 by Unicode's table of well-formed byte sequences (no
/// overlong forms, no surrogates, nothing past U+10FFFF), checked in place without making a
/// string: `JSONReader` checks every string it reads with it, whether it then makes a `String`
/// of the bytes or keeps them as bytes (`FlatValue`).
enum UTF8Check {
    static func isValid(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = b.count
        var i = 0
        while i < n {
            let c = b[i]
            if c < 0x80 { i += 1; continue }
            if c < 0xC2 { return false }   // a continuation byte, or an overlong two-byte form
            if c < 0xE0 {
                guard i + 1 < n, follows(b[i + 1]) else { return false }
                i += 2
            } else if c < 0xF0 {
                guard i + 2 < n else { return false }
                // E0 needs A0 and up (no overlong form), ED at most 9F (no surrogate).
                let low: UInt8 = c == 0xE0 ? 0xA0 : 0x80, high: UInt8 = c == 0xED ? 0x9F : 0xBF
                guard b[i + 1] >= low, b[i + 1] <= high, follows(b[i + 2]) else { return false }
                i += 3
            } else if c < 0xF5 {
                guard i + 3 < n else { return false }
                // F0 needs 90 and up (no overlong form), F4 at most 8F (nothing past U+10FFFF).
                let low: UInt8 = c == 0xF0 ? 0x90 : 0x80, high: UInt8 = c == 0xF4 ? 0x8F : 0xBF
                guard b[i + 1] >= low, b[i + 1] <= high, follows(b[i + 2]), follows(b[i + 3]) else { return false }
                i += 4
            } else {
                return false
            }
        }
        return true
    }

    /// A continuation byte: 10xxxxxx.
    @inline(__always)
    private static func follows(_ c: UInt8) -> Bool { c & 0xC0 == 0x80 }
}
