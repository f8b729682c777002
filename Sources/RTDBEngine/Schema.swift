import CSQLite
import RTDBCore

/// The storage schema's versions and the migrations between them (see `EmbeddedDatabase`);
/// `writeConnection` runs the ones a file needs, in one transaction, on its first write.
extension EmbeddedDatabase {
    /// Schema version 1: the leaves and the write log.
    static func createSchemaVersion1(_ c: Connection) throws {
        try c.exec("""
            CREATE TABLE IF NOT EXISTS data(path TEXT PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS log(seq INTEGER PRIMARY KEY AUTOINCREMENT, paths TEXT NOT NULL);
            PRAGMA user_version=1;
            """)
    }

    /// Schema version 2: priorities, one row per node that has one (path encoded as in `data`).
    /// Existing data keeps its rows; a version-1 file simply had no priorities.
    static func migrateToSchemaVersion2(_ c: Connection) throws {
        try c.exec("""
            CREATE TABLE IF NOT EXISTS priorities(path TEXT PRIMARY KEY, p) WITHOUT ROWID;
            PRAGMA user_version=2;
            """)
    }

    /// Schema version 3: the paths of `data` and `priorities` become `StorageKey` blobs, so
    /// that storage order is Firebase's key order (every row is copied once, re-encoded), and
    /// the tables of persistent indexes (Indexes.swift) are added, empty.
    static func migrateToSchemaVersion3(_ c: Connection) throws {
        try c.exec("""
            ALTER TABLE main.data RENAME TO data_v2;
            ALTER TABLE main.priorities RENAME TO priorities_v2;
            CREATE TABLE main.data(path BLOB PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TABLE main.priorities(path BLOB PRIMARY KEY, p) WITHOUT ROWID;
            CREATE TABLE main.indexes(id INTEGER PRIMARY KEY, location TEXT NOT NULL, child TEXT NOT NULL);
            CREATE TABLE main.index_entries(ix INTEGER NOT NULL, parent BLOB NOT NULL, entry BLOB NOT NULL,
                                            PRIMARY KEY(ix, parent, entry)) WITHOUT ROWID;
            """)
        try copyReencoded(c, from: "main.data_v2", to: "main.data", column: "v")
        try copyReencoded(c, from: "main.priorities_v2", to: "main.priorities", column: "p")
        try c.exec("""
            DROP TABLE main.data_v2;
            DROP TABLE main.priorities_v2;
            PRAGMA user_version=3;
            """)
    }

    /// Copies the rows of a table with `/`-joined text paths into one keyed by `StorageKey`.
    static func copyReencoded(_ c: Connection, from old: String, to new: String, column: String) throws {
        let read = try c.statement("SELECT path, \(column) FROM \(old)")
        defer { read.reset() }
        let write = try c.statement("INSERT OR REPLACE INTO \(new)(path, \(column)) VALUES(?1, ?2)")
        while try read.step() {
            write.bind(1, blob: StorageKey.fromLegacy(read.bytes(0)))
            sqlite3_bind_value(write.handle, 2, sqlite3_column_value(read.handle, 1))
            try write.run()
        }
    }
}
