import Testing
@testable import RTDBCore

@Suite("PushIDGenerator")
struct PushIDTests {
    static let alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

    static func seeded(_ seed: UInt64) -> PushIDGenerator {
        let rng = SplitMix64(seed: seed)
        return PushIDGenerator(random: { rng.next() })
    }

    static func constant(_ bits: UInt64) -> PushIDGenerator {
        PushIDGenerator(random: { bits })
    }

    @Test("the alphabet: 64 characters in ascending ASCII order")
    func alphabet() {
        #expect(String(decoding: PushIDGenerator.alphabet, as: UTF8.self) == PushIDTests.alphabet)
        #expect(PushIDGenerator.alphabet.count == 64)
        for i in 1..<64 { #expect(PushIDGenerator.alphabet[i - 1] < PushIDGenerator.alphabet[i]) }
    }

    @Test("IDs are 20 characters from the alphabet")
    func shape() {
        var g = PushIDTests.seeded(42)
        let allowed = Set(PushIDTests.alphabet.utf8)
        for t in [Int64(0), 1, 1_700_000_000_000, 281_474_976_710_655] {
            for _ in 0..<50 {
                let id = g.next(now: t)
                #expect(id.utf8.count == 20)
                #expect(id.utf8.allSatisfy(allowed.contains))
                #expect(KeyOrder.intValue(id) == nil)
            }
        }
    }

    @Test("the time part is big-endian base 64", arguments: [
        (Int64(0), "--------"), (1, "-------0"), (63, "-------z"), (64, "------0-"), (65, "------00"),
        (4095, "------zz"), (4096, "-----0--"),
        (1_331_866_477_696, "-INOQPH-"),       // from the spec's "-INOQPH-aV_psbk3ZXEX"
        (1_700_000_000_000, "-NjEtLV-"),
        (281_474_976_710_655, "zzzzzzzz"),     // 2^48 - 1
    ])
    func timePart(now: Int64, prefix: String) {
        var g = PushIDTests.constant(0)
        let id = g.next(now: now)
        #expect(id == prefix + "------------")
        #expect(PushIDGenerator.time(of: id) == now)
    }

    @Test("the random part takes 6 bits per character, least significant first")
    func randomPart() {
        // Bits 6i..6i+5 hold i+1, so characters 0…9 are alphabet[1…10]; the last two come from
        // a second call, which here returns the same bits: alphabet[1], alphabet[2].
        var bits: UInt64 = 0
        for i in 0..<10 { bits |= UInt64(i + 1) << (6 * UInt64(i)) }
        var g = PushIDTests.constant(bits)
        #expect(g.next(now: 0) == "--------" + "0123456789" + "01")
        var z = PushIDTests.constant(.max)
        #expect(z.next(now: 0) == "--------" + "zzzzzzzzzzzz")
    }

    @Test("within one millisecond the random part counts up by one")
    func sameMillisecond() {
        var g = PushIDTests.constant(0)
        #expect(g.next(now: 5) == "-------4------------")
        #expect(g.next(now: 5) == "-------4-----------0")
        #expect(g.next(now: 5) == "-------4-----------1")
    }

    @Test("the increment carries from the last character")
    func carry() {
        // bits = 63 << 6: characters 1 and 11 are 'z', the rest '-'.
        var g = PushIDTests.constant(63 << 6)
        #expect(g.next(now: 0) == "--------" + "-z---------z")
        #expect(g.next(now: 0) == "--------" + "-z--------0-")
        #expect(g.next(now: 0) == "--------" + "-z--------00")
    }

    @Test("exhausting a millisecond moves to the next one, keeping order")
    func overflow() {
        var g = PushIDTests.constant(.max)
        let a = g.next(now: 1000)
        let b = g.next(now: 1000)
        #expect(a == "------Ec" + "zzzzzzzzzzzz")
        #expect(PushIDGenerator.time(of: b) == 1001)
        #expect(a < b)
        #expect(KeyOrder.less(a, b))
    }

    @Test("10,000 IDs with the same now are strictly increasing")
    func manySameMillisecond() {
        var g = PushIDTests.seeded(7)
        var ids: [String] = []
        for _ in 0..<10_000 { ids.append(g.next(now: 1_700_000_000_000)) }
        #expect(Set(ids).count == 10_000)
        var ordered = true
        for i in ids.indices.dropFirst() {
            if !(Array(ids[i - 1].utf8).lexicographicallyPrecedes(Array(ids[i].utf8)))
                || KeyOrder.compare(ids[i - 1], ids[i]) >= 0 {
                ordered = false
                Issue.record("not increasing at \(i): \(ids[i - 1]) then \(ids[i])")
                break
            }
        }
        #expect(ordered)
        #expect(ids.allSatisfy { $0.hasPrefix("-NjEtLV-") })
        #expect(ids.allSatisfy { PushIDGenerator.time(of: $0) == 1_700_000_000_000 })
    }

    @Test("IDs are chronological across times, whatever the random part")
    func chronological() {
        // Adversarial randomness: the earlier ID gets the largest random part, the later the smallest.
        let seq = Sequence64([.max, .max, 0, 0])
        var g = PushIDGenerator(random: { seq.next() })
        let times: [Int64] = [0, 1, 63, 64, 4095, 4096, 1_331_866_477_696, 1_700_000_000_000,
                              1_700_000_000_001, 281_474_976_710_655]
        let ids = times.map { g.next(now: $0) }
        for i in ids.indices.dropFirst() {
            #expect(ids[i - 1] < ids[i], "\(ids[i - 1]) < \(ids[i])")
            #expect(KeyOrder.less(ids[i - 1], ids[i]))
        }
        #expect(ids.map { PushIDGenerator.time(of: $0)! } == times)
    }

    @Test("a clock stepping back does not break the order")
    func clockBack() {
        var g = PushIDTests.seeded(3)
        let a = g.next(now: 100)
        let b = g.next(now: 50)
        #expect(a < b)
        #expect(PushIDGenerator.time(of: b) == 100)
    }

    @Test("the same seed gives the same IDs; different seeds differ")
    func deterministic() {
        var g1 = PushIDTests.seeded(99), g2 = PushIDTests.seeded(99), g3 = PushIDTests.seeded(100)
        let a = (0..<5).map { g1.next(now: 1000 + Int64($0)) }
        let b = (0..<5).map { g2.next(now: 1000 + Int64($0)) }
        let c = (0..<5).map { g3.next(now: 1000 + Int64($0)) }
        #expect(a == b)
        #expect(a != c)
    }

    @Test("the default generator is random")
    func defaultRandom() {
        var g1 = PushIDGenerator(), g2 = PushIDGenerator()
        let a = g1.next(now: 1), b = g2.next(now: 1)
        #expect(a.hasPrefix("-------0") && b.hasPrefix("-------0"))
        #expect(a != b)   // 72 random bits: a collision is practically impossible
    }

    @Test("time(of:) rejects what is not a push ID", arguments: [
        "", "-------", "--------------------x", "!-------------------", "-------.------------", "-INOQPH-aV_psbk3ZXE",
    ])
    func notPushIDs(id: String) {
        #expect(PushIDGenerator.time(of: id) == nil)
    }

    @Test("time(of:) reads the spec's example ID")
    func specExample() {
        #expect(PushIDGenerator.time(of: "-INOQPH-aV_psbk3ZXEX") == 1_331_866_477_696)
    }
}
