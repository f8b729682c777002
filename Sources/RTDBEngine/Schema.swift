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

    /// Schema version 4: the change feed's operations move into `log` (one row per write
    /// instead of a `log` row and a `changes` row), and `log` drops AUTOINCREMENT, whose
    /// `sqlite_sequence` row every write also rewrote: a write changes one page fewer or two.
    /// Sequence numbers go on from the old ones: the newest row is never trimmed, so the next
    /// row's seq (one past the largest) continues the count; should the log be empty while the
    /// counter ran further, a row at the counter's value keeps it (paths: the root, which makes
    /// a watcher that missed it read everything again).
    static func migrateToSchemaVersion4(_ c: Connection) throws {
        let hasChanges = try c.integer("SELECT count(*) FROM sqlite_master WHERE name = 'changes'") == 1
        try c.exec("""
            CREATE TABLE main.log_v4(seq INTEGER PRIMARY KEY, paths TEXT NOT NULL, op TEXT, base TEXT, data TEXT);
            INSERT INTO main.log_v4(seq, paths, op, base, data)
            \(hasChanges
                ? "SELECT log.seq, log.paths, changes.op, changes.base, changes.data FROM main.log LEFT JOIN main.changes ON changes.seq = log.seq"
                : "SELECT seq, paths, NULL, NULL, NULL FROM main.log");
            """)
        let hasCounter = try c.integer("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'") == 1
        let counted = hasCounter ? try c.integer("SELECT seq FROM main.sqlite_sequence WHERE name = 'log'") ?? 0 : 0
        let newest = try c.integer("SELECT COALESCE(MAX(seq), 0) FROM main.log_v4") ?? 0
        if counted > newest {
            try c.exec("INSERT INTO main.log_v4(seq, paths) VALUES(\(counted), '')")
        }
        try c.exec("""
            DROP TABLE main.log;
            DROP TABLE IF EXISTS main.changes;
            ALTER TABLE main.log_v4 RENAME TO log;
            PRAGMA user_version=4;
            """)
    }

    /// Schema version 5: `sizes`, the count of every node at or above `sizeThreshold`
    /// (StoredSizes.swift), so that a read's size is known without scanning its rows. An older
    /// file's table is filled here, in the upgrade's transaction, from one scan of every row
    /// (about as long as reading the whole file once); every write keeps it exact after that.
    func migrateToSchemaVersion5(_ c: Connection) throws {
        try c.exec("CREATE TABLE IF NOT EXISTS main.sizes(path BLOB PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID")
        try c.exec("DELETE FROM main.sizes")
        let sizes = try scanSizes(c, [])
        let insert = try c.statement("INSERT INTO main.sizes(path, bytes) VALUES(?1, ?2)")
        for row in sizes.found + (sizes.total >= sizeThreshold ? [(key: [], bytes: sizes.total)] : []) {
            insert.bind(1, blob: row.key)
            insert.bind(2, int: Int64(row.bytes))
            try insert.run()
        }
        try c.exec("PRAGMA user_version=5")
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
