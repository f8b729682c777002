import Testing
@testable import RTDBCore

@Suite("Query")
struct QueryTests {
    typealias B = Query.Bound

    static func child(_ p: String) -> Query.Order { .child(Path(validatedKeys: p.split(separator: "/").map(String.init))) }

    static func window(_ q: Query, _ data: Node) -> [String] { keys(q.window(of: data)) }

    // MARK: orderByKey

    /// Keys whose order mixes integer and string keys.
    static let keyData: Node = {
        let ks = ["1", "2", "9", "10", "100", "a", "aa", "b", "ba", "c"]
        return Node.object(normalizing: ks.map { Node.Entry($0, .string($0)) })
    }()

    @Test("orderByKey bounds are keys compared in key order", arguments: [
        (B(.string("10")), nil, ["10", "100", "a", "aa", "b", "ba", "c"]),           // "9" excluded
        (nil, B(.string("10")), ["1", "2", "9", "10"]),
        (B(.string("10"), exclusive: true), nil, ["100", "a", "aa", "b", "ba", "c"]),  // startAfter
        (nil, B(.string("b"), exclusive: true), ["1", "2", "9", "10", "100", "a", "aa"]), // endBefore
        (B(.string("9")), B(.string("100")), ["9", "10", "100"]),
        (B(.string("b")), B(.string("b")), ["b"]),                                     // equalTo
        (B(.string("bb")), B(.string("bb")), []),
        (B(.string("a")), B(.string("b")), ["a", "aa", "b"]),
        (B(.string("aaa")), nil, ["b", "ba", "c"]),
        (B(.string("3")), B(.string("50")), ["9", "10"]),                               // numeric bounds
        (B(.string("-")), nil, ["a", "aa", "b", "ba", "c"]),                             // string after all ints
        (nil, B(.string("2147483647")), ["1", "2", "9", "10", "100"]),
        (B(.string("a"), exclusive: true), B(.string("ba"), exclusive: true), ["aa", "b"]),
        (B(.string("zz")), nil, []),
    ] as [(B?, B?, [String])])
    func keyBounds(start: B?, end: B?, expected: [String]) throws {
        let q = Query(order: .key, start: start, end: end)
        try q.validate()
        #expect(QueryTests.window(q, QueryTests.keyData) == expected)
    }

    @Test("orderByKey limits")
    func keyLimits() {
        let d = QueryTests.keyData
        #expect(QueryTests.window(Query(limit: .first(2)), d) == ["1", "2"])
        #expect(QueryTests.window(Query(limit: .last(2)), d) == ["ba", "c"])
        #expect(QueryTests.window(Query(limit: .first(0)), d) == [])
        #expect(QueryTests.window(Query(limit: .last(0)), d) == [])
        #expect(QueryTests.window(Query(limit: .first(100)), d).count == 10)
        #expect(QueryTests.window(Query(start: B(.string("a")), limit: .first(2)), d) == ["a", "aa"])
        #expect(QueryTests.window(Query(end: B(.string("a")), limit: .last(2)), d) == ["100", "a"])
        #expect(QueryTests.window(Query(), d) == ["1", "2", "9", "10", "100", "a", "aa", "b", "ba", "c"])
    }

    // MARK: orderByValue

    /// h:false, d:true, then 1 for "5", b and e (int key first), a:3, c:"x", f:object.
    static let valueData: Node = {
        Node.object(normalizing: [
            .init("a", .int(3)), .init("b", .int(1)), .init("c", .string("x")), .init("d", .bool(true)),
            .init("e", .double(1.0)), .init("f", .object([.init("z", .int(1))])), .init("h", .bool(false)),
            .init("5", .int(1)),
        ])
    }()

    @Test("orderByValue ordering")
    func valueOrdering() {
        #expect(QueryTests.window(Query(order: .value), QueryTests.valueData) == ["h", "d", "5", "b", "e", "a", "c", "f"])
    }

