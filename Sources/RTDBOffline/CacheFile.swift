import RTDBCore
import RTDBEngine

/// The offline cache's tables in a database file, and the file's owner: a
/// cache file is an embedded database file whose tree is the **server cache** (never holding
/// unacknowledged writes), with these tables beside it:
/// `cache_meta` (one row: url, ns, format, server_time_offset_ms, updates_since_check),
/// `cache_writes` (the queue), `cache_rejections` (the last 100 rejected writes) and
/// `cache_rejections_seen` (those already shown: listed, or the error of their own command),
/// `cache_tracked_queries` + `cache_tracked_keys` (what the cache holds completely),
/// `cache_keep` (kept locations), `cache_session_principals` (who a client-side session's
/// writes are made as) and `cache_streams` (live watches that stream a location into it).
///
/// Only a handle whose companion is the `CacheFile` of the same url writes to a file that has
/// `cache_meta` (another url is `usage`); a plain handle whose companion is a `CacheFileGuard`
/// refuses to (`usage`), so `--db CACHE set …` cannot corrupt the server cache.
final class CacheFile: FileCompanion {
    /// The format of the cache tables.
    static let format: Int64 = 1

    /// The remote database's url (shown without credentials) and namespace.
    let url: String
    let namespace: String
    /// `cache_meta` was checked against the url.
    var verified = false

    init(url: String, namespace: String) {
        self.url = url
        self.namespace = namespace
    }

    static func isCacheFile(_ t: FileTransaction) throws -> Bool { try t.hasTable("cache_meta") }

    static func createTables(_ t: FileTransaction) throws {
        try t.connection.exec("""
            CREATE TABLE IF NOT EXISTS cache_meta(id INTEGER PRIMARY KEY CHECK(id = 1), url TEXT NOT NULL, ns TEXT NOT NULL,
                format INTEGER NOT NULL, server_time_offset_ms INTEGER, updates_since_check INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE IF NOT EXISTS cache_writes(id INTEGER PRIMARY KEY AUTOINCREMENT, cmd TEXT NOT NULL, kind TEXT NOT NULL,
                path TEXT NOT NULL, data TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
                created_ms INTEGER NOT NULL, principal TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS cache_writes_by_path ON cache_writes(path);
            CREATE TABLE IF NOT EXISTS cache_rejections(seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL, cmd TEXT NOT NULL,
                kind TEXT NOT NULL, path TEXT NOT NULL, data TEXT NOT NULL, principal TEXT NOT NULL, created_ms INTEGER NOT NULL,
                attempts INTEGER NOT NULL, code TEXT NOT NULL, error TEXT NOT NULL, at_ms INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS cache_tracked_queries(id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL,
                params TEXT NOT NULL, last_use_ms INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0, active_session TEXT,
                etag TEXT, UNIQUE(path, params));
            CREATE TABLE IF NOT EXISTS cache_tracked_keys(query_id INTEGER NOT NULL, key TEXT NOT NULL,
                PRIMARY KEY(query_id, key)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS cache_keep(path TEXT NOT NULL, params TEXT NOT NULL, PRIMARY KEY(path, params)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS cache_session_principals(session_id TEXT PRIMARY KEY, principal TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS cache_streams(session_id TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS cache_rejections_seen(seq INTEGER PRIMARY KEY);
            """)
    }

    // MARK: FileCompanion

    /// The cache's handle starts writing: an embedded database with data is not taken for a
    /// cache; the tables are made, and `cache_meta` checked (or written, for a new cache).
    func writerOpened(_ t: FileTransaction) throws {
        if try !CacheFile.isCacheFile(t), try !t.treeIsEmpty() {
            throw RTDBError(.usage, "\(t.file) is an embedded database, not an offline cache; give another --cache file")
        }
        try CacheFile.createTables(t)
        try checkMeta(t, create: true)
        verified = true
    }

    /// A client-side session's operations are the remote database's: they join the write
    /// queue, unresolved, as one update at the root made as the principal the session
    /// recorded, for the next flush to send (`--client-side`).
    func sessionEnding(_ t: FileTransaction, session id: String, writes: [(path: Path, value: Node)]) throws -> Bool {
        if writes.isEmpty { return true }
        let find = try t.connection.statement("SELECT principal FROM cache_session_principals WHERE session_id = ?1")
        find.bind(1, text: id)
        let principal = try find.step() ? find.string(0) : "anonymous"
        find.reset()
        _ = try CacheStore.append(t, cmd: "session", kind: .update, path: .root, data: CacheStore.updateData(writes), principal: principal)
        return true
    }

    func sessionEnded(_ t: FileTransaction, session id: String) throws {
        for sql in ["DELETE FROM cache_session_principals WHERE session_id = ?1", "DELETE FROM cache_streams WHERE session_id = ?1"] {
            let d = try t.connection.statement(sql)
            d.bind(1, text: id)
            try d.run()
        }
    }

    // MARK: meta

    func checkMeta(_ t: FileTransaction, create: Bool) throws {
        let s = try t.connection.statement("SELECT url, format FROM cache_meta WHERE id = 1")
        if try s.step() {
            let stored = s.string(0)
            let format = s.int(1)
            s.reset()
            if stored != url {
                throw RTDBError(.usage, "\(t.file) is the offline cache of \(stored), not of \(url); give another --cache file")
            }
            if format > CacheFile.format {
                throw RTDBError(.invalidDatabase, "\(t.file) is a cache of format \(format), newer than this rtdb reads")
            }
        } else {
            s.reset()
            guard create else { return }
            let ins = try t.connection.statement("INSERT INTO cache_meta(id, url, ns, format) VALUES(1, ?1, ?2, ?3)")
            ins.bind(1, text: url)
            ins.bind(2, text: namespace)
            ins.bind(3, int: CacheFile.format)
            try ins.run()
        }
    }

    /// Before a read of the cache's tables: false while the file holds no cache (nothing to
    /// read); an embedded database with data is refused; the url is checked once.
    func readable(_ t: FileTransaction) throws -> Bool {
        guard try CacheFile.isCacheFile(t) else {
            if try !t.treeIsEmpty() {
                throw RTDBError(.usage, "\(t.file) is an embedded database, not an offline cache; give another --cache file")
            }
            return false
        }
        if !verified {
            try checkMeta(t, create: false)
            verified = true
        }
        return true
    }
}

/// The companion of a plain handle on a database file (`--db`, `rtdb serve`): it refuses to
/// write into an offline cache, which is written only through its remote database.
public final class CacheFileGuard: FileCompanion {
    public init() {}

    public func writerOpened(_ t: FileTransaction) throws {
        guard try CacheFile.isCacheFile(t) else { return }
        let url = (try? t.connection.text("SELECT url FROM cache_meta")) ?? nil
        throw RTDBError(.usage, "\(t.file) is the offline cache of \(url ?? "a remote database"); it is written only through "
                        + "that database (--url URL --cache \(t.file)), not with --db")
    }

    public func sessionEnding(_ t: FileTransaction, session id: String, writes: [(path: Path, value: Node)]) throws -> Bool { false }

    public func sessionEnded(_ t: FileTransaction, session id: String) throws {}
}
