import RTDBEngine

/// Rules put through `/.settings/rules.json` are kept in the database file they govern, in a
/// table of the server's own beside the tree (`rtdb_settings`, one row per setting), so that
/// a restarted server enforces them again: rules held only in memory would leave the data
/// open to everyone after a restart. The table is made by the first rules put; a file
/// without it has no stored rules. Reads of the tree and every other command ignore it.
enum StoredRules {
    static let table = "rtdb_settings"
    /// The setting's row: the rules text exactly as put (comments kept, as GET answers it).
    static let key = "rules"

    /// The rules text stored in `db`'s file; nil when none is (no file, no table, no row).
    static func read(_ db: EmbeddedDatabase) throws -> String? {
        try db.readTransaction(nil) { t -> String? in
            guard try t.hasTable(table) else { return nil }
            let s = try t.connection.statement("SELECT value FROM \(table) WHERE name = ?1")
            defer { s.reset() }
            s.bind(1, text: key)
            return try s.step() ? s.string(0) : nil
        }
    }

    /// Stores `text` as the rules of `db`'s file (creating the file and the table if need
    /// be), in one write transaction: inside a group commit's batch it commits with the batch.
    static func write(_ text: String, to db: EmbeddedDatabase) throws {
        try db.writeTransaction { t in
            try t.connection.exec("CREATE TABLE IF NOT EXISTS \(table)(name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
            let s = try t.connection.statement("INSERT OR REPLACE INTO \(table)(name, value) VALUES(?1, ?2)")
            defer { s.reset() }
            s.bind(1, text: key)
            s.bind(2, text: text)
            try s.run()
        }
    }
}

extension EmbeddedDatabase {
    /// The rules text put through `/.settings/rules.json` and kept in this file; nil when none is.
    public func storedRules() throws -> String? { try StoredRules.read(self) }
}
