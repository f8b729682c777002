/// SHA-1 (FIPS 180-4) over bytes, for Firebase's node hash. Not for security: Firebase uses it
/// only to tell data versions apart, and so do we.
///
/// Incremental: `update` any number of times, then `finish` once for the 20-byte digest.
public struct SHA1: Sendable {
    private var h: (UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    private var block: [UInt8] = []
    private var length: UInt64 = 0
    /// The message schedule, kept to avoid an allocation per block.
    private var w: [UInt32] = []

    public init() { block.reserveCapacity(64) }

    /// The digest of `bytes` in one call.
    public static func digest<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        var s = SHA1()
        s.update(bytes)
        return s.finish()
    }

    public mutating func update<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        length &+= UInt64(bytes.count)
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            var i = 0
            // Whole blocks straight from the input once no partial block is pending.
            while i < buffer.count {
                if block.isEmpty && buffer.count - i >= 64 {
                    compress(UnsafeBufferPointer(rebasing: buffer[i..<(i + 64)]))
                    i += 64
                    continue
                }
                let n = min(64 - block.count, buffer.count - i)
                block.append(contentsOf: buffer[i..<(i + n)])
                i += n
                if block.count == 64 { flushBlock() }
            }
        }
        if done == nil {
            for b in bytes {
                block.append(b)
                if block.count == 64 { flushBlock() }
            }
        }
    }

    private mutating func flushBlock() {
        let copy = block
        copy.withUnsafeBufferPointer { compress($0) }
        block.removeAll(keepingCapacity: true)
    }

    /// Pads, processes the last block(s) and returns the digest (big-endian words).
    public mutating func finish() -> [UInt8] {
        let bits = length &* 8
        block.append(0x80)
        if block.count > 56 {
            while block.count < 64 { block.append(0) }
            flushBlock()
        }
        while block.count < 56 { block.append(0) }
        for i in (0..<8).reversed() { block.append(UInt8(truncatingIfNeeded: bits >> (UInt64(i) * 8))) }
        flushBlock()
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for word in [h.0, h.1, h.2, h.3, h.4] {
            out.append(UInt8(truncatingIfNeeded: word >> 24))
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            out.append(UInt8(truncatingIfNeeded: word >> 8))
            out.append(UInt8(truncatingIfNeeded: word))
        }
        return out
    }

    /// Processes one 64-byte block.
    private mutating func compress(_ block: UnsafeBufferPointer<UInt8>) {
        if w.count != 80 { w = [UInt32](repeating: 0, count: 80) }
        for i in 0..<16 {
            w[i] = UInt32(block[i * 4]) << 24 | UInt32(block[i * 4 + 1]) << 16
                | UInt32(block[i * 4 + 2]) << 8 | UInt32(block[i * 4 + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = x << 1 | x >> 31
        }
        var (a, b, c, d, e) = h
        for i in 0..<80 {
            let f: UInt32, k: UInt32
            switch i {
            case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
            case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
            case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
            default: f = b ^ c ^ d; k = 0xCA62_C1D6
            }
            let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
            e = d
            d = c
            c = b << 30 | b >> 2
            b = a
            a = t
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}

/// Base64 with the standard alphabet and `=` padding (RFC 4648 §4).
public enum Base64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let a = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((a.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= a.count {
            let n = UInt32(a[i]) << 16 | UInt32(a[i + 1]) << 8 | UInt32(a[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = a.count - i
        if rest > 0 {
            let n = UInt32(a[i]) << 16 | (rest == 2 ? UInt32(a[i + 1]) << 8 : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
