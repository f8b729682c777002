import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How rtdb tells its own database files from every other file.
///
/// Invariant: rtdb changes nothing in a file (no journal mode, no pragma, no table) until
/// `check` has accepted it. Accepted are files marked with rtdb's `application_id`, files made
/// by the first release (no mark, `user_version` 1, exactly the tables `data`, `log` and
/// `sqlite_sequence`), and SQLite files that hold nothing at all (empty, or just created by
/// another rtdb process). Everything else is refused with `invalid_database` and left as found.
/// `mark` writes the `application_id` once the tables exist, so later checks are one pragma.
enum FileMark {
    /// `PRAGMA application_id` of an rtdb file: "RTDB" in ASCII.
    static let applicationID: Int64 = 0x5254_4442
    /// The `user_version` of files made before files were marked.
    static let unmarkedSchemaVersion: Int64 = 1

    enum Kind: Equatable {
        /// Marked with rtdb's application_id.
        case own
        /// Made by the first release: the right tables, not marked yet.
        case unmarked
        /// No tables and no version: nothing is stored yet.
        case blank
    }

    /// Classifies the file behind `c` by reading it only; throws `invalid_database` when it is
    /// not rtdb's (also when it is not an SQLite file at all). `newest` is the highest schema
    /// version this build understands.
    static func check(_ c: Connection, newest: Int64) throws -> Kind {
        // One snapshot for every read below: another process may be creating the file right
        // now, and its tables, version and mark must be seen together or not at all.
        try c.exec("BEGIN")
        defer { if !c.autocommit { try? c.exec("COMMIT") } }
        return try classify(c, newest: newest)
    }

    private static func classify(_ c: Connection, newest: Int64) throws -> Kind {
        let app = try c.integer("PRAGMA application_id") ?? 0
        let version = try c.integer("PRAGMA user_version") ?? 0
        if app == applicationID {
            if version > newest {
                throw RTDBError(.invalidDatabase, "\(c.file) was made by a newer rtdb (schema version \(version); "
                                + "this one reads up to \(newest)); it was left unchanged")
            }
            return .own
        }
        if app != 0 {
            throw foreign(c.file, "its application_id is \(hex(app)), not rtdb's")
        }
        var tables: [String] = []
        var others: [String] = []
        let s = try c.statement("SELECT type, name FROM sqlite_master")
        defer { s.reset() }
        while try s.step() {
            if s.string(0) == "table" { tables.append(s.string(1)) } else { others.append(s.string(1)) }
        }
        if tables.isEmpty && others.isEmpty && version == 0 { return .blank }
        let expected: Set<String> = ["data", "log", "sqlite_sequence"]
        if version == unmarkedSchemaVersion, others.isEmpty, tables.contains("data"), tables.contains("log"),
           tables.allSatisfy({ expected.contains($0) }) {
            return .unmarked
        }
        let list = tables.isEmpty ? "no tables" : "tables " + tables.sorted().prefix(5).joined(separator: ", ")
            + (tables.count > 5 ? ", …" : "")
        throw foreign(c.file, "it has user_version \(version) and \(list)")
    }

    /// Marks a checked file as rtdb's; runs after the tables exist (a write of its own).
    static func mark(_ c: Connection) throws {
        if try c.integer("PRAGMA application_id") != applicationID {
            try c.exec("PRAGMA application_id=\(applicationID)")
        }
    }

    /// Closes a refused connection so that the file stays exactly as it was found: a write-ahead
    /// log that already holds another program's changes is not checkpointed into its file.
    static func release(_ c: Connection) {
        var st = stat()
        if stat(c.file + "-wal", &st) == 0 && st.st_size > 0 {
            _ = rtdb_sqlite3_db_config_flag(c.handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        }
    }

    static func foreign(_ file: String, _ why: String) -> RTDBError {
        RTDBError(.invalidDatabase, "\(file) is not an rtdb database (\(why)); it was left unchanged. "
                  + "Name an rtdb database file with --db or RTDB_DB")
    }

    static func hex(_ n: Int64) -> String { "0x" + String(UInt32(truncatingIfNeeded: n), radix: 16) }
}
