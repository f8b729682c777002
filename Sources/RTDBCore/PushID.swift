/// Push ID generation: 8 characters of millisecond time, most significant
/// first, then 12 random characters, all from an alphabet in ascending ASCII order, so IDs sort
/// chronologically as plain strings. Within one millisecond the random part is incremented, so
/// IDs from one generator are strictly increasing. Clock and randomness are injected.
public struct PushIDGenerator: Sendable {
    public static let alphabet: [UInt8] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    var lastTime: Int64 = -1
    var lastRandom: [UInt8] = Array(repeating: 0, count: 12)
    let random: @Sendable () -> UInt64

    /// `random` returns uniformly random bits; the default uses the system generator.
    public init(random: @escaping @Sendable () -> UInt64 = { UInt64.random(in: .min ... .max) }) {
        self.random = random
    }

    /// The next ID for the given time (milliseconds since the Unix epoch).
    public mutating func next(now: Int64) -> String {
        // A clock that steps back must not break the ordering within this generator.
        let time = max(now, lastTime)
        if time == lastTime {
            var i = 11
            while i >= 0 {
                if lastRandom[i] == 63 { lastRandom[i] = 0; i -= 1 } else { lastRandom[i] += 1; break }
            }
            if i < 0 {
                // All 64^12 values used in one millisecond: move on to the next millisecond.
                return nextAfterOverflow(time + 1)
            }
        } else {
            fillRandom()
        }
        lastTime = time
        return render(time)
    }

    private mutating func nextAfterOverflow(_ time: Int64) -> String {
        fillRandom()
        lastTime = time
        return render(time)
    }

    private mutating func fillRandom() {
        var bits = random()
        for i in 0..<12 {
            if i == 10 { bits = random() }
            lastRandom[i] = UInt8(bits & 63)
            bits >>= 6
        }
    }

    private func render(_ time: Int64) -> String {
        var chars = [UInt8](repeating: 0, count: 20)
        var t = time
        for i in stride(from: 7, through: 0, by: -1) {
            chars[i] = PushIDGenerator.alphabet[Int(t & 63)]
            t >>= 6
        }
        for i in 0..<12 { chars[8 + i] = PushIDGenerator.alphabet[Int(lastRandom[i])] }
        return String(decoding: chars, as: UTF8.self)
    }

    /// The millisecond time encoded in a push ID, or nil when `id` is not one.
    public static func time(of id: String) -> Int64? {
        let u = Array(id.utf8)
        guard u.count == 20 else { return nil }
        var t: Int64 = 0
        for c in u[0..<8] {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            t = t * 64 + Int64(v)
        }
        return t
    }
}
