import Testing
@testable import RTDBCore

@Suite("ValueOrder")
struct ValueOrderTests {
    @Test("type ranks: null < false < true < numbers < strings < objects", arguments: [
        (Node.null, 0), (.bool(false), 1), (.bool(true), 2), (.int(-5), 3), (.double(1.5), 3),
        (.string(""), 4), (.object([.init("a", .int(1))]), 5),
    ])
    func ranks(value: Node, rank: Int) {
        #expect(ValueOrder.rank(value) == rank)
    }

    /// (a, b, expected sign of compare(a, b))
    static let comparisons: [(Node, Node, Int)] = [
        (.null, .bool(false), -1),
        (.bool(false), .bool(true), -1),
        (.bool(true), .int(Int64.min), -1),
        (.bool(true), .double(-1e300), -1),
        (.int(Int64.max), .string(""), -1),
        (.double(1e300), .string(""), -1),
        (.string("\u{10FFFF}"), .object([.init("a", .null)]), -1),
        (.null, .null, 0),
        (.bool(true), .bool(true), 0),
        (.bool(false), .bool(false), 0),
        (.int(1), .double(1.0), 0),           // ints and doubles mix; 1 == 1.0
        (.int(0), .double(-0.0), 0),
        (.int(2), .double(1.5), 1),
        (.double(1.5), .int(2), -1),
        (.int(-3), .int(2), -1),
        (.double(-0.5), .double(-0.25), -1),
        (.int(Int64.max), .double(9223372036854775807.0), -1),  // the double is 2^63
        (.int(9007199254740993), .double(9007199254740992.0), 1),  // 2^53 + 1 vs 2^53, exact
        (.string("a"), .string("b"), -1),
        (.string("Z"), .string("a"), -1),
        (.string(""), .string("a"), -1),
        (.string("10"), .string("9"), -1),   // strings are not keys: no integer rule
        (.string("\u{1F600}"), .string("\u{FF61}"), -1),   // UTF-16 code units
        (.string("e\u{301}"), .string("\u{E9}"), -1),      // byte-different strings differ
        (.string("x"), .string("x"), 0),
        (.object([.init("a", .int(1))]), .object([.init("b", .int(2))]), 0),   // all objects equal
        (.object([.init("z", .string("z"))]), .object([.init("a", .bool(false))]), 0),
    ]

    @Test("compare", arguments: ValueOrderTests.comparisons)
    func compare(a: Node, b: Node, expected: Int) {
        #expect(sign(ValueOrder.compare(a, b)) == expected)
        #expect(sign(ValueOrder.compare(b, a)) == -expected)
    }

    @Test("worked example: orderByChild(\"h\")")
    func workedExample() throws {
        let data = try node(#"""
            {"a":{"h":3},"b":{"h":"x"},"c":{},"d":{"h":true},"e":{"h":3},"f":{"h":{"z":1}},"g":{"h":false},"5":{"h":3}}
            """#)
        // c:{} is no data; the spec lists it as a child whose "h" is missing. Put it back as a
        // child that exists but lacks "h".
        let withC = data.setting(child: "c", to: .object([.init("other", .int(1))]))
        let q = Query(order: .child(Path(validatedKeys: ["h"])))
        let children = withC.children
        let sorted = children.sorted { q.compare($0.key, $0.node, $1.key, $1.node) < 0 }
        #expect(keys(sorted) == ["c", "g", "d", "5", "a", "e", "b", "f"])
    }

    @Test("objects tie and fall back to key order (integer keys first)")
    func objectsByKey() {
        let q = Query(order: .value)
        let entries: [Node.Entry] = [
            .init("b", .object([.init("x", .int(9))])),
            .init("10", .object([.init("x", .int(1))])),
            .init("a", .object([.init("y", .int(5))])),
            .init("9", .object([.init("z", .int(0))])),
        ]
        let sorted = entries.sorted { q.compare($0.key, $0.node, $1.key, $1.node) < 0 }
        #expect(keys(sorted) == ["9", "10", "a", "b"])
    }

    @Test("numbers sort numerically across ints and doubles")
    func mixedNumbers() {
        let values: [Node] = [.double(2.5), .int(-1), .int(Int64.max), .double(-0.5), .int(2),
                              .double(1e19), .int(Int64.min), .double(-1e19), .double(0.0), .int(3)]
        let sorted = values.sorted { ValueOrder.compare($0, $1) < 0 }
        #expect(sorted.map(shape) == ["d-1e+19", "i-9223372036854775808", "i-1", "d-0.5", "d0.0",
                                      "i2", "d2.5", "i3", "i9223372036854775807", "d1e+19"])
    }
}