    @Test("orderByValue bounds with and without keys", arguments: [
        (B(.int(1)), nil, ["5", "b", "e", "a", "c", "f"]),                          // startAt(1)
        (B(.int(1), key: "b"), nil, ["b", "e", "a", "c", "f"]),                    // startAt(1, "b")
        (B(.int(1), key: "c"), nil, ["e", "a", "c", "f"]),                         // key between b and e
        (B(.int(1), exclusive: true), nil, ["a", "c", "f"]),                       // startAfter(1): skips all 1s
        (B(.int(1), key: "b", exclusive: true), nil, ["e", "a", "c", "f"]),        // startAfter(1, "b")
        (nil, B(.int(1)), ["h", "d", "5", "b", "e"]),                              // endAt(1)
        (nil, B(.int(1), key: "b"), ["h", "d", "5", "b"]),                         // endAt(1, "b")
        (nil, B(.int(1), exclusive: true), ["h", "d"]),                            // endBefore(1): skips all 1s
        (nil, B(.int(1), key: "b", exclusive: true), ["h", "d", "5"]),             // endBefore(1, "b")
        (B(.int(1)), B(.int(1)), ["5", "b", "e"]),                                 // equalTo(1)
        (B(.int(1), key: "b"), B(.int(1), key: "b"), ["b"]),                       // equalTo(1, "b")
        (B(.int(1), key: "zz"), B(.int(1), key: "zz"), []),
        (B(.double(1.0)), B(.double(1.0)), ["5", "b", "e"]),                       // 1.0 == 1
        (B(.string("x")), B(.string("x")), ["c"]),
        (B(.bool(true)), B(.bool(true)), ["d"]),
        (B(.bool(false)), B(.bool(false)), ["h"]),
        (B(.bool(true)), nil, ["d", "5", "b", "e", "a", "c", "f"]),
        (nil, B(.string("zzz")), ["h", "d", "5", "b", "e", "a", "c"]),             // objects sort last
        (B(.null), nil, ["h", "d", "5", "b", "e", "a", "c", "f"]),
        (B(.double(1.5)), B(.int(3)), ["a"]),
        (B(.int(2)), B(.string("")), ["a"]),
        (B(.string("")), nil, ["c", "f"]),
        (B(.int(4)), B(.int(2)), []),                                              // empty range
    ] as [(B?, B?, [String])])
    func valueBounds(start: B?, end: B?, expected: [String]) throws {
        let q = Query(order: .value, start: start, end: end)
        try q.validate()
        #expect(QueryTests.window(q, QueryTests.valueData) == expected)
    }

    @Test("range first, then sort, then limit")
    func windows() {
        let d = QueryTests.valueData
        #expect(QueryTests.window(Query(order: .value, start: B(.int(1)), limit: .first(2)), d) == ["5", "b"])
        #expect(QueryTests.window(Query(order: .value, start: B(.int(1)), limit: .last(2)), d) == ["c", "f"])
        #expect(QueryTests.window(Query(order: .value, end: B(.int(1)), limit: .last(3)), d) == ["5", "b", "e"])
        #expect(QueryTests.window(Query(order: .value, limit: .first(3)), d) == ["h", "d", "5"])
        #expect(QueryTests.window(Query(order: .value, limit: .last(1)), d) == ["f"])
        #expect(QueryTests.window(Query(order: .value, start: B(.int(9)), limit: .first(3)), d) == ["c", "f"])
    }

    // MARK: orderByChild

