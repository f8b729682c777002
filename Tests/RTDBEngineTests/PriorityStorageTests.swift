import Foundation
import Testing
import RTDBCore
import CSQLite
@testable import RTDBEngine

/// Export-form JSON (priorities shown).
private func exported(_ node: Node) -> String { JSONWriter.string(node, export: true) }

/// The rows of `table` as "path|value" lines (the stored key decoded to `/`-joined keys), read
/// with SQLite directly, in storage order.
private func rows(_ file: String, _ table: String) throws -> [String] {
    let c = try Connection(file: file, create: false, timeoutSeconds: 5)
    let s = try c.statement("SELECT path, \(table == "data" ? "v" : "p") FROM \(table) ORDER BY path")
    var out: [String] = []
    while try s.step() {
        out.append(StorageKey.keys(s.blob(0)).joined(separator: "/") + "|" + JSONWriter.string(EmbeddedDatabase.leaf(s, 1)))
    }
    s.reset()
    return out
}

@Suite struct PriorityStorageTests {
    @Test func prioritiesAreStoredAndExportedButNotInNormalReads() throws {
        let t = TempDatabase()
        let doc = #"{"a":{".value":1,".priority":5},"b":{"x":true,".priority":"z"},"c":{"d":{".value":"s",".priority":1.5}},".priority":0}"#
        _ = try t.db.set(path("/s"), json(doc))
        #expect(text(try t.db.get(path("/s"))) == #"{"a":1,"b":{"x":true},"c":{"d":"s"}}"#)
        #expect(exported(try t.db.export(path("/s"))) == #"{"a":{".value":1,".priority":5},"b":{"x":true,".priority":"z"},"c":{"d":{".value":"s",".priority":1.5}},".priority":0}"#)
        #expect(exported(try t.another().export(.root)) == #"{"s":{"a":{".value":1,".priority":5},"b":{"x":true,".priority":"z"},"c":{"d":{".value":"s",".priority":1.5}},".priority":0}}"#)
        #expect(exported(try t.db.export(path("/s/a"))) == #"{".value":1,".priority":5}"#)
        #expect(text(try t.db.get(path("/s/b/.priority"))) == #""z""#)
        #expect(text(try t.db.get(path("/s/.priority"))) == "0")
        #expect(text(try t.db.get(path("/s/c/.priority"))) == "null")
        #expect(text(try t.db.shallow(path("/s"))) == #"{"a":true,"b":true,"c":true}"#)
        #expect(try rows(t.file, "priorities") == ["s|0", "s/a|5", "s/b|\"z\"", "s/c/d|1.5"])
        #expect(try rows(t.file, "data") == ["s/a|1", "s/b/x|true", "s/c/d|\"s\""])
    }

