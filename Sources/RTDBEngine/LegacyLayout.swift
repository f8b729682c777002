import RTDBCore

/// Reading a file of an older schema (before version 3, paths stored as `/`-joined text), which
/// only a write upgrades (reads never change a file): the rows are converted into temporary tables named like the real
/// ones (`temp.data`, `temp.priorities`), which SQLite resolves before the file's own, so every
/// read works unchanged. The copy is made again when another process commits, and dropped when
/// the file has meanwhile been upgraded. Until then each change costs a reader a pass over the
/// whole file; the first write upgrades it for good.
extension EmbeddedDatabase {
    func refreshLegacyCopy(_ c: Connection) throws {
        let version = try c.integer("PRAGMA main.user_version") ?? 0
        if version >= 3 {
            try dropLegacyCopy(c)
            return
        }
        let dataVersion = try c.integer("PRAGMA main.data_version")
        if legacyVersion != nil && legacyVersion == dataVersion { return }
        try c.exec("""
            DROP TABLE IF EXISTS temp.data;
            DROP TABLE IF EXISTS temp.priorities;
            CREATE TEMP TABLE data(path BLOB PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TEMP TABLE priorities(path BLOB PRIMARY KEY, p) WITHOUT ROWID;
            """)
        try EmbeddedDatabase.copyReencoded(c, from: "main.data", to: "temp.data", column: "v")
        if version >= 2 {
            try EmbeddedDatabase.copyReencoded(c, from: "main.priorities", to: "temp.priorities", column: "p")
        }
        legacyVersion = dataVersion
    }

    /// Drops the converted copy, if this connection made one.
    func dropLegacyCopy(_ c: Connection) throws {
        guard legacyLayout else { return }
        try c.exec("DROP TABLE IF EXISTS temp.data; DROP TABLE IF EXISTS temp.priorities")
        legacyLayout = false
        legacyVersion = nil
    }
}
