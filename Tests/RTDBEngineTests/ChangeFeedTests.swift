import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

/// The change feed replays writes from any connection one by one, as they were made.
@Suite struct ChangeFeedTests {
    func describe(_ e: FeedEntry, in db: EmbeddedDatabase) -> String {
        switch try! db.change(of: e)! {
        case .set(let p, let v): return "set \(p) \(text(v))"
        case .update(let p, let list):
            return "update \(p) " + list.map { "\($0.path)=\(text($0.value))" }.joined(separator: " ")
        }
    }

    @Test func everyKindOfWriteIsRecordedInCommitOrder() throws {
        let t = TempDatabase()
        let writer = t.another()
        _ = try writer.set(path("/a"), json(#"{"x":1}"#))
        _ = try writer.update(path("/a"), [(path("y/z"), .int(2)), (path("x"), .null)])
        _ = try writer.increment(path("/n"), by: .int(5))
        _ = try writer.compareAndSet(path("/n"), expected: .int(5), value: .int(6))
        _ = try writer.set(path("/a"), .null)
        let feed = try t.db.feed(after: 0)
        #expect(!feed.gap)
        #expect(feed.entries.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(feed.entries.filter { !$0.exact }.isEmpty)
        #expect(feed.entries.map { describe($0, in: t.db) } == [
            #"set /a {"x":1}"#,
            "update /a /y/z=2 /x=null",
            "set /n 5",
            "set /n 6",
            "set /a null",
        ])
        // Reading from a later position returns only what follows it.
        #expect(try t.db.feed(after: 3).entries.map(\.seq) == [4, 5])
        #expect(try t.db.feed(after: 5).entries.isEmpty)
        #expect(try t.db.latestSeq() == 5)
    }