    @Test func dataWithoutPrioritiesHasTheSameRowsAsBefore() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"a":{"b":1,"c":[1,2]},"d":"x"}"#))
        _ = try t.db.update(path("/a"), [(path("/e"), .int(3))])
        _ = try t.db.push(path("/l"), [.int(1)])
        #expect(try rows(t.file, "priorities").isEmpty)
        #expect(try rows(t.file, "data").count == 6)
        #expect(exported(try t.db.export(.root)) == JSONWriter.string(try t.db.get(.root), export: true))
    }

    @Test func aWriteThatReplacesANodeReplacesItsPriority() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json(#"{"x":1,"y":{".value":2,".priority":2},".priority":1}"#))
        _ = try t.db.set(path("/a"), json(#"{"x":1}"#))   // no priority given: cleared, below too
        #expect(exported(try t.db.export(path("/a"))) == #"{"x":1}"#)
        #expect(try rows(t.file, "priorities").isEmpty)
        _ = try t.db.set(path("/a"), json(#"{".value":3,".priority":"p"}"#))
        #expect(exported(try t.db.export(.root)) == #"{"a":{".value":3,".priority":"p"}}"#)
        _ = try t.db.set(path("/a/b"), .int(4))           // a leaf that gains a child keeps its priority
        #expect(exported(try t.db.export(.root)) == #"{"a":{"b":4,".priority":"p"}}"#)
        _ = try t.db.set(path("/a/c"), .int(5))
        _ = try t.db.set(path("/a/b"), .null)              // still has data: keeps it
        #expect(exported(try t.db.export(.root)) == #"{"a":{"c":5,".priority":"p"}}"#)
        _ = try t.db.set(path("/a/c"), .null)              // emptied: loses it
        #expect(try rows(t.file, "priorities").isEmpty)
        _ = try t.db.set(path("/a/c"), .int(6))            // and does not get it back
        #expect(exported(try t.db.export(.root)) == #"{"a":{"c":6}}"#)
    }

    @Test func emptiedAncestorsLoseTheirPrioritiesAllTheWayUp() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"a":{"b":{"c":{".value":1,".priority":3},".priority":2},".priority":1},"z":{"y":1,".priority":9},".priority":"root"}"#))
        _ = try t.db.set(path("/a/b/c"), .null)
        #expect(exported(try t.db.export(.root)) == #"{"z":{"y":1,".priority":9},".priority":"root"}"#)
        _ = try t.db.set(path("/z/y"), .null)
        #expect(exported(try t.db.export(.root)) == "null")
        #expect(try rows(t.file, "priorities").isEmpty)
    }

    @Test func thePriorityPseudoChild() throws {
        let t = TempDatabase()
        #expect(text(try t.db.set(path("/a/.priority"), .int(1))) == "null")   // empty node: no effect
        #expect(try rows(t.file, "priorities").isEmpty)
        _ = try t.db.set(path("/a"), json(#"{"x":1}"#))
        #expect(text(try t.db.set(path("/a/.priority"), .string("p"))) == #""p""#)
        #expect(exported(try t.db.export(path("/a"))) == #"{"x":1,".priority":"p"}"#)
        #expect(text(try t.db.get(path("/a"))) == #"{"x":1}"#)
        _ = try t.db.set(path("/a/.priority"), .null)
        #expect(try rows(t.file, "priorities").isEmpty)
        #expect(text(try t.db.get(path("/a"))) == #"{"x":1}"#)
        #expect(try t.db.query(path("/a/.priority"), Query()).isEmpty)
        #expect(throws: RTDBError.self) { _ = try t.db.push(path("/a/.priority"), [.int(1)]) }
    }

    @Test func updateSetsPrioritiesAfterTheData() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/u"), json(#"{"a":1,"b":{"c":2}}"#))
        let applied = try t.db.update(path("/u"), [(path("/.priority"), .int(7)), (path("/a/.priority"), .string("x")),
                                                   (path("/n/.priority"), .int(1)), (path("/n/m"), .int(3)),
                                                   (path("/q/.priority"), .int(2))])
        #expect(applied.count == 5)
        #expect(exported(try t.db.export(path("/u"))) == #"{"a":{".value":1,".priority":"x"},"b":{"c":2},"n":{"m":3,".priority":1},".priority":7}"#)
        #expect(text(try t.db.get(path("/u/q"))) == "null")
    }

    @Test func pushStoresPriorities() throws {
        let t = TempDatabase()
        let pushed = try t.db.push(path("/l"), [json(#"{".value":"a",".priority":2}"#), json(#"{"t":1,".priority":1}"#)])
        let q = try t.db.query(path("/l"), Query(order: .priority))
        #expect(q.map(\.key) == [pushed[1].key, pushed[0].key])
        #expect(q.map { text($0.node) } == [#"{"t":1}"#, #""a""#])
    }

    @Test func queriesOrderByPriorityWithBoundsAndLimits() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/s"), json(#"{"a":{".value":1,".priority":"b"},"b":{".value":2,".priority":3},"c":4,"d":{"x":1,".priority":-1},"e":{".value":5,".priority":"a"}}"#))
        #expect(try t.db.query(path("/s"), Query(order: .priority)).map(\.key) == ["c", "d", "b", "e", "a"])
        #expect(try t.db.query(path("/s"), Query(order: .priority, start: Query.Bound(.int(0)))).map(\.key) == ["b", "e", "a"])
        #expect(try t.db.query(path("/s"), Query(order: .priority, limit: .last(2))).map(\.key) == ["e", "a"])
        #expect(try t.db.query(path("/s"), Query(order: .priority, start: Query.Bound(.string("a")), limit: .first(1))).map(\.key) == ["e"])
        // Other orders keep working, limited ones through the index scan, with priorities on the nodes.
        let byValue = try t.db.query(path("/s"), Query(order: .value, limit: .first(2)))
        #expect(byValue.map(\.key) == ["a", "b"])
        #expect(byValue.map { exported($0.node) } == [#"{".value":1,".priority":"b"}"#, #"{".value":2,".priority":3}"#])
    }

    @Test func serverValuesAsPrioritiesAndIncrements() throws {
        let t = TempDatabase(clock: { 1234 })
        _ = try t.db.set(path("/a"), json(#"{"x":1,".priority":{".sv":"timestamp"}}"#))
        #expect(text(try t.db.get(path("/a/.priority"))) == "1234")
        _ = try t.db.set(path("/a/.priority"), json(#"{".sv":{"increment":6}}"#))
        #expect(text(try t.db.get(path("/a/.priority"))) == "1240")
        #expect(text(try t.db.increment(path("/a/.priority"), by: .int(-40))) == "1200")
        // Incrementing the value is a write of the value: the priority goes, as in Firebase.
        _ = try t.db.set(path("/n"), json(#"{".value":1,".priority":"p"}"#))
        #expect(text(try t.db.increment(path("/n"), by: .int(1))) == "2")
        #expect(exported(try t.db.export(path("/n"))) == "2")
    }

    @Test func compareAndSetKeepsThePriorityUnlessTheValueGivesOne() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/c"), json(#"{".value":1,".priority":"p"}"#))
        guard case .committed = try t.db.compareAndSet(path("/c"), expected: .int(1), value: .int(2)) else {
            Issue.record("expected a commit"); return
        }
        #expect(exported(try t.db.export(path("/c"))) == #"{".value":2,".priority":"p"}"#)
        _ = try t.db.compareAndSet(path("/c"), expected: .int(2), value: json(#"{".value":3,".priority":4}"#))
        #expect(exported(try t.db.export(path("/c"))) == #"{".value":3,".priority":4}"#)
        if case .committed = try t.db.compareAndSet(path("/c"), expected: .int(2), value: .int(9)) { Issue.record("stale value committed") }
        let outcome = try TransactionRunner.run(t.db, path: path("/c/.priority"), maxAttempts: 3) { current in
            if case .int(let n) = current { return .int(n * 10) }
            return nil
        }
        #expect(outcome.committed)
        #expect(exported(try t.db.export(path("/c"))) == #"{".value":3,".priority":40}"#)
    }

    @Test func observeSeesPriorityChanges() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/w"), json(#"{"a":1,"b":2}"#))
        let writer = t.another()
        var seen: [(String, [String]?)] = []
        try t.db.observe(path("/w"), idle: { true }) { value, keys in
            seen.append((exported(value), keys))
            switch seen.count {
            case 1: _ = try writer.set(path("/w/a/.priority"), .int(3))
            case 2: _ = try writer.set(path("/w/.priority"), .string("p"))
            default: break
            }
            return seen.count < 3
        }
        #expect(seen.map(\.0) == [#"{"a":1,"b":2}"#, #"{"a":{".value":1,".priority":3},"b":2}"#,
                                  #"{"a":{".value":1,".priority":3},"b":2,".priority":"p"}"#])
        #expect(seen[1].1 == ["a"])
        #expect(seen[2].1 == nil)
    }

    @Test func observeAPriorityPath() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/w"), json(#"{"a":{"x":1,".priority":1}}"#))
        let writer = t.another()
        var seen: [String] = []
        try t.db.observe(path("/w/a/.priority"), idle: { true }) { value, _ in
            seen.append(text(value))
            switch seen.count {
            case 1: _ = try writer.set(path("/w/a/.priority"), .int(2))
            case 2: _ = try writer.set(path("/w/a/x"), .null)   // emptied: the priority goes
            default: break
            }
            return seen.count < 3
        }
        #expect(seen == ["1", "2", "null"])
    }

    // MARK: schema migration

    /// A copy of the fixture written by rtdb 0.1.0 (schema version 1), in a fresh folder.
    private func versionOneCopy(_ t: TempDatabase) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v1.db")
        try FileManager.default.createDirectory(atPath: t.dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.path, toPath: t.file)
    }

    private func fixtureJSON() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/schema-v1.json")
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aVersionOneFileReadsAsItIsAndIsNotChangedByReads() throws {
        let t = TempDatabase()
        try versionOneCopy(t)
        #expect(try userVersion(t.file) == 1)
        #expect(text(try t.db.get(.root)) == (try fixtureJSON()))
        #expect(text(try t.db.export(.root)) == (try fixtureJSON()))
        #expect(text(try t.db.get(path("/users/alice/.priority"))) == "null")
        #expect(try t.db.query(path("/users"), Query(order: .priority)).map(\.key) == ["alice", "bob", "carol"])
        #expect(try userVersion(t.file) == 1)
    }

    @Test func theFirstWriteUpgradesAVersionOneFile() throws {
        let t = TempDatabase()
        try versionOneCopy(t)
        let reader = t.another()
        #expect(text(try reader.get(path("/n"))) == "1.5")   // a reader that saw version 1
        #expect(try userVersion(t.file) == 1)
        _ = try t.db.set(path("/users/bob/.priority"), .int(2))
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion)
        #expect(text(try t.db.get(.root)) == (try fixtureJSON()))
        #expect(exported(try t.db.export(path("/users/bob"))) == #"{"age":25,"tags":{"0":"a","1":"b"},".priority":2}"#)
        // The reader notices the upgrade made by another connection.
        #expect(text(try reader.get(path("/users/bob/.priority"))) == "2")
        #expect(try reader.query(path("/users"), Query(order: .priority)).map(\.key) == ["alice", "carol", "bob"])
    }

    @Test func aNewerSchemaIsNotDowngraded() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        try Connection(file: t.file, create: false, timeoutSeconds: 5).exec("PRAGMA user_version=\(EmbeddedDatabase.schemaVersion + 1)")
        let fresh = t.another()
        #expect(throws: RTDBError.self) { _ = try fresh.set(path("/a"), .int(2)) }
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion + 1)
    }
}