    @Test("the orderByChild worked example through window(of:)")
    func childWorkedExample() throws {
        let data = try node(#"""
            {"a":{"h":3},"b":{"h":"x"},"c":{"k":0},"d":{"h":true},"e":{"h":3},"f":{"h":{"z":1}},"g":{"h":false},"5":{"h":3}}
            """#)
        let q = Query(order: QueryTests.child("h"))
        #expect(QueryTests.window(q, data) == ["c", "g", "d", "5", "a", "e", "b", "f"])
        // With "c":{} literally, c is no data at all and does not appear.
        let literal = try node(#"{"a":{"h":3},"b":{"h":"x"},"c":{},"d":{"h":true},"e":{"h":3},"f":{"h":{"z":1}},"g":{"h":false},"5":{"h":3}}"#)
        #expect(QueryTests.window(q, literal) == ["g", "d", "5", "a", "e", "b", "f"])
        // equalTo(null) on a child: the children lacking it.
        let eqNull = Query(order: QueryTests.child("h"), start: B(.null), end: B(.null))
        try eqNull.validate()
        #expect(QueryTests.window(eqNull, data) == ["c"])
        let eq3 = Query(order: QueryTests.child("h"), start: B(.int(3)), end: B(.int(3)))
        #expect(QueryTests.window(eq3, data) == ["5", "a", "e"])
    }

    static let posts: Node = {
        Node.object(normalizing: [
            .init("p1", .object([.init("metrics", .object([.init("views", .int(10))])), .init("t", .string("one"))])),
            .init("p2", .object([.init("metrics", .object([.init("views", .int(5))]))])),
            .init("p3", .object([.init("metrics", .object([.init("likes", .int(1))]))])),
            .init("p4", .object([.init("metrics", .object([.init("views", .string("many"))]))])),
            .init("p5", .int(7)),   // a primitive child has no "metrics/views"
            .init("p6", .object([.init("metrics", .object([.init("views", .double(7.5))]))])),
        ])
    }()

    @Test("orderByChild with a nested path metrics/views", arguments: [
        (Query(order: QueryTests.child("metrics/views")), ["p3", "p5", "p2", "p6", "p1", "p4"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.int(6))), ["p6", "p1", "p4"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.int(6)), end: B(.int(10))), ["p6", "p1"]),
        (Query(order: QueryTests.child("metrics/views"), end: B(.int(10), exclusive: true)), ["p3", "p5", "p2", "p6"]),
        (Query(order: QueryTests.child("metrics/views"), limit: .first(2)), ["p3", "p5"]),
        (Query(order: QueryTests.child("metrics/views"), limit: .last(2)), ["p1", "p4"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.null), end: B(.null)), ["p3", "p5"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.null, key: "p4"), end: B(.null)), ["p5"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.null, exclusive: true)), ["p2", "p6", "p1", "p4"]),
        (Query(order: QueryTests.child("metrics/views"), start: B(.string("many")), end: B(.string("many"))), ["p4"]),
        (Query(order: QueryTests.child("metrics")), ["p5", "p1", "p2", "p3", "p4", "p6"]),   // objects tie: key order
        (Query(order: QueryTests.child("t")), ["p2", "p3", "p4", "p5", "p6", "p1"]),
    ] as [(Query, [String])])
    func nestedChild(q: Query, expected: [String]) throws {
        try q.validate()
        #expect(QueryTests.window(q, QueryTests.posts) == expected)
    }

    @Test("window keeps the child nodes themselves")
    func windowNodes() {
        let w = Query(order: QueryTests.child("metrics/views"), limit: .last(1)).window(of: QueryTests.posts)
        #expect(w.count == 1)
        #expect(shape(w[0].node) == #"{"metrics":{"views":s"many"}}"#)
    }

    // MARK: mixed numbers

    @Test("ints and doubles order numerically, exactly at 64 bits")
    func mixedNumbers() {
        let d = Node.object(normalizing: [
            .init("a", .double(1.5)), .init("b", .int(1)), .init("c", .int(2)), .init("d", .int(Int64.max)),
            .init("e", .double(9.3e18)), .init("f", .double(-0.0)), .init("g", .int(-1)), .init("h", .double(9223372036854775807.0)),
        ])
        #expect(QueryTests.window(Query(order: .value), d) == ["g", "f", "b", "a", "c", "d", "h", "e"])
        #expect(QueryTests.window(Query(order: .value, start: B(.int(Int64.max)), end: B(.int(Int64.max))), d) == ["d"])
        #expect(QueryTests.window(Query(order: .value, start: B(.int(0)), end: B(.int(0))), d) == ["f"])
    }

    // MARK: non-objects, windowValue, isUnfiltered

    @Test("window of a primitive or null is empty")
    func windowOfLeaf() {
        #expect(Query().window(of: .int(1)).isEmpty)
        #expect(Query().window(of: .null).isEmpty)
        #expect(Query(order: .value, limit: .first(1)).window(of: .string("x")).isEmpty)
    }

    @Test("windowValue")
    func windowValue() {
        let d = QueryTests.valueData
        #expect(shape(Query().windowValue(of: d)) == shape(d))
        #expect(shape(Query().windowValue(of: .int(5))) == "i5")
        #expect(shape(Query(order: .value, limit: .first(1)).windowValue(of: .int(5))) == "null")
        #expect(shape(Query(order: .value, limit: .first(1)).windowValue(of: .null)) == "null")
        // A window value is an object in key order, whatever the query order.
        let v = Query(order: .value, start: B(.int(1)), limit: .first(3)).windowValue(of: d)
        #expect(shape(v) == #"{"5":i1,"b":i1,"e":d1.0}"#)
        #expect(shape(Query(order: .value, start: B(.int(100)), end: B(.int(200))).windowValue(of: QueryTests.posts.child("p1"))) == "null")
    }

    @Test("isUnfiltered")
    func unfiltered() {
        #expect(Query().isUnfiltered)
        #expect(!Query(limit: .first(1)).isUnfiltered)
        #expect(!Query(order: .value).isUnfiltered)
        #expect(!Query(start: B(.string("a"))).isUnfiltered)
        #expect(!Query(end: B(.string("a"))).isUnfiltered)
    }

    // MARK: validate

    @Test("invalid queries are invalid_query", arguments: [
        Query(order: .key, start: B(.int(10))),
        Query(order: .key, end: B(.bool(true))),
        Query(order: .key, start: B(.null)),
        Query(order: .key, start: B(.string("a"), key: "b")),
        Query(order: .value, start: B(.object([.init("a", .int(1))]))),
        Query(order: QueryTests.child("x"), end: B(.object([.init("a", .int(1))]))),
        Query(order: .child(.root)),
        Query(limit: .first(-1)),
        Query(order: .value, limit: .last(-5)),
    ])
    func invalid(q: Query) {
        #expect(errorCode { try q.validate() } == .invalidQuery)
    }

    @Test("valid queries pass validation", arguments: [
        Query(),
        Query(order: .key, start: B(.string("10")), end: B(.string("z"), exclusive: true), limit: .first(3)),
        Query(order: .value, start: B(.null), end: B(.bool(true))),
        Query(order: .value, start: B(.int(1), key: "a"), end: B(.double(2.5), key: "b")),
        Query(order: QueryTests.child("a/b"), start: B(.string("x"), exclusive: true)),
        Query(limit: .first(0)), Query(limit: .last(0)),
    ])
    func valid(q: Query) {
        #expect(errorCode { try q.validate() } == nil)
    }

    // MARK: compare, inRange, sortValueChanged

    @Test("compare: key order ignores values; value orders break ties by key")
    func compare() {
        #expect(Query().compare("9", .int(5), "10", .int(1)) < 0)
        #expect(Query(order: .value).compare("9", .int(5), "10", .int(1)) > 0)
        #expect(Query(order: .value).compare("b", .int(1), "a", .double(1.0)) > 0)
        #expect(Query(order: .value).compare("a", .int(1), "a", .int(1)) == 0)
        let q = Query(order: QueryTests.child("h"))
        #expect(q.compare("a", .object([.init("h", .int(2))]), "b", .object([.init("h", .int(1))])) > 0)
        #expect(q.compare("b", .int(0), "a", .object([.init("h", .bool(false))])) < 0)   // missing < false
    }

    @Test("indexValue")
    func indexValue() {
        let n = Node.object([.init("a", .object([.init("b", .int(1))]))])
        #expect(shape(Query().indexValue(n)) == "null")
        #expect(shape(Query(order: .value).indexValue(n)) == shape(n))
        #expect(shape(Query(order: QueryTests.child("a/b")).indexValue(n)) == "i1")
        #expect(shape(Query(order: QueryTests.child("a/c")).indexValue(n)) == "null")
    }

    @Test("inRange agrees with the window")
    func inRange() {
        let q = Query(order: .value, start: B(.int(1), key: "b"), end: B(.int(3)))
        #expect(!q.inRange("5", .int(1)))
        #expect(q.inRange("b", .int(1)))
        #expect(q.inRange("e", .double(1.0)))
        #expect(q.inRange("zzz", .int(3)))
        #expect(!q.inRange("a", .double(3.0000001)))
        #expect(!q.inRange("a", .string("3")))
        #expect(q.inRange("c", sortValue: .int(2)))
    }

    @Test("sortValueChanged")
    func sortValueChanged() {
        #expect(!Query().sortValueChanged(old: .int(1), new: .int(2)))
        #expect(!Query(order: .value).sortValueChanged(old: .int(1), new: .double(1.0)))
        #expect(Query(order: .value).sortValueChanged(old: .int(1), new: .int(2)))
        #expect(Query(order: .value).sortValueChanged(old: .int(1), new: .string("1")))
        // Equality, not the sort comparison: objects sort alike, yet a different object moved.
        #expect(Query(order: .value).sortValueChanged(old: .object([.init("a", .int(1))]), new: .object([.init("b", .int(2))])))
        #expect(!Query(order: .value).sortValueChanged(old: .object([.init("a", .int(1))]), new: .object([.init("a", .double(1))])))
        let q = Query(order: QueryTests.child("h"))
        let a = Node.object([.init("h", .int(1)), .init("x", .int(1))])
        let b = Node.object([.init("h", .int(1)), .init("x", .int(2))])
        let c = Node.object([.init("h", .int(2)), .init("x", .int(1))])
        #expect(!q.sortValueChanged(old: a, new: b))
        #expect(q.sortValueChanged(old: a, new: c))
        #expect(q.sortValueChanged(old: a, new: .null))
        let d = Node.object([.init("h", .object([.init("y", .int(1))]))])
        let e = Node.object([.init("h", .object([.init("y", .int(2))]))])
        // Child order compares the sort values: all objects compare alike, so no move.
        #expect(!q.sortValueChanged(old: d, new: e))
        #expect(q.sortValueChanged(old: d, new: Node.object([.init("h", .int(1))])))
        let p = Query(order: .priority)
        #expect(!p.sortValueChanged(old: .prioritized(.int(1), priority: .int(1)), new: .prioritized(.int(2), priority: .double(1))))
        #expect(p.sortValueChanged(old: .prioritized(.int(1), priority: .string("a")), new: .prioritized(.int(1), priority: .string("b"))))
        #expect(!q.sortValueChanged(old: d, new: Node.object([.init("h", .object([.init("y", .int(1))])), .init("x", .int(0))])))
    }

    // MARK: printing a view in query order

    @Test("a view's members print in its query's order; key order, primitives and arrays print as they are")
    func orderedMembers() throws {
        let scores = try node(#"{"a":93,"b":22,"c":80,"d":55}"#)
        let members = try #require(Query(order: .value, limit: .last(4)).orderedMembers(of: scores))
        #expect(keys(members) == ["b", "d", "c", "a"])
        var out: [UInt8] = []
        JSONWriter().write(members: members, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"{"b":22,"d":55,"c":80,"a":93}"#)
        #expect(Query(order: .key, limit: .last(2)).orderedMembers(of: scores) == nil)
        #expect(Query(order: .value).orderedMembers(of: .int(3)) == nil)
        #expect(Query(order: .value).orderedMembers(of: try node("[3,1,2]")) == nil)
        // Priorities order the members, and are not printed.
        let tasks = try node(#"{"t1":{".value":"w",".priority":2},"t2":{".value":"v",".priority":1}}"#)
        let byPriority = try #require(Query(order: .priority).orderedMembers(of: tasks))
        out = []
        JSONWriter(pretty: true).write(members: byPriority, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == "{\n  \"t2\": \"v\",\n  \"t1\": \"w\"\n}")
    }
}
