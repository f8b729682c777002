import Testing
@testable import RTDBCore

@Suite("Node")
struct NodeTests {
    // MARK: normal form

    @Test("object(normalizing:) sorts by key order")
    func sorts() {
        let n = Node.object(normalizing: ["b", "a", "10", "9", "-0", "0", "é", "e\u{301}"].map { Node.Entry($0, .int(1)) })
        #expect(n.children.map { scalars($0.key) } == ["\"0\"", "\"-0\"", "\"9\"", "\"10\"", "\"a\"", "\"b\"",
                                                         "\"e\\u{301}\"", "\"\\u{e9}\""])
    }

    @Test("object(normalizing:) keeps the last duplicate, byte for byte")
    func duplicates() {
        let n = Node.object(normalizing: [.init("a", .int(1)), .init("b", .int(2)), .init("a", .int(3)),
                                          .init("\u{E9}", .int(4)), .init("e\u{301}", .int(5)), .init("\u{E9}", .int(6))])
        #expect(shape(n) == #"{"a":i3,"b":i2,"e\u{301}":i5,"\u{e9}":i6}"#)
    }

    @Test("object(normalizing:): a later null removes an earlier value")
    func laterNullWins() {
        let n = Node.object(normalizing: [.init("a", .int(1)), .init("b", .int(2)), .init("a", .null)])
        #expect(shape(n) == #"{"b":i2}"#)
        let m = Node.object(normalizing: [.init("a", .int(1)), .init("a", .null)])
        #expect(m.isNull)
        let k = Node.object(normalizing: [.init("a", .null), .init("a", .int(1))])
        #expect(shape(k) == #"{"a":i1}"#)
    }

    @Test("object(normalizing:) drops nulls; nothing left is null")
    func dropsNulls() {
        #expect(Node.object(normalizing: []).isNull)
        #expect(Node.object(normalizing: [.init("a", .null), .init("b", .null)]).isNull)
        #expect(shape(Node.object(normalizing: [.init("a", .null), .init("b", .bool(false))])) == #"{"b":false}"#)
        // Already-sorted input takes the fast path and still drops nulls.
        #expect(shape(Node.object(normalizing: [.init("a", .int(1)), .init("b", .null), .init("c", .int(3))])) == #"{"a":i1,"c":i3}"#)
    }

    @Test("isNull, isObject, children")
    func basics() {
        #expect(Node.null.isNull)
        #expect(!Node.int(0).isNull)
        #expect(!Node.string("").isNull)
        #expect(!Node.bool(false).isNull)
        #expect(Node.object([.init("a", .int(1))]).isObject)
        #expect(!Node.string("x").isObject)
        #expect(Node.int(3).children.isEmpty)
        #expect(Node.object([.init("a", .int(1))]).children.count == 1)
    }

    // MARK: reading

    static let tree: Node = {
        Node.object(normalizing: [
            .init("a", .object([.init("b", .object([.init("c", .int(1))])), .init("x", .string("y"))])),
            .init("10", .bool(true)),
            .init("9", .double(2.5)),
            .init("\u{E9}", .int(7)),
        ])
    }()

    @Test("child and child(at:)")
    func children() {
        let t = NodeTests.tree
        #expect(shape(t.child("10")) == "true")
        #expect(shape(t.child("9")) == "d2.5")
        #expect(shape(t.child("\u{E9}")) == "i7")
        #expect(t.child("e\u{301}").isNull)     // byte-exact lookup
        #expect(t.child("missing").isNull)
        #expect(shape(t.child(at: Path(validatedKeys: ["a", "b", "c"]))) == "i1")
        #expect(shape(t.child(at: Path(validatedKeys: ["a", "x"]))) == #"s"y""#)
        #expect(t.child(at: Path(validatedKeys: ["a", "x", "deeper"])).isNull)
        #expect(t.child(at: Path(validatedKeys: ["a", "zz", "c"])).isNull)
        #expect(shape(t.child(at: .root)) == shape(t))
        #expect(Node.int(1).child("a").isNull)
        #expect(Node.null.child(at: Path(validatedKeys: ["a"])).isNull)
    }

    @Test("child lookup finds every key of a large object")
    func search() {
        let ks = (0..<300).map { $0 % 3 == 0 ? String($0) : "k\($0)" }
        let n = Node.object(normalizing: ks.map { Node.Entry($0, .string($0)) })
        for k in ks { #expect(shape(n.child(k)) == "s" + scalars(k)) }
        #expect(n.child("k").isNull)
        #expect(n.child("1000").isNull)
    }

    // MARK: writing

    @Test("setting(child:) inserts in order, replaces, removes")
    func settingChild() {
        var n = Node.object([.init("b", .int(2))])
        n = n.setting(child: "10", to: .int(10))
        n = n.setting(child: "9", to: .int(9))
        n = n.setting(child: "c", to: .int(3))
        n = n.setting(child: "a", to: .int(1))
        #expect(keys(n.children) == ["9", "10", "a", "b", "c"])
        n = n.setting(child: "b", to: .string("B"))
        #expect(shape(n.child("b")) == #"s"B""#)
        n = n.setting(child: "b", to: .null)
        #expect(keys(n.children) == ["9", "10", "a", "c"])
        #expect(shape(n.setting(child: "zz", to: .null)) == shape(n))   // removing a missing child
        #expect(Node.object([.init("a", .int(1))]).setting(child: "a", to: .null).isNull)
        #expect(shape(Node.int(5).setting(child: "a", to: .int(1))) == #"{"a":i1}"#)   // a leaf becomes an object
        #expect(shape(Node.null.setting(child: "a", to: .int(1))) == #"{"a":i1}"#)
        #expect(Node.int(5).setting(child: "a", to: .null).isNull == false)
    }

    @Test("setting(_:to:) on paths creates, replaces and prunes")
    func settingPath() {
        let t = NodeTests.tree
        let p = { (s: [String]) in Path(validatedKeys: s) }
        let created = t.setting(p(["n", "e", "w"]), to: .int(1))
        #expect(shape(created.child(at: p(["n", "e", "w"]))) == "i1")
        #expect(shape(created.child("a")) == shape(t.child("a")))
        // Removing the only leaf prunes empty parents.
        let pruned = t.setting(p(["a", "b", "c"]), to: .null)
        #expect(pruned.child(at: p(["a", "b"])).isNull)
        #expect(shape(pruned.child("a")) == #"{"x":s"y"}"#)
        #expect(Node.object([.init("a", .object([.init("b", .int(1))]))]).setting(p(["a", "b"]), to: .null).isNull)
        // Replacing at the root.
        #expect(shape(t.setting(.root, to: .int(3))) == "i3")
        #expect(t.setting(.root, to: .null).isNull)
        // Writing below a leaf replaces the leaf by an object.
        #expect(shape(t.setting(p(["9", "z"]), to: .bool(true)).child("9")) == #"{"z":true}"#)
        // Removing something missing changes nothing.
        #expect(shape(t.setting(p(["q", "r"]), to: .null)) == shape(t))
        // The original is unchanged (value semantics).
        #expect(shape(t.child(at: p(["a", "b", "c"]))) == "i1")
    }

    @Test("leafCount")
    func leafCount() throws {
        #expect(Node.null.leafCount == 0)
        #expect(Node.int(1).leafCount == 1)
        #expect(Node.string("").leafCount == 1)
        #expect(NodeTests.tree.leafCount == 5)
        #expect(try node("[1,[2,3],{\"a\":{\"b\":4}}]").leafCount == 4)
    }

    // MARK: equality

    @Test("same(as:)", arguments: [
        (Node.int(1), Node.double(1.0), true),
        (.int(0), .double(-0.0), true),
        (.int(1), .double(1.5), false),
        (.int(Int64.max), .double(9223372036854775807.0), false),   // 2^63 ≠ 2^63 - 1
        (.int(9007199254740993), .double(9007199254740992.0), false),
        (.string("\u{E9}"), .string("e\u{301}"), false),
        (.string("x"), .string("x"), true),
        (.bool(true), .int(1), false),
        (.bool(false), .null, false),
        (.null, .null, true),
        (.string("1"), .int(1), false),
        (.object([.init("a", .int(1))]), .object([.init("a", .double(1.0))]), true),
        (.object([.init("a", .int(1))]), .object([.init("a", .int(2))]), false),
        (.object([.init("a", .int(1))]), .object([.init("b", .int(1))]), false),
        (.object([.init("\u{E9}", .int(1))]), .object([.init("e\u{301}", .int(1))]), false),
        (.object([.init("a", .int(1))]), .object([.init("a", .int(1)), .init("b", .int(1))]), false),
        (.object([.init("a", .int(1))]), .int(1), false),
    ] as [(Node, Node, Bool)])
    func same(a: Node, b: Node, expected: Bool) {
        #expect(a.same(as: b) == expected)
        #expect(b.same(as: a) == expected)
    }

    // MARK: NumberOrder

    @Test("NumberOrder compares ints and doubles exactly", arguments: [
        (Node.int(1), Node.double(1.0), 0),
        (.int(Int64.max), .double(9223372036854775807.0), -1),    // the double is 2^63
        (.int(Int64.min), .double(-9223372036854775808.0), 0),
        (.int(9007199254740993), .double(9007199254740992.0), 1),
        (.double(9007199254740992.0), .int(9007199254740993), -1),
        (.int(-1), .double(-0.5), -1),
        (.int(0), .double(-0.0), 0),
        (.int(0), .double(.leastNonzeroMagnitude), -1),
        (.int(0), .double(-.leastNonzeroMagnitude), 1),
        (.int(5), .double(4.999999), 1),
        (.int(-5), .double(-4.999999), -1),
        (.double(1e300), .int(Int64.max), 1),
        (.double(-1e300), .int(Int64.min), -1),
        (.double(-9223372036854777856.0), .int(Int64.min), -1),  // next double below -2^63
        (.int(3), .int(4), -1),
        (.int(4), .int(4), 0),
        (.double(1.5), .double(1.5), 0),
        (.double(-2.5), .double(1.5), -1),
    ] as [(Node, Node, Int)])
    func numberOrder(a: Node, b: Node, expected: Int) {
        #expect(sign(NumberOrder.compare(a, b)) == expected)
        #expect(sign(NumberOrder.compare(b, a)) == -expected)
    }
}
