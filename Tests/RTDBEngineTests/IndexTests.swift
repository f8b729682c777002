import Foundation
import Testing
import RTDBTestSupport
import RTDBCore
@testable import RTDBEngine

/// The index entries of the file, as stored (to compare a maintained index with a rebuilt one).
private func entries(_ file: String) throws -> [String] {
    let c = try Connection(file: file, create: false, timeoutSeconds: 5)
    let s = try c.statement("SELECT i.location, i.child, e.parent, e.entry FROM index_entries e JOIN indexes i ON i.id = e.ix ORDER BY 1, 2, 3, 4")
    var out: [String] = []
    while try s.step() {
        out.append(s.string(0) + " " + s.string(1) + " " + Array(s.blob(2)).description + " " + Array(s.blob(3)).description)
    }
    s.reset()
    return out
}

private func randomSortValue(_ r: inout SeededRandom) -> Node {
    switch Int.random(in: 0..<12, using: &r) {
    case 0: return .null
    case 1: return .bool(Bool.random(using: &r))
    case 2: return .int(Int64.random(in: -5...5, using: &r))
    case 3: return .double([-0.0, 0.5, -2.5, 3.0, 1e300, -1e-300][Int.random(in: 0..<6, using: &r)])
    case 4: return .int([Int64.max, Int64.min, 9_007_199_254_740_993, -9_007_199_254_740_993][Int.random(in: 0..<4, using: &r)])
    case 5: return .double([9_007_199_254_740_992.0, 9.223372036854775807e18, -9.3e18][Int.random(in: 0..<3, using: &r)])
    case 6, 7: return .string(["", "a", "a\u{0}", "a\u{1}b", "b", "é", "\u{E000}", "\u{1F600}", "ab", "A"][Int.random(in: 0..<10, using: &r)])
    case 8: return json(#"{"y":1}"#)
    default: return .int(Int64.random(in: 0...3, using: &r))
    }
}

private func randomChild(_ r: inout SeededRandom) -> Node {
    switch Int.random(in: 0..<6, using: &r) {
    case 0: return randomSortValue(&r)   // a primitive child (its x is null)
    case 1: return .object([Node.Entry("z", .int(1))])   // no x
    default:
        var fields = [Node.Entry("x", randomSortValue(&r)), Node.Entry("ts", .int(Int64.random(in: 0...4, using: &r)))]
        if Bool.random(using: &r) { fields.append(Node.Entry("w", .string("w"))) }
        return Node.object(normalizing: fields.filter { !$0.node.isNull })
    }
}

private func randomQuery(_ r: inout SeededRandom, order: Query.Order) -> Query {
    var q = Query(order: order)
    func bound() -> Query.Bound {
        var v = randomSortValue(&r)
        if v.isObject { v = .int(1) }
        let key: String? = Bool.random(using: &r) ? randomKey(&r) : nil
        return Query.Bound(v, key: key, exclusive: Bool.random(using: &r))
    }
    if Int.random(in: 0..<3, using: &r) == 0 { q.start = bound() }
    if Int.random(in: 0..<3, using: &r) == 0 { q.end = bound() }
    if Int.random(in: 0..<6, using: &r) == 0 {   // equal-to
        let b = bound()
        q.start = Query.Bound(b.value, key: b.key)
        q.end = Query.Bound(b.value, key: b.key)
    }
    switch Int.random(in: 0..<3, using: &r) {
    case 0: q.limit = .first(Int.random(in: 1...6, using: &r))
    case 1: q.limit = .last(Int.random(in: 1...6, using: &r))
    default: break
    }
    return q
}

@Suite struct IndexTests {
    /// Random data, random writes of every kind, random queries: the answer from an index equals
    /// the same query applied to the whole location, and the maintained entries equal entries
    /// built afresh from the data.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func indexedQueriesEqualScansUnderRandomWrites(seed: UInt64) throws {
        let t = TempDatabase()
        let db = t.db
        var r = SeededRandom(seed)
        let defs = [try IndexDefinition(location: "/list", child: "x"),
                    try IndexDefinition(location: "/list", child: ".value"),
                    try IndexDefinition(location: "/rooms/$room/msgs", child: "ts"),
                    try IndexDefinition(location: "/list/$k", child: ".value")]
        // Some indexes exist before the data, one is built from data already there.
        #expect(try db.addIndex(defs[0]))
        #expect(try db.addIndex(defs[2]))
        var keys = ["a", "b", "1", "07", "-5", "zz", "\u{E000}"]
        func key() -> String { keys[Int.random(in: 0..<keys.count, using: &r)] }
        func room() -> String { ["r1", "r2", "7"][Int.random(in: 0..<3, using: &r)] }
        for step in 0..<400 {
            if step == 40 { #expect(try db.addIndex(defs[1])); #expect(try db.addIndex(defs[3])) }
            switch Int.random(in: 0..<16, using: &r) {
            case 0: _ = try db.set(path("/list/\(key())"), randomChild(&r))
            case 1: _ = try db.set(path("/list/\(key())/x"), randomSortValue(&r))
            case 2: _ = try db.set(path("/list/\(key())/x/y"), .int(2))
            case 3: _ = try db.update(path("/list"), [(path("/\(key())"), randomChild(&r)), (path("/\(key())/x"), randomSortValue(&r))])
            case 4:
                let id = try db.push(path("/list"), [randomChild(&r), randomChild(&r)]).map(\.key)
                keys.append(contentsOf: id)
            case 5: _ = try db.set(path("/list/\(key())"), .null)
            case 6: _ = try db.increment(path("/list/\(key())/x"), by: .int(1))
            case 7:
                let k = key()
                let cur = try db.get(path("/list/\(k)"))
                _ = try db.compareAndSet(path("/list/\(k)"), expected: cur, value: randomChild(&r))
            case 8: _ = try db.set(path("/list/\(key())"), randomChild(&r), if: { _ in Bool.random() })
            case 9: _ = try db.set(path("/list/\(key())/.priority"), .int(Int64.random(in: 0...3, using: &r)))
            case 10: _ = try db.set(path("/rooms/\(room())/msgs/\(key())"), randomChild(&r))
            case 11: _ = try db.set(path("/rooms/\(room())"), json(#"{"msgs":{"m1":{"ts":2},"m2":{"ts":1},"m3":"leaf"}}"#))
            case 12: _ = try db.update(.root, [(path("/rooms/\(room())/msgs/\(key())/ts"), randomSortValue(&r)),
                                              (path("/list/\(key())/x"), randomSortValue(&r))])
            case 13:
                if Int.random(in: 0..<8, using: &r) == 0 { _ = try db.set(path("/list"), .string("a leaf")) }
                else { _ = try db.set(path("/list/\(key())/x/.priority"), .int(1)) }
            case 14: _ = try db.push(path("/rooms/\(room())/msgs"), [randomChild(&r)])
            default:
                let all = try db.export(path("/list"))
                var children = all.unprioritized.children
                if !children.isEmpty { children.removeFirst() }
                _ = try db.set(path("/list"), Node.object(normalizing: children + [Node.Entry(key(), randomChild(&r))]))
            }
            for _ in 0..<3 {
                let (p, order): (Path, Query.Order) = {
                    switch Int.random(in: 0..<4, using: &r) {
                    case 0: return (path("/list"), .child(path("x")))
                    case 1: return (path("/list"), .value)
                    case 2: return (path("/rooms/\(room())/msgs"), .child(path("ts")))
                    default: return (path("/list/\(key())"), .value)
                    }
                }()
                let q = randomQuery(&r, order: order)
                let got = try db.query(p, q)
                let want = q.window(of: try db.export(p))
                #expect(got.map(\.key) == want.map(\.key), "step \(step) \(p) \(q)")
                #expect(zip(got, want).allSatisfy { $0.node.same(as: $1.node) && $0.node.priority.same(as: $1.node.priority) })
            }
        }
        // Maintained entries equal a fresh build.
        let maintained = try entries(t.file)
        for d in defs {
            #expect(try db.removeIndex(d))
            #expect(try db.addIndex(d))
        }
        #expect(try entries(t.file) == maintained)
        #expect(!maintained.isEmpty)
    }

    @Test func indexesAreListedAddedOnceAndRemoved() throws {
        let t = TempDatabase()
        let d = try IndexDefinition(location: "/users/", child: "a/b")
        #expect(d.location == "/users" && d.childText == "a/b")
        #expect(try t.db.indexes().isEmpty)
        #expect(try t.db.addIndex(d))
        #expect(try !t.db.addIndex(d))
        #expect(try t.another().indexes() == [d])
        #expect(try t.db.removeIndex(d))
        #expect(try !t.db.removeIndex(d))
        #expect(try t.db.indexes().isEmpty)
        #expect(throws: RTDBError.self) { _ = try IndexDefinition(location: "/a/$", child: "x") }
        #expect(throws: RTDBError.self) { _ = try IndexDefinition(location: "/a/b.c", child: "x") }
        #expect(throws: RTDBError.self) { _ = try IndexDefinition(location: "/a", child: ".priority") }
        #expect(throws: RTDBError.self) { _ = try IndexDefinition(location: "/a", child: "/") }
    }

    /// The window comes from the index: entries alone decide which children are read.
    @Test func aQueryWithAnIndexReadsItsWindowFromTheEntries() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/s"), json(#"{"a":{"x":3},"b":{"x":1},"c":{"x":2}}"#))
        #expect(try t.db.addIndex(IndexDefinition(location: "/s", child: "x")))
        // Corrupt the entries on purpose: the query follows them, which shows they are used.
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 5)
        try raw.exec("DELETE FROM index_entries")
        #expect(try t.db.query(path("/s"), Query(order: .child(path("x")), limit: .first(2))).isEmpty)
        #expect(try t.db.query(path("/s"), Query(order: .value, limit: .first(2))).map(\.key) == ["a", "b"])
    }

    @Test func indexKeysSortInValueOrder() {
        var r = SeededRandom(3)
        let values = (0..<300).map { _ in randomSortValue(&r) }
        for a in values {
            for b in values.prefix(60) {
                let want = ValueOrder.compare(a, b)
                let ea = IndexKey.encode(a), eb = IndexKey.encode(b)
                let got = ea == eb ? 0 : (ea.lexicographicallyPrecedes(eb) ? -1 : 1)
                #expect(got == want, "\(a) vs \(b)")
            }
        }
    }
}

/// Events compared field by field, priorities included.
private func sameEvents(_ a: [Event], _ b: [Event]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { x, y in
        x.type == y.type && x.key == y.key && x.prevKey == y.prevKey
            && x.value.same(as: y.value) && x.value.priority.same(as: y.value.priority)
    }
}

@Suite struct IndexedWatchTests {
    /// A watcher's view of one query over one database, as `Observer` keeps it.
    struct Follower {
        let db: EmbeddedDatabase
        let query: Query
        var seq: Int64 = 0
        var value: Node = .null
        var windowed = false

        init(_ db: EmbeddedDatabase, _ query: Query) throws {
            self.db = db
            self.query = query
            if let snap = try db.snapshot(path("/list"), window: query) {
                (seq, value, windowed) = (snap.seq, snap.value, snap.windowed)
            }
        }

        /// The events of the changes since the last look, value and child mode (nil: none).
        mutating func look() throws -> (values: [Event], children: [Event])? {
            guard let c = try db.changes(at: path("/list"), after: seq, current: value, window: query, windowed: windowed) else { return nil }
            seq = c.seq
            if let keys = c.keys, keys.isEmpty { return nil }
            let old = value
            (value, windowed) = (c.value, c.windowed)
            return (EventGenerator.changes(query: query, old: old, new: value, childEvents: false, changedKeys: c.keys),
                    EventGenerator.changes(query: query, old: old, new: value, childEvents: true, changedKeys: c.keys))
        }
    }

    /// Random writes to an indexed file and to a plain one: watchers of random limited value and
    /// child queries see the same events from both, while the indexed ones hold only their
    /// window (and fall back to the whole value while the index is gone).
    @Test(arguments: [21, 22, 23] as [UInt64])
    func windowsFromAnIndexRaiseTheSameEvents(seed: UInt64) throws {
        let indexed = TempDatabase(), plain = TempDatabase()
        var r = SeededRandom(seed)
        let byX = try IndexDefinition(location: "/list", child: "x")
        let byValue = try IndexDefinition(location: "/list", child: ".value")
        #expect(try indexed.db.addIndex(byX))
        #expect(try indexed.db.addIndex(byValue))
        let keys = ["a", "b", "1", "07", "-5", "zz", "\u{E000}", "-Nq0aB", "-Nq0aC", "m"]
        func key() -> String { keys[Int.random(in: 0..<keys.count, using: &r)] }
        for k in keys.prefix(6) {
            let v = randomChild(&r)
            for db in [indexed.db, plain.db] { _ = try db.set(path("/list/\(k)"), v) }
        }
        var queries: [Query] = []
        for i in 0..<6 {
            var q: Query
            repeat { q = randomQuery(&r, order: i % 2 == 0 ? .child(path("x")) : .value) } while q.limit == nil
            queries.append(q)
        }
        var pairs = try queries.map { (try Follower(indexed.db, $0), try Follower(plain.db, $0)) }
        for (a, b) in pairs {
            #expect(a.windowed && !b.windowed)
            for mode in [false, true] {
                #expect(sameEvents(EventGenerator.initial(query: a.query, value: a.value, childEvents: mode),
                                   EventGenerator.initial(query: b.query, value: b.value, childEvents: mode)))
            }
        }
        for step in 0..<300 {
            if step == 100 { #expect(try indexed.db.removeIndex(byX)) }
            if step == 150 { #expect(try indexed.db.addIndex(byX)) }
            let write: (EmbeddedDatabase) throws -> Void
            switch Int.random(in: 0..<9, using: &r) {
            case 0, 1:
                let k = key(), v = randomChild(&r)
                write = { _ = try $0.set(path("/list/\(k)"), v) }
            case 2:
                let k = key(), v = randomSortValue(&r)
                write = { _ = try $0.set(path("/list/\(k)/x"), v) }
            case 3:
                let k1 = key(), v1 = randomChild(&r), k2 = key(), v2 = randomSortValue(&r)
                write = { _ = try $0.update(path("/list"), [(path("/\(k1)"), v1), (path("/\(k2)/x"), v2)]) }
            case 4:
                let k = key()
                write = { _ = try $0.set(path("/list/\(k)"), .null) }
            case 5:
                let k = key(), p = Int64.random(in: 0...3, using: &r)
                write = { _ = try $0.set(path("/list/\(k)/.priority"), .int(p)) }
            case 6:
                let k = key()
                write = { _ = try $0.set(path("/list/\(k)/w"), .string("changed")) }
            case 7:
                var children: [Node.Entry] = []
                for _ in 0..<Int.random(in: 0...6, using: &r) { children.append(Node.Entry(key(), randomChild(&r))) }
                let whole = Int.random(in: 0..<6, using: &r) == 0 ? Node.string("a leaf") : Node.object(normalizing: children)
                write = { _ = try $0.set(path("/list"), whole) }
            default:
                let k = key()
                write = { _ = try $0.set(path("/other/\(k)"), .int(1)) }
            }
            try write(indexed.db)
            try write(plain.db)
            // Watchers look after one write or several (coalesced notifications).
            if Int.random(in: 0..<3, using: &r) == 0 { continue }
            for i in pairs.indices {
                let a = try pairs[i].0.look(), b = try pairs[i].1.look()
                #expect(sameEvents(a?.values ?? [], b?.values ?? []), "step \(step) \(pairs[i].0.query)")
                #expect(sameEvents(a?.children ?? [], b?.children ?? []), "step \(step) \(pairs[i].0.query)")
                // Indexed: only the window is held, except while its index is gone.
                let byValue: Bool = if case .value = pairs[i].0.query.order { true } else { false }
                let served = !(100..<150).contains(step) || byValue
                if a != nil && served {
                    #expect(pairs[i].0.windowed)
                    let limit: Int = switch pairs[i].0.query.limit { case .first(let n)?, .last(let n)?: n; case nil: 0 }
                    #expect(pairs[i].0.value.unprioritized.children.count <= limit)
                }
            }
        }
    }

    /// The engine's observe with a query follows only the window, with the same events.
    @Test func observeWithAQueryFollowsTheWindow() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/s"), json(#"{"a":{"x":3},"b":{"x":1},"c":{"x":2},"d":{"x":5}}"#))
        #expect(try t.db.addIndex(IndexDefinition(location: "/s", child: "x")))
        let writer = t.another()
        let q = Query(order: .child(path("x")), limit: .last(2))
        var seen: [String] = []
        try t.db.observe(path("/s"), query: q, idle: { true }) { value, _ in
            seen.append(text(value))
            switch seen.count {
            case 1: _ = try writer.set(path("/s/b/x"), .int(9))
            case 2: _ = try writer.set(path("/s/d"), .null)
            default: break
            }
            return seen.count < 3
        }
        #expect(seen == [#"{"a":{"x":3},"d":{"x":5}}"#, #"{"b":{"x":9},"d":{"x":5}}"#, #"{"a":{"x":3},"b":{"x":9}}"#])
    }
}
