import CSQLite
import Testing
import RTDBCore
@testable import RTDBEngine

/// The SQL statements one write runs, as `rtdb serve` runs it (one write in a group commit's
/// batch), counted with SQLite's statement trace: every statement is work on the hot path of a
/// durable write, so the count is held down here, and a write of a new key costs no more
/// statements than an overwrite.
@Suite struct WriteStatementsTests {
    /// The texts of the statements SQLite starts while `body` runs on `db`'s connection.
    static func traced(_ db: EmbeddedDatabase, _ body: () throws -> Void) throws -> [String] {
        let c = try db.writeConnection()
        let box = StatementLog()
        let context = Unmanaged.passUnretained(box).toOpaque()
        sqlite3_trace_v2(c.handle, UInt32(SQLITE_TRACE_STMT), { _, context, _, sql in
            guard let context, let sql else { return 0 }
            let text = String(cString: sql.assumingMemoryBound(to: CChar.self))
            Unmanaged<StatementLog>.fromOpaque(context).takeUnretainedValue().texts.append(text)
            return 0
        }, context)
        defer { sqlite3_trace_v2(c.handle, 0, nil, nil) }
        try body()
        return box.texts
    }

    final class StatementLog { var texts: [String] = [] }

    /// One durable write as serve makes it: a batch of one, committed.
    static func servedWrite(_ db: EmbeddedDatabase, _ p: String, _ value: Node) throws -> [String] {
        try traced(db) {
            db.beginBatch(waitingForLock: false)
            _ = try db.set(path(p), value)
            try db.commitBatch()
        }
    }

    /// A file as serve's benchmark finds it, written once by this handle already.
    static func warmedUp() throws -> TempDatabase {
        let t = TempDatabase()
        _ = try t.db.set(path("/small"), json(#"{"a":1,"b":"two"}"#))
        _ = try t.db.set(path("/w"), json(#"{"n":1}"#))
        _ = try t.db.set(path("/items/k0"), json(#"{"n":1,"text":"hi"}"#))
        return t
    }

    /// Begin, the old rows out, the new row in, the change log, commit (the write that opens a
    /// batch needs no savepoint):
    /// nothing for stored sizes, indexes or priorities in a file that has none of them.
    @Test func anOverwriteRunsFewStatements() throws {
        let t = try WriteStatementsTests.warmedUp()
        let texts = try WriteStatementsTests.servedWrite(t.db, "/w", json(#"{"n":1}"#))
        #expect(texts.count <= 5, "\(texts)")
    }

    /// A new key costs one statement more than an overwrite (a leaf above the new node would
    /// shadow it), whatever its depth.
    @Test func anInsertRunsNoMoreStatementsThanAnOverwriteButOne() throws {
        let t = try WriteStatementsTests.warmedUp()
        let overwrite = try WriteStatementsTests.servedWrite(t.db, "/w", json(#"{"n":1}"#))
        let insert = try WriteStatementsTests.servedWrite(t.db, "/k1", json(#"{"n":1}"#))
        let deeper = try WriteStatementsTests.servedWrite(t.db, "/items/k1/x/y", json(#"{"n":1}"#))
        #expect(insert.count <= overwrite.count + 1, "\(insert) against \(overwrite)")
        #expect(deeper.count == insert.count, "\(deeper) against \(insert)")
    }

    /// The first write of a handle (or the first after another connection wrote) learns what
    /// the file holds; the writes after it run no statement to ask again.
    @Test func anotherConnectionsWriteIsNoticed() throws {
        let t = try WriteStatementsTests.warmedUp()
        _ = try WriteStatementsTests.servedWrite(t.db, "/w", json(#"{"n":2}"#))
        _ = try t.another().set(path("/p"), json(#"{"x":1,".priority":3}"#))
        let after = try WriteStatementsTests.servedWrite(t.db, "/w", json(#"{"n":3}"#))
        #expect(after.contains("SELECT 1 FROM priorities LIMIT 1"), "\(after)")
        #expect(after.contains("SELECT id, location, child FROM indexes ORDER BY id"), "\(after)")
        let next = try WriteStatementsTests.servedWrite(t.db, "/w", json(#"{"n":4}"#))
        #expect(!next.contains("SELECT id, location, child FROM indexes ORDER BY id"), "\(next)")
    }
}
