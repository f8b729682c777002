import Testing
@testable import RTDBCore

// Priorities across Core: the node wrapper, `.priority`
// paths, validation, the export form, priority order and server values as priorities.

private func exportJSON(_ n: Node) -> String { JSONWriter.string(n, export: true) }

@Suite("Priorities")
struct PriorityTests {
    // MARK: Node

    @Test("setting a path that ends in .priority sets that node's priority, not a child")
    func settingAPriorityPath() throws {
        let tree = try JSONReader.parse(#"{"a":{"b":3},"n":5}"#)
        let one = tree.setting(try Path("/n/.priority"), to: .int(7))
        #expect(exportJSON(one) == #"{"a":{"b":3},"n":{".value":5,".priority":7}}"#)
        let two = one.setting(try Path("/a/.priority"), to: .string("p"))
        #expect(exportJSON(two) == #"{"a":{"b":3,".priority":"p"},"n":{".value":5,".priority":7}}"#)
        #expect(exportJSON(two.setting(try Path("/n/.priority"), to: .null)) == #"{"a":{"b":3,".priority":"p"},"n":5}"#)
        // An empty node takes no priority.
        #expect(exportJSON(tree.setting(try Path("/x/.priority"), to: .int(1))) == #"{"a":{"b":3},"n":5}"#)
    }

    @Test("withPriority: an empty node takes none, null clears, wrappers never nest")
    func withPriority() {
        #expect(shape(Node.null.withPriority(.int(1))) == "null")
        #expect(shape(Node.int(5).withPriority(.int(1))) == "i5^i1")
        #expect(shape(Node.int(5).withPriority(.int(1)).withPriority(.string("x"))) == #"i5^s"x""#)
        #expect(shape(Node.int(5).withPriority(.int(1)).withPriority(.null)) == "i5")
        #expect(Node.int(5).withPriority(.int(1)).priority.same(as: .int(1)))
        #expect(Node.int(5).priority.isNull)
        #expect(shape(Node.int(5).withPriority(.int(1)).unprioritized) == "i5")
    }

    @Test("accessors look through the wrapper")
    func accessors() throws {
        let n = try node(#"{"a":{".value":1,".priority":2},"b":{"c":3},".priority":"p"}"#)
        #expect(n.isObject)
        #expect(keys(n.children) == ["a", "b"])
        #expect(shape(n.child("a")) == "i1^i2")
        #expect(shape(n.child(at: Path(validatedKeys: ["b", "c"]))) == "i3")
        #expect(n.leafCount == 2)
        #expect(n.hasPriorities)
        #expect(shape(n.withoutPriorities) == #"{"a":i1,"b":{"c":i3}}"#)
        #expect(!(try node(#"{"a":1}"#)).hasPriorities)
    }

    @Test("setting a child keeps the priority unless the node empties; a leaf that gains a child keeps it")
    func settingKeepsPriority() throws {
        let obj = try node(#"{"a":1,"b":2,".priority":7}"#)
        #expect(shape(obj.setting(child: "c", to: .int(3))) == #"{"a":i1,"b":i2,"c":i3}^i7"#)
        #expect(shape(obj.setting(child: "a", to: .null)) == #"{"b":i2}^i7"#)
        #expect(shape(obj.setting(child: "a", to: .null).setting(child: "b", to: .null)) == "null")
        let leaf = try node(#"{".value":5,".priority":1}"#)
        #expect(shape(leaf.setting(child: "x", to: .int(2))) == #"{"x":i2}^i1"#)
        #expect(shape(leaf.setting(child: "x", to: .null)) == "i5^i1")
    }

    @Test("same(as:) compares priorities; withoutPriorities ignores them", arguments: [
        (#"{".value":1,".priority":2}"#, #"{".value":1,".priority":2}"#, true),
        (#"{".value":1,".priority":2}"#, #"{".value":1,".priority":2.0}"#, true),
        (#"{".value":1,".priority":2}"#, #"{".value":1,".priority":3}"#, false),
        (#"{".value":1,".priority":2}"#, #"1"#, false),
        (#"{"a":{"x":1,".priority":"p"}}"#, #"{"a":{"x":1}}"#, false),
        (#"{"a":{"x":1,".priority":"p"}}"#, #"{"a":{"x":1,".priority":"p"}}"#, true),
    ])
    func same(a: String, b: String, equal: Bool) throws {
        let x = try node(a), y = try node(b)
        #expect(x.same(as: y) == equal)
        #expect(y.same(as: x) == equal)
        #expect(x.withoutPriorities.same(as: y.withoutPriorities))
    }

    // MARK: Path

    @Test(".priority is a path's last segment only")
    func priorityPath() throws {
        let p = try Path("/a/b/.priority")
        #expect(p.isPriority)
        #expect(p.node.description == "/a/b")
        #expect(p.depth == 2)
        #expect(p.node.priority.description == "/a/b/.priority")
        #expect(p.priority.description == "/a/b/.priority")
        #expect(try Path("/.priority").node.isRoot)
        #expect(!(try Path("/a/b")).isPriority)
        #expect(errorCode { _ = try Path("/a/.priority/b") } == .invalidPath)
        #expect(errorCode { _ = try Path("/a/.priority/.priority") } == .invalidPath)
        #expect(errorCode { _ = try Path("/a/.prio") } == .invalidPath)
        let deep = (1...32).map { "k\($0)" }.joined(separator: "/")
        #expect(try Path(deep + "/.priority").depth == 32)
        #expect(errorCode { _ = try Path(deep + "/k33/.priority") } == .tooDeep)
    }

    // MARK: validation

    @Test("valid priorities in data and at .priority paths", arguments: [
        #"{"a":1,".priority":1}"#, #"{"a":1,".priority":"x"}"#, #"{"a":1,".priority":-2.5}"#,
        #"{"a":{".value":true,".priority":{".sv":"timestamp"}}}"#, #"{"a":1,".priority":{".sv":{"increment":1}}}"#,
    ])
    func validPriorities(text: String) throws {
        try Limits.validate(try node(text), at: Path("/x"))
    }

    @Test("priorities at a .priority path: null, numbers, strings, server values; not booleans or objects")
    func priorityPathValues() throws {
        let p = try Path("/x/.priority")
        for ok: Node in [.null, .int(1), .double(1.5), .string("s"), try node(#"{".sv":"timestamp"}"#)] {
            #expect(errorCode { try WriteCheck.value(ok, at: p) } == nil)
        }
        #expect(errorCode { try WriteCheck.value(.bool(true), at: p) } == .invalidData)
        #expect(errorCode { try WriteCheck.value(try node(#"{"a":1}"#), at: p) } == .invalidData)
        #expect(errorCode { try WriteCheck.value(.double(.infinity), at: p) } == .invalidData)
        #expect(errorCode { try WriteCheck.value(try node(#"{".sv":"nope"}"#), at: p) } == .invalidData)
        #expect(errorCode { try WriteCheck.value(.int(1).withPriority(.int(2)), at: p) } == .invalidData)
        let big = String(repeating: "x", count: Limits.maxStringBytes + 1)
        #expect(errorCode { try WriteCheck.value(.string(big), at: p) } == .tooLarge)
        #expect(errorCode { try Limits.validate(Node.int(1).withPriority(.string(big)), at: Path("/x")) } == .tooLarge)
        #expect(errorCode { try Limits.validate(Node.int(1).withPriority(.bool(false)), at: Path("/x")) } == .invalidData)
    }

    @Test("update keys may end in .priority; overlaps and a .priority location are refused")
    func updateKeys() throws {
        let entries = try WriteCheck.update([Node.Entry("a/.priority", .int(3)), Node.Entry("b", .int(1)),
                                             Node.Entry(".priority", .string("p"))], at: Path("/x"))
        #expect(entries.map { $0.path.description } == ["/.priority", "/a/.priority", "/b"])
        #expect(errorCode { _ = try WriteCheck.update([Node.Entry("a", .int(1)), Node.Entry("a/.priority", .int(2))], at: Path("/x")) } == .invalidData)
        #expect(errorCode { _ = try WriteCheck.update([Node.Entry("a/.priority", .bool(true))], at: Path("/x")) } == .invalidData)
        #expect(errorCode { _ = try WriteCheck.update([Node.Entry("a/.priority/b", .int(1))], at: Path("/x")) } == .invalidKey)
        #expect(errorCode { _ = try WriteCheck.update([Node.Entry("a", .int(1))], at: Path("/x/.priority")) } == .invalidPath)
    }

    // MARK: export form

    @Test("export rendering: leaves as .value/.priority, objects gain a last .priority, no arrays", arguments: [
        (#"{".value":1,".priority":2}"#, #"{".value":1,".priority":2}"#),
        (#"{"b":1,"a":2,".priority":"p"}"#, #"{"a":2,"b":1,".priority":"p"}"#),
        (#"{"x":{".value":"s",".priority":1.5},"y":true}"#, #"{"x":{".value":"s",".priority":1.5},"y":true}"#),
        (#"[1,2,3]"#, #"{"0":1,"1":2,"2":3}"#),
        (#"{"a":{"0":{".value":1,".priority":1}}}"#, #"{"a":{"0":{".value":1,".priority":1}}}"#),
        (#"5"#, "5"),
        (#"null"#, "null"),
    ])
    func exportRendering(text: String, expected: String) throws {
        let n = try node(text)
        #expect(exportJSON(n) == expected)
        // The export text reads back into the same tree (priorities included) and renders the same.
        let back = try node(exportJSON(n))
        #expect(back.same(as: n))
        #expect(exportJSON(back) == expected)
    }

    @Test("normal rendering leaves priorities out, arrays as before")
    func normalRendering() throws {
        #expect(json(try node(#"{"0":{".value":1,".priority":1},"1":2,".priority":3}"#)) == "[1,2]")
        #expect(json(try node(#"{".value":"s",".priority":1}"#)) == #""s""#)
    }

    @Test("pretty export form")
    func prettyExport() throws {
        let n = try node(#"{"a":{".value":1,".priority":2},".priority":"p"}"#)
        let text = JSONWriter.string(n, pretty: true, export: true)
        #expect(text == "{\n  \"a\": {\n    \".value\": 1,\n    \".priority\": 2\n  },\n  \".priority\": \"p\"\n}")
        #expect(try node(text).same(as: n))
    }

    // MARK: priority order

    @Test("priority order: no priority < numbers (numeric) < strings (UTF-16); ties by key")
    func priorityOrder() throws {
        let n = try node(#"{"z":1,"y":{".value":1,".priority":"B"},"x":{".value":1,".priority":10},"w":{".value":1,".priority":9.5},"v":{".value":1,".priority":"a"},"u":{".value":1,".priority":10.0},"5":2}"#)
        #expect(keys(Query(order: .priority).window(of: n)) == ["5", "z", "w", "u", "x", "y", "v"])
    }

    @Test("priority bounds, with and without a key", arguments: [
        (Query.Bound(.int(10)), nil as Query.Bound?, ["u", "x", "y", "v"]),
        (Query.Bound(.int(10), key: "v"), nil, ["x", "y", "v"]),
        (Query.Bound(.int(10), exclusive: true), nil, ["y", "v"]),
        (Query.Bound(.null), Query.Bound(.null), ["5", "z"]),
        (Query.Bound(.string("B")), Query.Bound(.string("B")), ["y"]),
        (Query.Bound(.null, key: "z"), Query.Bound(.double(9.5)), ["z", "w"]),
    ] as [(Query.Bound, Query.Bound?, [String])])
    func priorityBounds(start: Query.Bound, end: Query.Bound?, expected: [String]) throws {
        let n = try node(#"{"z":1,"y":{".value":1,".priority":"B"},"x":{".value":1,".priority":10},"w":{".value":1,".priority":9.5},"v":{".value":1,".priority":"a"},"u":{".value":1,".priority":10.0},"5":2}"#)
        let q = Query(order: .priority, start: start, end: end)
        try q.validate()
        #expect(keys(q.window(of: n)) == expected)
    }

    @Test("priority bounds must be null, numbers or strings")
    func priorityBoundsValidate() {
        #expect(errorCode { try Query(order: .priority, start: Query.Bound(.bool(true))).validate() } == .invalidQuery)
        #expect(errorCode { try Query(order: .priority, end: Query.Bound(.object([Node.Entry("a", .int(1))]))).validate() } == .invalidQuery)
        #expect(errorCode { try Query(order: .child(Path(validatedKeys: [".priority"]))).validate() } == .invalidQuery)
    }

    @Test("value order ignores priorities; a limited priority window")
    func valueOrderIgnoresPriority() throws {
        let n = try node(#"{"a":{".value":3,".priority":1},"b":{".value":1,".priority":2},"c":2}"#)
        #expect(keys(Query(order: .value).window(of: n)) == ["b", "c", "a"])
        #expect(ValueOrder.compare(Node.int(1).withPriority(.int(9)), .int(1)) == 0)
        #expect(keys(Query(order: .priority, limit: .last(2)).window(of: n)) == ["a", "b"])
        #expect(keys(Query(order: .priority, limit: .first(1)).window(of: n)) == ["c"])
        #expect(Query(order: .priority).sortValueChanged(old: .int(1).withPriority(.int(1)), new: .int(2).withPriority(.int(1))) == false)
        #expect(Query(order: .priority).sortValueChanged(old: .int(1).withPriority(.int(1)), new: .int(1).withPriority(.double(1.5))))
        #expect(Query(order: .priority).sortValueChanged(old: .int(1).withPriority(.int(1)), new: .int(1)))
    }

    @Test("windowValue keeps the location's priority only without bounds or a limit")
    func windowValuePriority() throws {
        let n = try node(#"{"a":1,"b":2,".priority":5}"#)
        #expect(Query().windowValue(of: n).priority.same(as: .int(5)))
        #expect(Query(order: .priority).windowValue(of: n).priority.same(as: .int(5)))
        #expect(Query(limit: .first(5)).windowValue(of: n).priority.isNull)
        #expect(Query(start: Query.Bound(.string("a"))).windowValue(of: n).priority.isNull)
    }

    // MARK: server values

    @Test("a priority server value resolves against the existing priority")
    func serverValuePriority() throws {
        let v = try node(#"{"a":1,".priority":{".sv":{"increment":2}}}"#)
        #expect(ServerValues.containsPlaceholder(v))
        var asked: [String] = []
        let r = ServerValues.resolve(v, at: Path(validatedKeys: ["x"]), now: 77) { p in
            asked.append(p.description)
            return .int(40)
        }
        #expect(shape(r) == #"{"a":i1}^i42"#)
        #expect(asked == ["/x/.priority"])
        let t = ServerValues.resolve(try node(#"{"a":{".value":{".sv":"timestamp"},".priority":{".sv":"timestamp"}}}"#),
                                     at: Path.root, now: 77) { _ in .null }
        #expect(shape(t) == #"{"a":i77^i77}"#)
    }
}
