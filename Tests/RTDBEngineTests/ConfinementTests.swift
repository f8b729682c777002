import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

/// A connection belongs to one thread at a time: the one that opened it, or the row writer's
/// while the rows' statements are lent to it (debug builds check it where statements run;
/// these tests check what those checks ask).
@Suite struct ConfinementTests {
    /// `body`'s answer on a thread of its own.
    func onAnotherThread(_ body: @escaping @Sendable () -> Bool) -> Bool {
        final class Answer: @unchecked Sendable { var value = false }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            answer.value = body()
            done.signal()
        }
        done.wait()
        return answer.value
    }

    /// Row writing with a writer thread, given one buffer's worth of rows under /list: the
    /// first full buffer (and the statements with it) has gone to the thread.
    func rowsPastOneBuffer(_ c: Connection) throws -> LeafRows {
        let rows = try LeafRows(c, background: true)
        var enc = EmbeddedDatabase.encode(path("/list"))
        let listEnd = enc.count
        for i in 0..<LeafRows.handoff {
            enc.removeSubrange(listEnd...)
            StorageKey.append("k\(i)", to: &enc)
            try rows.add(enc, .int(Int64(i)))
        }
        return rows
    }

    @Test func aConnectionBelongsToTheThreadThatOpenedIt() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        let c = try t.db.writeConnection()
        #expect(c.isOwnedByCurrentThread)
        nonisolated(unsafe) let shared = c
        #expect(onAnotherThread { shared.isOwnedByCurrentThread } == false)
    }

    @Test func rowsLentToTheWriterThreadTakeTheConnectionWithThemUntilTheFlush() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        let c = try t.db.writeConnection()
        try c.exec("BEGIN IMMEDIATE")
        defer { try? c.exec("ROLLBACK") }
        let rows = try rowsPastOneBuffer(c)
        // The first full buffer went to the writer, and the connection with it.
        #expect(!c.isOwnedByCurrentThread)
        try rows.flush()
        #expect(c.isOwnedByCurrentThread)
        #expect(try c.integer("SELECT count(*) FROM data") == Int64(LeafRows.handoff) + 1)
        rows.stop()
        #expect(c.isOwnedByCurrentThread)
    }

    @Test func aStoppedWriterGivesTheConnectionBack() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        let c = try t.db.writeConnection()
        try c.exec("BEGIN IMMEDIATE")
        defer { try? c.exec("ROLLBACK") }
        let rows = try rowsPastOneBuffer(c)
        #expect(!c.isOwnedByCurrentThread)
        rows.stop()
        #expect(c.isOwnedByCurrentThread)
    }

    /// A streamed import whose rows the writer thread cannot store (the file may not grow:
    /// SQLite's `max_page_count`, as a full disk) fails, says why, and leaves the old data.
    @Test func anImportThatFillsTheDiskLeavesTheOldDataWholeAndSaysWhy() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/keep"), json(#"{"a":1,"b":"kept"}"#))
        let c = try t.db.writeConnection()
        let pages = try #require(try c.integer("PRAGMA page_count"))
        _ = try c.integer("PRAGMA max_page_count=\(pages + 40)")
        var doc = "{"
        for i in 0..<20_000 { doc += (i > 0 ? "," : "") + "\"k\(i)\":\"" + String(repeating: "x", count: 100) + "\"" }
        doc += "}"
        #expect(throws: RTDBError(.ioError, "disk full while writing \(t.file); nothing was written")) {
            _ = try t.db.importJSON(path("/big"), from: BytesSource(Array(doc.utf8)), as: .set, window: 64)
        }
        #expect(c.isOwnedByCurrentThread)
        #expect(text(try t.db.get(.root)) == #"{"keep":{"a":1,"b":"kept"}}"#)
        // Writes that fit still work.
        _ = try t.db.set(path("/after"), .int(2))
        #expect(text(try t.db.get(path("/after"))) == "2")
    }
}
