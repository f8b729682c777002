import RTDBCore

/// A module that keeps tables of its own in a database file, beside the tree. The engine
/// knows nothing of what they hold:
/// it lends the companion the file's connection inside its transactions (`FileTransaction`)
/// and tells it the moments that concern it. A handle has at most one (`companion`).
public protocol FileCompanion: AnyObject {
    /// Once per connection that writes, in a write transaction of its own before anything
    /// else is written: create tables, or refuse the file (throw; nothing is written then).
    func writerOpened(_ t: FileTransaction) throws
    /// In the transaction that ends (or reaps) session `id`, with its operations merged into
    /// one multi-path update at the root (server values unresolved): true when the companion
    /// takes them, so they are not applied to the tree.
    func sessionEnding(_ t: FileTransaction, session id: String, writes: [(path: Path, value: Node)]) throws -> Bool
    /// In the same transaction, once the session's rows are gone (also when it is abandoned):
    /// forget what was kept for it.
    func sessionEnded(_ t: FileTransaction, session id: String) throws
}

/// The file's connection inside one of the database's transactions, with the tree's own
/// primitives, for a `FileCompanion` or a module reading and writing its tables
/// (`EmbeddedDatabase.readTransaction`, `writeTransaction`). Valid only during the call it is
/// given to.
public struct FileTransaction {
    let db: EmbeddedDatabase
    /// The connection, for the companion's own statements.
    public let connection: Connection

    /// Above this many paths, a logged change names their common location instead.
    public static var logMaxPaths: Int { EmbeddedDatabase.logMaxPaths }

    public var file: String { db.file }

    /// The database's clock: milliseconds since the Unix epoch.
    public func now() -> Int64 { db.clock() }

    /// The value at `path` in the tree (without priorities).
    public func read(_ path: Path) throws -> Node { try db.read(connection, path) }

    /// The value at `path` with its priorities, as an export shows it.
    public func readExport(_ path: Path) throws -> Node { try db.readExport(connection, path) }

    /// Replaces the value at `path` in the tree with `value` (server values already resolved),
    /// keeping the indexes exact. Watchers learn of it only through `log`.
    public func write(_ path: Path, _ value: Node) throws { try db.write(connection, path, value) }

    /// Records a change of the tree for watchers and the change feed, as every write does.
    public func log(_ paths: [Path], _ change: LoggedChange) throws { try db.log(connection, paths, change) }

    /// Wakes watchers of `path` although the tree did not change there: what the companion
    /// shows at `path` did (no change feed entry: the tree is as it was).
    public func touch(_ path: Path) throws {
        let ins = try connection.statement("INSERT INTO log(paths) VALUES(?1)")
        ins.bind(1, text: EmbeddedDatabase.encodeString(path.node))
        try ins.run()
    }

    /// Whether the file has a table named `name`.
    public func hasTable(_ name: String) throws -> Bool {
        let s = try connection.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")
        defer { s.reset() }
        s.bind(1, text: name)
        return try s.step() && s.int(0) == 1
    }

    /// True when the tree holds nothing (or has no table yet).
    public func treeIsEmpty() throws -> Bool {
        guard try hasTable("data") else { return true }
        return try connection.integer("SELECT count(*) FROM (SELECT 1 FROM data LIMIT 1)") ?? 0 == 0
    }

    /// An estimate of the tree's size: Σ(length(path) + length(value)) over its rows.
    public func storedBytes() throws -> Int {
        Int(try connection.integer("SELECT coalesce(sum(length(path) + coalesce(length(v), 0)), 0) FROM data") ?? 0)
    }
}

extension EmbeddedDatabase {
    /// Runs `body` in a read transaction (one snapshot), or answers `empty` while nothing is
    /// stored (no file yet, or no tables).
    public func readTransaction<T>(_ empty: T, _ body: (FileTransaction) throws -> T) throws -> T {
        try reading(empty) { c in try body(FileTransaction(db: self, connection: c)) }
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`, committed when it returns,
    /// rolled back when it throws), creating the file on first use. Without `durable` the
    /// commit is not synced to disk (for bookkeeping whose loss costs nothing but accuracy).
    public func writeTransaction<T>(durable: Bool = true, _ body: (FileTransaction) throws -> T) throws -> T {
        if !durable {
            let c = try retryingWhileBusy { try writeConnection() }
            try c.exec("PRAGMA synchronous=OFF")
            defer { try? c.exec("PRAGMA synchronous=FULL") }
            return try writing { c in try body(FileTransaction(db: self, connection: c)) }
        }
        return try writing { c in try body(FileTransaction(db: self, connection: c)) }
    }

    /// Gives the space of deleted rows back to the file system (`VACUUM`), once the file
    /// exists and may be written.
    public func vacuum() throws {
        try writing { _ in }
        try writeConnection().exec("VACUUM")
    }

    /// The database's clock: milliseconds since the Unix epoch.
    public func now() -> Int64 { clock() }

    /// A counter that changes when another connection commits to the file (nil while there is
    /// no file): a watcher that also reads through other means looks at it to notice them.
    public func commitCounter() throws -> Int64? { try dataVersion() }

    /// Runs the companion's `writerOpened` in a write transaction of its own.
    func openWriterForCompanion(_ c: Connection) throws {
        guard let companion else { return }
        try c.exec("BEGIN IMMEDIATE")
        do {
            try companion.writerOpened(FileTransaction(db: self, connection: c))
            try c.exec("COMMIT")
        } catch {
            if !c.autocommit { try? c.exec("ROLLBACK") }
            throw error
        }
    }
}
