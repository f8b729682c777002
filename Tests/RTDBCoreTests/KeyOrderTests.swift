import Testing
@testable import RTDBCore

@Suite("KeyOrder")
struct KeyOrderTests {
    // MARK: integer keys (Android/iOS rule: 1–11 chars, optional '-', digits, int32)

    @Test("keys that are 32-bit integers", arguments: [
        ("0", Int32(0)), ("-0", 0), ("7", 7), ("07", 7), ("007", 7), ("10", 10),
        ("-5", -5), ("2147483647", Int32.max), ("-2147483648", Int32.min),
        ("00000000001", 1),          // 11 characters: still an integer key
        ("-0000000001", -1),         // 11 characters with the sign
        ("02147483647", Int32.max),  // leading zero, 11 chars
    ])
    func intKeys(key: String, value: Int32) {
        #expect(KeyOrder.intValue(key) == value)
    }

    @Test("keys that are not 32-bit integers", arguments: [
        "", "-", "--1", "+1", " 1", "1 ", "1.0", "1e3", "0x1", "1-", "abc", "a1",
        "2147483648", "-2147483649", "99999999999",
        "000000000001",   // 12 characters: too long under the Android/iOS rule
        "-00000000001",   // 12 characters
        "١",              // ARABIC-INDIC DIGIT ONE is not an ASCII digit
        "１",             // FULLWIDTH DIGIT ONE
        "-MabcDEFghiJKLmnoPQR",
    ])
    func nonIntKeys(key: String) {
        #expect(KeyOrder.intValue(key) == nil)
    }

    // MARK: the worked example

    static let workedExample = [
        "-2147483648", "-5", "0", "-0", "7", "07", "10", "2147483647", "-", "-MabcDEFghiJKLmnoPQR",
        "2147483648", "A", "Z", "_x", "a", "é",
    ]

    @Test("the key-order worked example sorts in exactly the documented order")
    func workedExampleOrder() {
        let expected = KeyOrderTests.workedExample
        let inputs = [
            expected.reversed(),
            expected.shuffledDeterministically(seed: 1),
            expected.shuffledDeterministically(seed: 2),
            expected.shuffledDeterministically(seed: 3),
        ]
        for input in inputs {
            #expect(input.sorted(by: KeyOrder.less) == expected)
            #expect(input.map(SortableKey.init).sorted { SortableKey.compare($0, $1) < 0 }.map(\.key) == expected)
        }
    }

    @Test("the key-order worked example: every pair compares consistently")
    func workedExamplePairs() {
        let list = KeyOrderTests.workedExample
        for i in list.indices {
            #expect(KeyOrder.compare(list[i], list[i]) == 0)
            for j in list.indices where i < j {
                #expect(KeyOrder.compare(list[i], list[j]) < 0, "\(list[i]) < \(list[j])")
                #expect(KeyOrder.compare(list[j], list[i]) > 0, "\(list[j]) > \(list[i])")
            }
        }
    }

    @Test("pairs in ascending order", arguments: [
        ("0", "-0"),          // -0 is the integer 0, longer spelling second
        ("7", "07"), ("07", "007"),
        ("9", "10"),          // numeric, not lexicographic
        ("-10", "-9"),
        ("-1", "0"),
        ("2147483647", "-"),  // any integer key before any string key
        ("99", "1a"),
        ("2147483647", "2147483648"),   // the second is a string key
        ("00000000001", "000000000001"), // 11-char int key before the 12-char string key
        ("-", "-M"),
        ("Z", "_x"), ("_x", "a"), ("a", "b"), ("a", "aa"), ("A", "a"),
        ("a", "é"),
        ("e\u{301}", "é"),    // 'e' (U+0065) before U+00E9
    ])
    func ascendingPairs(a: String, b: String) {
        #expect(KeyOrder.compare(a, b) < 0)
        #expect(KeyOrder.compare(b, a) > 0)
        #expect(KeyOrder.less(a, b))
        #expect(!KeyOrder.less(b, a))
        #expect(SortableKey.compare(SortableKey(a), SortableKey(b)) < 0)
        #expect(SortableKey.compare(SortableKey(b), SortableKey(a)) > 0)
    }

    // MARK: UTF-16 code-unit order

    @Test("string keys compare by UTF-16 code units, not code points", arguments: [
        ("\u{1F600}", "\u{FF61}"),   // surrogate 0xD83D < 0xFF61, though U+1F600 > U+FF61
        ("\u{10000}", "\u{E000}"),   // first supplementary char before the private use area
        ("\u{10FFFF}", "\u{FFFF}"),
        ("a\u{1F600}", "a\u{FFFD}"),
        ("\u{D7FF}", "\u{10000}"),   // just below the surrogate block stays first
        ("\u{FFFF}", "\u{FFFF}a"),   // prefix first
    ])
    func utf16Order(a: String, b: String) {
        #expect(KeyOrder.compare(a, b) < 0)
        #expect(KeyOrder.compare(b, a) > 0)
        #expect(KeyOrder.compareUTF16(a, b) < 0)
        #expect(utf16Sign(a, b) < 0)   // the oracle agrees
    }

