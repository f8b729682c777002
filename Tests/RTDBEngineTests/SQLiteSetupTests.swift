import Testing
import CSQLite
import RTDBCore
@testable import RTDBEngine

/// SQLite is set up once, before the first connection opens: without memory statistics, whose
/// counters take a global mutex on every allocation (about 4% of a durable PUT's instructions
/// in rtdb serve). Nothing in rtdb reads them.
@Suite struct SQLiteSetupTests {
    @Test func sqliteKeepsNoMemoryStatistics() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json(#"{"b":[1,2,3],"c":"text"}"#))
        #expect(JSONWriter.string(try t.db.get(path("/a/c"))) == #""text""#)
        // With statistics on, the connection's caches alone would show here.
        #expect(sqlite3_memory_used() == 0)
    }
}
