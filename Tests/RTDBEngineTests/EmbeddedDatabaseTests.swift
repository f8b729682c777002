import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

@Suite struct EmbeddedDatabaseTests {
    @Test func readingAMissingFileIsNullAndCreatesNothing() throws {
        let t = TempDatabase()
        #expect(text(try t.db.get(.root)) == "null")
        #expect(text(try t.db.shallow(path("/a"))) == "null")
        #expect(try t.db.query(.root, Query()).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: t.dir))
    }

    @Test func holdsDataLooksUpWithoutReading() throws {
        let t = TempDatabase()
        #expect(try !t.db.holdsData(.root))
        #expect(!FileManager.default.fileExists(atPath: t.dir))
        _ = try t.db.set(.root, json(#"{"a":{"b":"null"},"p":{".value":1,".priority":2}}"#))
        for p in ["/", "/a", "/a/b", "/p", "/p/.priority"] { #expect(try t.db.holdsData(path(p)), "\(p)") }
        for p in ["/b", "/a/c", "/a/b/c", "/a/.priority"] { #expect(try !t.db.holdsData(path(p)), "\(p)") }
        _ = try t.db.set(.root, .null)
        #expect(try !t.db.holdsData(.root))
    }

    @Test func firstWriteCreatesParentFolders() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        #expect(FileManager.default.fileExists(atPath: t.file))
        #expect(text(try t.another().get(path("/a"))) == "1")
    }

    @Test func setReplacesAndReadsSubtrees() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"a":{"b":1,"c":{"d":true}},"e":"x","f":1.5}"#))
        #expect(text(try t.db.get(.root)) == #"{"a":{"b":1,"c":{"d":true}},"e":"x","f":1.5}"#)
        #expect(text(try t.db.get(path("/a/c"))) == #"{"d":true}"#)
        #expect(text(try t.db.get(path("/a/c/d"))) == "true")
        _ = try t.db.set(path("/a"), json(#"{"z":false}"#))
        #expect(text(try t.db.get(.root)) == #"{"a":{"z":false},"e":"x","f":1.5}"#)
    }

    @Test func writingBelowALeafReplacesTheLeaf() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        _ = try t.db.set(path("/a/b/c"), .int(2))
        #expect(text(try t.db.get(.root)) == #"{"a":{"b":{"c":2}}}"#)
        _ = try t.db.set(.root, .string("leaf"))
        #expect(text(try t.db.get(.root)) == #""leaf""#)
        _ = try t.db.set(path("/x"), .int(3))
        #expect(text(try t.db.get(.root)) == #"{"x":3}"#)
    }

    @Test func overwritingANodeLeavesItsSiblingsAndItsAncestorsAlone() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"items":{"k1":{"n":1},"k10":2,"1":3,"10":{"m":4},"k1x":5}}"#))
        // A node that held a value is replaced in place: one range of rows, nothing above.
        _ = try t.db.set(path("/items/k1"), json(#"{"n":2,"t":"x"}"#))
        _ = try t.db.set(path("/items/1"), json(#"{"p":6}"#))
        _ = try t.db.set(path("/items/10"), .int(7))
        #expect(text(try t.db.get(.root)) == #"{"items":{"1":{"p":6},"10":7,"k1":{"n":2,"t":"x"},"k10":2,"k1x":5}}"#)
        // An empty node below a leaf still replaces the leaf.
        _ = try t.db.set(path("/items/k10/deep/er"), .bool(true))
        #expect(text(try t.db.get(path("/items/k10"))) == #"{"deep":{"er":true}}"#)
        _ = try t.db.set(path("/items/k10/deep"), .null)
        #expect(text(try t.db.get(path("/items"))) == #"{"1":{"p":6},"10":7,"k1":{"n":2,"t":"x"},"k1x":5}"#)
    }

    @Test func siblingsWhoseNamesExtendEachOtherStayApart() throws {
        // "a-b" and "a!" sort between "a" and "a/…" in storage; subtrees must not mix.
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"a":{"x":1,"y":{"z":2}},"a-b":{"q":3},"a!":4,"a b":{"c":5},"a0":6}"#))
        #expect(text(try t.db.get(.root)) == #"{"a":{"x":1,"y":{"z":2}},"a b":{"c":5},"a!":4,"a-b":{"q":3},"a0":6}"#)
        #expect(text(try t.db.get(path("/a"))) == #"{"x":1,"y":{"z":2}}"#)
        #expect(text(try t.db.shallow(.root)) == #"{"a":true,"a b":true,"a!":true,"a-b":true,"a0":true}"#)
        _ = try t.db.set(path("/a"), .null)
        #expect(text(try t.db.get(.root)) == #"{"a b":{"c":5},"a!":4,"a-b":{"q":3},"a0":6}"#)
    }

    @Test func keysAreKeptByteForByte() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/k/\u{E9}"), .int(1))
        _ = try t.db.set(path("/k/e\u{301}"), .int(2))
        let v = try t.db.get(path("/k"))
        #expect(v.children.count == 2)
        #expect(text(try t.db.get(path("/k/\u{E9}"))) == "1")
        #expect(text(try t.db.get(path("/k/e\u{301}"))) == "2")
    }

    @Test func valuesRoundTripExactly() throws {
        let t = TempDatabase()
        let doc = #"{"big":9223372036854775807,"neg":-9223372036854775808,"d":0.1,"one":1,"onef":1.5e300,"s":"h\u00e9\n","t":true,"f":false}"#
        _ = try t.db.set(.root, json(doc))
        let back = try t.db.get(.root)
        #expect(text(back) == text(json(doc)))
        if case .int(let n) = back.child("big") { #expect(n == Int64.max) } else { Issue.record("big is not an int") }
    }

    @Test func updateIsAllPathsAtOnce() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"u":{"a":{"n":1,"m":2},"b":{"n":3}}}"#))
        _ = try t.db.update(path("/u"), [(path("a/n"), .int(10)), (path("b"), .null), (path("c/x"), .bool(true))])
        #expect(text(try t.db.get(.root)) == #"{"u":{"a":{"m":2,"n":10},"c":{"x":true}}}"#)
    }

    @Test func serverValuesResolveAgainstThePreviousData() throws {
        let t = TempDatabase(clock: { 1234 })
        _ = try t.db.set(path("/c"), json(#"{"n":4,"m":1}"#))
        let stored = try t.db.set(path("/c"), json(#"{"n":{".sv":{"increment":1}},"t":{".sv":"timestamp"},"u":{".sv":"timestamp"}}"#))
        #expect(text(stored) == #"{"n":5,"t":1234,"u":1234}"#)
        #expect(text(try t.db.get(path("/c"))) == #"{"n":5,"t":1234,"u":1234}"#)
        let upd = try t.db.update(path("/c"), [(path("n"), json(#"{".sv":{"increment":0.5}}"#))])
        #expect(text(upd[0].value) == "5.5")
    }

    @Test func incrementFollowsTheServerValueRules() throws {
        let t = TempDatabase()
        #expect(text(try t.db.increment(path("/n"), by: .int(1))) == "1")
        #expect(text(try t.db.increment(path("/n"), by: .int(-3))) == "-2")
        #expect(text(try t.db.increment(path("/n"), by: .double(0.5))) == "-1.5")
        _ = try t.db.set(path("/s"), .string("abc"))
        #expect(text(try t.db.increment(path("/s"), by: .int(2))) == "2")
        _ = try t.db.set(path("/o"), json(#"{"x":1}"#))
        #expect(text(try t.db.increment(path("/o"), by: .int(7))) == "7")
        #expect(text(try t.db.get(path("/o"))) == "7")
        _ = try t.db.set(path("/max"), .int(Int64.max))
        #expect(text(try t.db.increment(path("/max"), by: .int(1))) == "9223372036854776000")
    }

    @Test func pushKeysAreChronologicalAndAtomic() throws {
        let t = TempDatabase()
        let pushed = try t.db.push(path("/list"), [.int(1), .int(2), .int(3)])
        #expect(pushed.count == 3)
        #expect(pushed.allSatisfy { $0.key.utf8.count == 20 })
        #expect(pushed[0].key < pushed[1].key && pushed[1].key < pushed[2].key)
        let q = try t.db.query(path("/list"), Query())
        #expect(q.map(\.key) == pushed.map(\.key))
        #expect(q.map { text($0.node) } == ["1", "2", "3"])
    }

    @Test func compareAndSetDetectsStaleValues() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/v"), .int(1))
        guard case .committed = try t.db.compareAndSet(path("/v"), expected: .int(1), value: .int(2)) else {
            Issue.record("expected a commit"); return
        }
        guard case .stale(let cur) = try t.db.compareAndSet(path("/v"), expected: .int(1), value: .int(3)) else {
            Issue.record("expected a stale result"); return
        }
        #expect(text(cur) == "2")
        #expect(text(try t.db.get(path("/v"))) == "2")
    }

    @Test func transactionRunnerRetriesOnConflict() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = t.another()
        var calls = 0
        var pauses: [Int] = []
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: 5,
                                                backoff: { pauses.append($0) }) { current in
            calls += 1
            if calls == 1 { _ = try other.set(path("/n"), .int(100)) }   // a concurrent writer
            guard case .int(let n) = current else { return .int(1) }
            return .int(n + 1)
        }
        #expect(outcome.committed)
        #expect(outcome.attempts == 2)
        #expect(pauses == [2])
        #expect(text(try t.db.get(path("/n"))) == "101")
    }

    @Test func valueIsReadAgainAfterTheBackoffPause() throws {
        // A write that lands during the pause must be the next attempt's input, or the pause
        // would only make that attempt stale too.
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = t.another()
        var calls = 0
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: 5,
                                                backoff: { _ in _ = try? other.set(path("/n"), .int(500)) }) { current in
            calls += 1
            if calls == 1 { _ = try other.set(path("/n"), .int(100)) }
            guard case .int(let n) = current else { return .int(1) }
            return .int(n + 1)
        }
        #expect(outcome.committed)
        #expect(outcome.attempts == 2)
        #expect(text(try t.db.get(path("/n"))) == "501")
    }

    @Test func transactionAbortWritesNothing() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(5))
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: 25) { _ in nil }
        #expect(!outcome.committed)
        #expect(text(outcome.value) == "5")
        #expect(outcome.attempts == 1)
    }

    @Test func shallowListsChildrenAndPrimitives() throws {
        let t = TempDatabase()
        _ = try t.db.set(.root, json(#"{"a":{"x":{"y":1}},"b":2,"c":{"z":3}}"#))
        #expect(text(try t.db.shallow(.root)) == #"{"a":true,"b":true,"c":true}"#)
        #expect(text(try t.db.shallow(path("/b"))) == "2")
        #expect(text(try t.db.shallow(path("/a"))) == #"{"x":true}"#)
        #expect(text(try t.db.shallow(path("/nope"))) == "null")
    }

    @Test func limitedQueriesByChildMatchTheFullWindow() throws {
        // The engine answers limited value/child queries without reading every child; the
        // answer must equal Query.window over the full data.
        let t = TempDatabase()
        var entries: [Node.Entry] = []
        for i in 0..<300 {
            var fields: [Node.Entry] = [Node.Entry("name", .string("n\(i % 17)"))]
            if i % 5 != 0 { fields.append(Node.Entry("x", i % 7 == 0 ? .string("s\(i % 3)") : .int(Int64((i * 37) % 50)))) }
            if i % 11 == 0 { fields.append(Node.Entry("x", .object([Node.Entry("deep", .int(1))]))) }
            if i % 13 == 0 { fields = [Node.Entry("m", .object([Node.Entry("v", .int(Int64(i % 4)))]))] }
            entries.append(Node.Entry("k\(i)", Node.object(normalizing: fields)))
        }
        entries.append(Node.Entry("leaf", .int(3)))
        entries.append(Node.Entry("7", .bool(true)))
        let data = Node.object(normalizing: entries)
        _ = try t.db.set(path("/items"), data)
        let queries: [Query] = [
            Query(order: .child(path("x")), limit: .last(10)),
            Query(order: .child(path("x")), limit: .first(10)),
            Query(order: .child(path("x")), start: Query.Bound(.int(10)), end: Query.Bound(.int(20)), limit: .first(5)),
            Query(order: .child(path("x")), start: Query.Bound(.int(10), exclusive: true), limit: .last(7)),
            Query(order: .child(path("m/v")), limit: .last(4)),
            Query(order: .child(path("x")), start: Query.Bound(.null), end: Query.Bound(.null), limit: .first(3)),
            Query(order: .value, limit: .first(5)),
            Query(order: .value, limit: .last(5)),
        ]
        for q in queries {
            let fromEngine = try t.db.query(path("/items"), q).map { "\($0.key)=\(text($0.node))" }
            let expected = q.window(of: data).map { "\($0.key)=\(text($0.node))" }
            #expect(fromEngine == expected)
        }
    }

    @Test func infoIsNotWritable() {
        #expect(throws: RTDBError.self) { try WriteCheck.writable(path("/.info/x")) }
    }

    @Test func observeSeesOtherConnectionsWrites() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/w"), json(#"{"a":1}"#))
        let writer = t.another()
        var seen: [(String, [String]?)] = []
        try t.db.observe(path("/w"), idle: { true }) { value, keys in
            seen.append((text(value), keys))
            switch seen.count {
            case 1: _ = try writer.set(path("/w/b"), .int(2))
            case 2: _ = try writer.set(path("/other"), .int(9)); _ = try writer.set(path("/w/a"), .null)
            case 3: _ = try writer.set(.root, json(#"{"w":"leaf"}"#))
            default: break
            }
            return seen.count < 4
        }
        #expect(seen.map(\.0) == [#"{"a":1}"#, #"{"a":1,"b":2}"#, #"{"b":2}"#, #""leaf""#])
        #expect(seen[1].1 == ["b"])
        #expect(seen[2].1 == ["a"])
        #expect(seen[3].1 == nil)
    }

    @Test func notADatabaseIsAClearError() throws {
        let t = TempDatabase()
        try FileManager.default.createDirectory(atPath: t.dir + "/sub", withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: t.file))
        do {
            _ = try t.db.get(.root)
            Issue.record("expected an error")
        } catch let e as RTDBError {
            #expect(e.code == .invalidDatabase)
        }
    }

    @Test func anotherProgramsSQLiteFileIsRefusedForReadsAndWrites() throws {
        let t = TempDatabase()
        try FileManager.default.createDirectory(atPath: t.dir + "/sub", withIntermediateDirectories: true)
        do {
            let other = try Connection(file: t.file, create: true, timeoutSeconds: 1)
            try other.exec("PRAGMA user_version=5; CREATE TABLE data(x); INSERT INTO data VALUES (1)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: t.file))
        for attempt in [{ _ = try t.db.get(.root) }, { _ = try t.db.set(path("/a"), .int(1)) },
                        { _ = try t.db.increment(path("/n"), by: .int(1)) }] as [() throws -> Void] {
            do {
                try attempt()
                Issue.record("expected invalid_database")
            } catch let e as RTDBError {
                #expect(e.code == .invalidDatabase)
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: t.file)) == before)
    }

    @Test func anUnmarkedFileOfTheFirstReleaseIsMarkedOnItsFirstWrite() throws {
        let t = TempDatabase()
        try FileManager.default.createDirectory(atPath: t.dir + "/sub", withIntermediateDirectories: true)
        do {
            let old = try Connection(file: t.file, create: true, timeoutSeconds: 1)
            try old.exec("""
                PRAGMA journal_mode=WAL;
                CREATE TABLE data(path TEXT PRIMARY KEY, v) WITHOUT ROWID;
                CREATE TABLE log(seq INTEGER PRIMARY KEY AUTOINCREMENT, paths TEXT NOT NULL);
                PRAGMA user_version=1;
                INSERT INTO data VALUES ('a', 1);
                """)
        }
        #expect(text(try t.db.get(.root)) == #"{"a":1}"#)
        _ = try t.db.set(path("/b"), .int(2))
        let check = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try check.integer("PRAGMA application_id") == FileMark.applicationID)
        #expect(try FileMark.check(check, newest: EmbeddedDatabase.schemaVersion) == .own)
        #expect(text(try t.another().get(.root)) == #"{"a":1,"b":2}"#)
    }

    @Test func theCheckpointIntervalIsTheWritersChoice() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        #expect(try t.db.writeConnection().integer("PRAGMA wal_autocheckpoint") == 1000)   // SQLite's
        let server = t.another()
        server.checkpointPages = 10_000
        _ = try server.set(path("/b"), .int(2))
        #expect(try server.writeConnection().integer("PRAGMA wal_autocheckpoint") == 10_000)
    }

}