    @Test func aPushIsASetOfTheNewChildAndABatchOneUpdateOfTheNewChildren() throws {
        let t = TempDatabase()
        let one = try t.db.push(path("/list"), [json(#"{"text":"hi"}"#)])
        let added = try t.db.push(path("/list"), [.int(1), .string("two")])
        let feed = try t.db.feed(after: 0)
        #expect(feed.entries.count == 2)
        #expect(describe(feed.entries[0], in: t.db) == #"set /list/\#(one[0].key) {"text":"hi"}"#)
        guard case .update(let base, let list) = try t.db.change(of: feed.entries[1]) else {
            Issue.record("a batch of pushes should be an update"); return
        }
        #expect(base.description == "/list")
        #expect(list.map { $0.path.description } == added.map { "/" + $0.key })
        #expect(list.map { text($0.value) } == ["1", #""two""#])
    }

    @Test func anUpdateTooLargeToCopyIsReadBackAsAnUpdateFromItsBase() throws {
        let t = TempDatabase()
        var entries: [Node.Entry] = []
        for i in 0..<(EmbeddedDatabase.changeDataLeaves + 1) { entries.append(Node.Entry("k\(i)", .int(Int64(i)))) }
        let big = Node.object(normalizing: entries)
        // One path, below the base: still an update of that path.
        _ = try t.db.update(path("/u"), [(path("a/big"), big)])
        // Two paths sharing more than the base: the base stays the update's own.
        _ = try t.db.update(path("/u"), [(path("a/x"), big), (path("a/y"), .int(1))])
        let e = try t.db.feed(after: 0).entries
        #expect(e.map(\.exact) == [false, false])
        guard case .update(let base, let list) = try t.db.change(of: e[0]) else { Issue.record("expected an update"); return }
        #expect(base.description == "/u")
        #expect(list.map { $0.path.description } == ["/a/big"])
        #expect(list.first?.value.same(as: big) == true)
        #expect(describe(e[1], in: t.db).hasPrefix("update /u /a/x="))
        // A reader below the base reads the paths inside its location, from there.
        guard case .update(let at, let inside) = try t.db.change(of: e[1], at: path("/u/a")) else {
            Issue.record("expected an update"); return
        }
        #expect(at.description == "/u/a")
        #expect(inside.map { $0.path.description } == ["/x", "/y"])
    }

    @Test func serverValuesAreRecordedResolved() throws {
        let t = TempDatabase(clock: { 1_700_000_000_000 })
        _ = try t.db.set(path("/t"), json(#"{"at":{".sv":"timestamp"}}"#))
        #expect(try t.db.feed(after: 0).entries.map { describe($0, in: t.db) } == [#"set /t {"at":1700000000000}"#])
    }

    @Test func aLargeWriteIsReadBackFromTheData() throws {
        let t = TempDatabase()
        var entries: [Node.Entry] = []
        for i in 0..<(EmbeddedDatabase.changeDataLeaves + 1) { entries.append(Node.Entry("k\(i)", .int(Int64(i)))) }
        let big = Node.object(normalizing: entries)
        _ = try t.db.set(path("/big"), big)
        let e = try t.db.feed(after: 0).entries
        #expect(e.count == 1)
        #expect(e[0].exact == false)
        guard case .set(let p, let v) = try t.db.change(of: e[0]) else { Issue.record("expected a set"); return }
        #expect(p.description == "/big")
        #expect(v.same(as: big))
    }

    @Test func trimmedEntriesAreReportedAsAGap() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        _ = try t.db.set(path("/a"), .int(2))
        _ = try t.db.set(path("/a"), .int(3))
        // Simulate trimming: drop the first two entries.
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        try raw.exec("DELETE FROM log WHERE seq <= 2")
        #expect(try t.db.feed(after: 1).gap)
        #expect(try t.db.feed(after: 2).entries.map(\.seq) == [3])
    }

    /// A file laid out as schema version 3 wrote it: `log` with AUTOINCREMENT, the feed's
    /// operations in `changes` (left out with `withChanges: false`, as before the feed), and
    /// the data rows `/a` = 1 and `/b/c` = 7.
    func makeVersion3File(_ file: String, withChanges: Bool = true) throws {
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let raw = try Connection(file: file, create: true, timeoutSeconds: 1)
        try raw.exec("""
            PRAGMA journal_mode=WAL;
            CREATE TABLE data(path BLOB PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TABLE priorities(path BLOB PRIMARY KEY, p) WITHOUT ROWID;
            CREATE TABLE indexes(id INTEGER PRIMARY KEY, location TEXT NOT NULL, child TEXT NOT NULL);
            CREATE TABLE index_entries(ix INTEGER NOT NULL, parent BLOB NOT NULL, entry BLOB NOT NULL,
                                       PRIMARY KEY(ix, parent, entry)) WITHOUT ROWID;
            CREATE TABLE log(seq INTEGER PRIMARY KEY AUTOINCREMENT, paths TEXT NOT NULL);
            PRAGMA application_id=\(FileMark.applicationID);
            PRAGMA user_version=3;
            """)
        let ins = try raw.statement("INSERT INTO data(path, v) VALUES(?1, ?2)")
        for (p, v) in [("/a", Int64(1)), ("/b/c", 7)] {
            ins.bind(1, blob: StorageKey.encode(path(p)))
            ins.bind(2, int: v)
            try ins.run()
        }
        try raw.exec("INSERT INTO log(paths) VALUES('a'); INSERT INTO log(paths) VALUES('a\nb/c')")
        if withChanges {
            try raw.exec("""
                CREATE TABLE changes(seq INTEGER PRIMARY KEY, op TEXT NOT NULL, base TEXT NOT NULL, data TEXT);
                INSERT INTO changes(seq, op, base, data) VALUES(1, 'set', 'a', '1');
                """)
        }
    }

    func tableNames(_ file: String) throws -> [String] {
        let s = try Connection(file: file, create: false, timeoutSeconds: 1).statement("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var out: [String] = []
        while try s.step() { out.append(s.string(0)) }
        return out
    }

    @Test func aFileFromBeforeTheFeedReadsPathsAsTheirCurrentValues() throws {
        let t = TempDatabase()
        try makeVersion3File(t.file, withChanges: false)
        let e = try t.db.feed(after: 0).entries
        #expect(e.map(\.exact) == [false, false])
        #expect(e.map { describe($0, in: t.db) } == ["set /a 1", "update / /a=1 /b/c=7"])
    }

    @Test func aVersion3FileIsReadAsItIsAndItsFeedGoesOnAfterTheUpgrade() throws {
        let t = TempDatabase()
        try makeVersion3File(t.file)
        // A reader joins the old `changes` table and leaves the file as it is.
        let reader = t.another()
        let before = try reader.feed(after: 0).entries
        #expect(before.map(\.seq) == [1, 2])
        #expect(before.map(\.exact) == [true, false])
        #expect(before.map { describe($0, in: reader) } == ["set /a 1", "update / /a=1 /b/c=7"])
        #expect(try userVersion(t.file) == 3)
        // The first write upgrades it: one log table, no AUTOINCREMENT, numbering goes on.
        _ = try t.db.set(path("/c"), .string("hi"))
        #expect(try userVersion(t.file) == EmbeddedDatabase.schemaVersion)
        #expect(try !tableNames(t.file).contains("changes"))
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try raw.integer("SELECT count(*) FROM sqlite_sequence WHERE name = 'log'") == 0)
        let after = try reader.feed(after: 0).entries
        #expect(after.map(\.seq) == [1, 2, 3])
        #expect(after.map(\.exact) == [true, false, true])
        #expect(after.map { describe($0, in: reader) } == ["set /a 1", "update / /a=1 /b/c=7", #"set /c "hi""#])
        #expect(try reader.feed(after: 2).entries.map(\.seq) == [3])
        #expect(try reader.latestSeq() == 3)
        #expect(text(try reader.get(.root)) == #"{"a":1,"b":{"c":7},"c":"hi"}"#)
    }

    @Test func theUpgradeKeepsTheCountOfAnEmptiedLog() throws {
        let t = TempDatabase()
        try makeVersion3File(t.file)
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        try raw.exec("DELETE FROM log; DELETE FROM changes; UPDATE sqlite_sequence SET seq = 7 WHERE name = 'log'")
        _ = try t.db.set(path("/a"), .int(2))
        // Seq 7 stands for what the emptied log no longer says: the whole tree may have changed.
        let e = try t.another().feed(after: 6).entries
        #expect(e.map(\.seq) == [7, 8])
        #expect(e.map(\.exact) == [false, true])
        #expect(e.map { describe($0, in: t.db) } == [#"set / {"a":2,"b":{"c":7}}"#, "set /a 2"])
    }

    @Test func batchedWritesCommitTogetherAndAFailedOneRollsBackAlone() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(1))
        t.db.beginBatch()
        _ = try t.db.set(path("/a"), .int(1))
        // A write that fails halfway leaves nothing of itself behind.
        #expect(throws: RTDBError.self) {
            _ = try t.db.writingInBatch { c in
                try c.exec("INSERT INTO data(path, v) VALUES('b', 1)")
                throw RTDBError(.internal, "failed halfway")
            }
        }
        _ = try t.db.increment(path("/n"), by: .int(1))
        // Another connection sees nothing before the commit.
        #expect(text(try t.another().get(path("/a"))) == "null")
        try t.db.commitBatch()
        let other = t.another()
        #expect(text(try other.get(.root)) == #"{"a":1,"n":2}"#)
        #expect(try other.feed(after: 1).entries.map { describe($0, in: other) } == ["set /a 1", "set /n 2"])
        // After the batch, writes commit on their own again.
        _ = try t.db.set(path("/c"), .int(3))
        #expect(text(try t.another().get(path("/c"))) == "3")
    }

    @Test func snapshotsCarryTheirLogPosition() throws {
        let t = TempDatabase()
        #expect(try t.db.snapshot(at: path("/a")).seq == 0)
        _ = try t.db.set(path("/a"), json(#"{"x":3,"y":1,"z":2}"#))
        let s = try t.db.snapshot(at: path("/a"))
        #expect(s.seq == 1)
        #expect(text(s.value) == #"{"x":3,"y":1,"z":2}"#)
        let q = try t.db.querySnapshot(path("/a"), Query(order: .value, limit: .first(2)))
        #expect(q.seq == 1)
        #expect(q.entries.map(\.key) == ["y", "z"])
    }
}