    @Test("Swift's own String order differs from UTF-16 order here (why KeyOrder exists)")
    func swiftOrderDiffers() {
        #expect("\u{FF61}" < "\u{1F600}")
        #expect(KeyOrder.less("\u{1F600}", "\u{FF61}"))
    }

    @Test("compareUTF16 agrees with a UTF-16 oracle on a mixed pool")
    func utf16Oracle() {
        let pool = ["", "a", "A", "z", "~", "\u{7F}", "\u{80}", "é", "e\u{301}", "\u{7FF}", "\u{800}",
                    "\u{D7FF}", "\u{E000}", "\u{F8FF}", "\u{FB01}", "\u{FF61}", "\u{FFFD}", "\u{FFFF}",
                    "\u{10000}", "\u{1F600}", "\u{1F600}a", "\u{10FFFF}", "ab", "a\u{E000}", "a\u{10000}",
                    "\u{E000}\u{10000}", "\u{10000}\u{E000}", "日本", "日本語", "Ω", "-", "_"]
        for a in pool {
            for b in pool {
                #expect(sign(KeyOrder.compareUTF16(a, b)) == utf16Sign(a, b), "\(scalars(a)) vs \(scalars(b))")
            }
        }
    }

    // MARK: byte-for-byte identity

    @Test("canonically equivalent keys stay distinct")
    func canonicalEquivalence() {
        let composed = "\u{E9}", decomposed = "e\u{301}"
        #expect(composed == decomposed)             // Swift's == merges them…
        #expect(!KeyOrder.same(composed, decomposed)) // …KeyOrder does not
        #expect(KeyOrder.compare(composed, decomposed) != 0)
        #expect(KeyOrder.compare(decomposed, composed) < 0)
        #expect(KeyOrder.same(composed, "\u{E9}"))
        #expect(SortableKey.compare(SortableKey(composed), SortableKey(decomposed)) > 0)
    }

    @Test("compare is zero only for byte-identical keys")
    func zeroOnlyForIdentical() {
        let pool = KeyOrderTests.workedExample + ["00", "000", "-00", "e\u{301}", "Å", "A\u{30A}", "\u{212B}"]
        for a in pool {
            for b in pool {
                let c = KeyOrder.compare(a, b)
                #expect((c == 0) == KeyOrder.same(a, b), "\(scalars(a)) vs \(scalars(b))")
                #expect(sign(c) == -sign(KeyOrder.compare(b, a)))
                #expect(sign(c) == sign(SortableKey.compare(SortableKey(a), SortableKey(b))))
            }
        }
    }

    @Test("compare is transitive over a mixed pool")
    func transitivity() {
        let pool = KeyOrderTests.workedExample + ["00", "-00", "1", "01", "11", "\u{FF61}", "\u{1F600}", "", "b"]
        let sorted = pool.sorted(by: KeyOrder.less)
        for i in sorted.indices.dropFirst() {
            #expect(KeyOrder.compare(sorted[i - 1], sorted[i]) < 0)
        }
        for a in pool { for b in pool { for c in pool
            where KeyOrder.compare(a, b) < 0 && KeyOrder.compare(b, c) < 0 {
            #expect(KeyOrder.compare(a, c) < 0)
        } } }
    }

    @Test("push IDs sort like plain strings")
    func pushIDsArePlainStrings() {
        let ids = ["-Nx3aaaaaaaaaaaaaaaa", "-Nx3aaaaaaaaaaaaaaab", "-Nx4aaaaaaaaaaaaaaaa", "-NyAAAAAAAAAAAAAAAAA"]
        for i in ids.indices.dropFirst() {
            #expect(KeyOrder.intValue(ids[i]) == nil)
            #expect(KeyOrder.less(ids[i - 1], ids[i]))
        }
    }
}

extension Array {
    /// A fixed permutation derived from `seed` (Fisher–Yates with SplitMix64).
    func shuffledDeterministically(seed: UInt64) -> [Element] {
        var out = self
        let rng = SplitMix64(seed: seed)
        if out.count < 2 { return out }
        for i in stride(from: out.count - 1, to: 0, by: -1) {
            let j = Int(rng.next() % UInt64(i + 1))
            out.swapAt(i, j)
        }
        return out
    }
}
