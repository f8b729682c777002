import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A write waiting in an offline cache's queue (`cache_writes`, offline.md §2.1).
///
/// Invariant: ids increase strictly (SQLite `AUTOINCREMENT`: a deleted id is never reused), so
/// id order is the order the writes were made in, across processes and restarts.
public struct QueuedWrite: Sendable {
    public enum Kind: String, Sendable { case set, update }
    public enum State: String, Sendable { case pending, sending }

    public var id: Int64
    /// The command that made it: `set`, `update`, `push`, `remove` or `increment`.
    public var cmd: String
    public var kind: Kind
    public var path: Path
    /// Unresolved: a set's value, or an update's object of relative paths (`{"a/b":v}`).
    public var data: Node
    /// `sending`: a flusher sent it (or was about to) and has not seen the answer.
    public var state: State
    /// How many times it was marked `sending`; more than one means it may have been applied before.
    public var attempts: Int
    public var createdMillis: Int64
    /// `uid:<sub>`, `admin` or `anonymous`: who made it (never a credential).
    public var principal: String

    public init(id: Int64, cmd: String, kind: Kind, path: Path, data: Node, state: State, attempts: Int,
                createdMillis: Int64, principal: String) {
        self.id = id
        self.cmd = cmd
        self.kind = kind
        self.path = path
        self.data = data
        self.state = state
        self.attempts = attempts
        self.createdMillis = createdMillis
        self.principal = principal
    }

    /// The write as sets at absolute paths (one for a set, one per key of an update).
    public var sets: [(path: Path, value: Node)] {
        switch kind {
        case .set: return [(path, data)]
        case .update:
            return data.children.compactMap { e in (try? Path(e.key)).map { (path.appending($0), e.node) } }
        }
    }
}

/// A rejected write, kept in `cache_rejections` (the last 100).
public struct RejectedWrite: Sendable {
    public var write: QueuedWrite
    /// The error code (`permission_denied`, `invalid_data`, `too_large`, …) and the server's words.
    public var code: String
    public var message: String
    public var atMillis: Int64
}

/// A tracked query (offline.md §1.2): a location (`params` = `{}`, the default query) or a
/// filtered query whose answer the cache holds.
public struct TrackedQuery: Sendable {
    public var id: Int64
    public var path: Path
    /// Canonical query JSON; `{}` for a query without range or limit (any order).
    public var params: String
    public var lastUseMillis: Int64
    public var complete: Bool
    /// The session that keeps it active (a live watch or sync), if any.
    public var activeSession: String?
    /// The server's ETag of a complete default query, for `if-none-match`.
    public var etag: String?
    /// The result keys of a filtered query.
    public var keys: [String]

    public var isDefault: Bool { params == EmbeddedDatabase.defaultParams }
}

/// What the cache knows at a path: the server cache with the pending writes layered on top.
public struct CacheRead: Sendable {
    /// The layered value; when not `complete`, only the known children (or null).
    public var value: Node
    /// True when the value is whole (offline.md §1.3, §2.4).
    public var complete: Bool
    /// A pending write with server values was applied: the value holds estimates.
    public var estimated: Bool
    /// The tracked queries the answer came from, with their `last_use_ms` (for `touchQueries`).
    public var usedQueries: [(id: Int64, lastUseMillis: Int64)] = []
}

/// The offline cache for a remote database (offline.md §2.1). A cache file is an embedded
/// database file: its tree (`data`) is the **server cache**, never holding unacknowledged
/// writes, and these tables sit beside it:
/// `cache_meta` (one row: url, ns, format, server_time_offset_ms, updates_since_check),
/// `cache_writes` (the queue), `cache_rejections` (the last 100 rejected writes),
/// `cache_tracked_queries` + `cache_tracked_keys` (what the cache holds completely) and
/// `cache_keep` (kept locations).
///
/// A handle becomes a cache handle with `attachCache(url:namespace:)`; only such a handle
/// writes to a file that has `cache_meta`, and only when the url matches (else `usage`). A
/// plain embedded handle refuses to write into a cache file (`usage`), so `--db CACHE set …`
/// cannot corrupt the server cache. Every method is one transaction; any number of processes
/// may use one file at once.
extension EmbeddedDatabase {
    /// The canonical params of a default query.
    public static let defaultParams = "{}"
    /// The format of the cache tables.
    public static let cacheFormat: Int64 = 1
    /// How many rejections `cache_rejections` keeps.
    public static let rejectionsKept: Int64 = 100

    /// Makes this handle the owner of an offline cache for `url` (shown without credentials).
    /// Nothing is opened: the file is checked on first use.
    public func attachCache(url: String, namespace: String) {
        cacheIdentity = (url, namespace)
    }

    static func createCacheTables(_ c: Connection) throws {
        try c.exec("""
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
            """)
    }

    /// Called once per connection that writes (see `writeConnection`): a cache handle creates
    /// its tables and checks `cache_meta`; a plain handle refuses a cache file.
    func checkCacheOnWrite(_ c: Connection) throws {
        if let identity = cacheIdentity {
            try c.exec("BEGIN IMMEDIATE")
            do {
                if try !EmbeddedDatabase.isCacheFile(c), try c.integer("SELECT count(*) FROM (SELECT 1 FROM data LIMIT 1)") ?? 0 > 0 {
                    throw RTDBError(.usage, "\(file) is an embedded database, not an offline cache; give another --cache file")
                }
                try EmbeddedDatabase.createCacheTables(c)
                try checkMeta(c, identity, create: true)
                try c.exec("COMMIT")
            } catch {
                if !c.autocommit { try? c.exec("ROLLBACK") }
                throw error
            }
            cacheVerified = true
        } else if try EmbeddedDatabase.isCacheFile(c) {
            let url = (try? c.text("SELECT url FROM cache_meta")) ?? nil
            throw RTDBError(.usage, "\(file) is the offline cache of \(url ?? "a remote database"); it is written only through "
                            + "that database (--url URL --cache \(file)), not with --db")
        }
    }

    static func isCacheFile(_ c: Connection) throws -> Bool {
        try c.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'cache_meta'") == 1
    }

    private func checkMeta(_ c: Connection, _ identity: (url: String, namespace: String), create: Bool) throws {
        let s = try c.statement("SELECT url, format FROM cache_meta WHERE id = 1")
        if try s.step() {
            let url = s.string(0)
            let format = s.int(1)
            s.reset()
            if url != identity.url {
                throw RTDBError(.usage, "\(file) is the offline cache of \(url), not of \(identity.url); give another --cache file")
            }
            if format > EmbeddedDatabase.cacheFormat {
                throw RTDBError(.invalidDatabase, "\(file) is a cache of format \(format), newer than this rtdb reads")
            }
        } else {
            s.reset()
            guard create else { return }
            let ins = try c.statement("INSERT INTO cache_meta(id, url, ns, format) VALUES(1, ?1, ?2, ?3)")
            ins.bind(1, text: identity.url)
            ins.bind(2, text: identity.namespace)
            ins.bind(3, int: EmbeddedDatabase.cacheFormat)
            try ins.run()
        }
    }

    /// Runs `body` in a read transaction on a cache file, or answers `empty` while the file or
    /// its cache tables do not exist. The url is checked once per handle.
    func readingCache<T>(_ empty: T, _ body: (Connection) throws -> T) throws -> T {
        try reading(empty) { c in
            guard try EmbeddedDatabase.isCacheFile(c) else {
                if try c.integer("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'data'") == 1,
                   try c.integer("SELECT count(*) FROM (SELECT 1 FROM data LIMIT 1)") ?? 0 > 0 {
                    throw RTDBError(.usage, "\(file) is an embedded database, not an offline cache; give another --cache file")
                }
                return empty
            }
            if !cacheVerified, let identity = cacheIdentity {
                try checkMeta(c, identity, create: false)
                cacheVerified = true
            }
            return try body(c)
        }
    }

    // MARK: the queue

    /// Appends a write to the queue in one `BEGIN IMMEDIATE` transaction and returns its id.
    /// `data` is stored unresolved (server values and priorities kept); an update's data is
    /// `updateData(_:)` of its entries, so that deletions (nulls) are kept.
    public func appendWrite(cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node, principal: String) throws -> Int64 {
        try writing { c in
            let s = try c.statement("INSERT INTO cache_writes(cmd, kind, path, data, created_ms, principal) VALUES(?1, ?2, ?3, ?4, ?5, ?6)")
            s.bind(1, text: cmd)
            s.bind(2, text: kind.rawValue)
            s.bind(3, text: path.description)
            s.bind(4, text: JSONWriter.string(data, export: true))
            s.bind(5, int: clock())
            s.bind(6, text: principal)
            try s.run()
            let id = Int64(sqlite3_last_insert_rowid(c.handle))
            try logQueueChange(c, path)
            return id
        }
    }

    /// Inside a write transaction on a cache file: queues the operations of session `id` as
    /// one update at the root, made as the principal the session recorded.
    func queueSessionWrites(_ c: Connection, id: String, _ entries: [(path: Path, value: Node)]) throws {
        let find = try c.statement("SELECT principal FROM cache_session_principals WHERE session_id = ?1")
        find.bind(1, text: id)
        let principal = try find.step() ? find.string(0) : "anonymous"
        find.reset()
        let s = try c.statement("INSERT INTO cache_writes(cmd, kind, path, data, created_ms, principal) VALUES(?1, ?2, ?3, ?4, ?5, ?6)")
        s.bind(1, text: "session")
        s.bind(2, text: QueuedWrite.Kind.update.rawValue)
        s.bind(3, text: Path.root.description)
        s.bind(4, text: JSONWriter.string(EmbeddedDatabase.updateData(entries), export: true))
        s.bind(5, int: clock())
        s.bind(6, text: principal)
        try s.run()
        try logQueueChange(c, .root)
    }

    /// The data of a queued update: an object of relative paths, nulls kept.
    public static func updateData(_ entries: [(path: Path, value: Node)]) -> Node {
        .object(entries.map { Node.Entry($0.path.unrooted, $0.value) })
    }

    /// Wakes watchers of the file: a queue change changes what the cache shows at `path`.
    private func logQueueChange(_ c: Connection, _ path: Path) throws {
        let ins = try c.statement("INSERT INTO log(paths) VALUES(?1)")
        ins.bind(1, text: EmbeddedDatabase.encodeString(path.node))
        try ins.run()
    }

    private static let writeColumns = "id, cmd, kind, path, data, state, attempts, created_ms, principal"

    private static func queuedWrite(_ s: Statement) throws -> QueuedWrite {
        let kind = QueuedWrite.Kind(rawValue: s.string(2)) ?? .set
        // An update keeps its nulls (deletions) and its keys as written.
        let data: Node = kind == .update ? .object(try JSONReader.parseEntries(s.string(4)) ?? []) : try JSONReader.parse(s.string(4))
        return QueuedWrite(id: s.int(0), cmd: s.string(1), kind: kind,
                    path: try Path(s.string(3)), data: data,
                    state: QueuedWrite.State(rawValue: s.string(5)) ?? .pending, attempts: Int(s.int(6)),
                    createdMillis: s.int(7), principal: s.string(8))
    }

    /// The queued writes in id order (those with id ≤ `through` when given).
    public func queuedWrites(through: Int64? = nil) throws -> [QueuedWrite] {
        try readingCache([]) { c in try queued(c, through: through) }
    }

    func queued(_ c: Connection, through: Int64?) throws -> [QueuedWrite] {
        let s = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE id <= ?1 ORDER BY id")
        defer { s.reset() }
        s.bind(1, int: through ?? Int64.max)
        var out: [QueuedWrite] = []
        while try s.step() { out.append(try EmbeddedDatabase.queuedWrite(s)) }
        return out
    }

    /// The queued writes made at `path`, at one of its `ancestors` or below `path`, in id
    /// order: the only ones that can change what `path` holds (an update's sets are below its path).
    func queued(_ c: Connection, touching path: Path, ancestors: [Path]) throws -> [QueuedWrite] {
        var out: [QueuedWrite] = []
        let at = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE path = ?1")
        for p in ancestors {
            at.reset()
            at.bind(1, text: p.description)
            while try at.step() { out.append(try EmbeddedDatabase.queuedWrite(at)) }
        }
        at.reset()
        let prefix = path.isRoot ? "/" : path.description + "/"
        let below = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE path > ?1 AND path < ?2")
        defer { below.reset() }
        below.bind(1, text: prefix)
        below.bind(2, text: String(prefix.dropLast()) + "0")   // "0" follows "/"
        while try below.step() { out.append(try EmbeddedDatabase.queuedWrite(below)) }
        return out.sorted { $0.id < $1.id }
    }

    /// The queued write `id`, or nil when it is gone (acknowledged, rejected or dropped).
    public func queuedWrite(id: Int64) throws -> QueuedWrite? {
        try readingCache(nil) { c in
            let s = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE id = ?1")
            defer { s.reset() }
            s.bind(1, int: id)
            return try s.step() ? try EmbeddedDatabase.queuedWrite(s) : nil
        }
    }

    /// True when a write with id ≤ `through` (any, when nil) is queued.
    public func hasQueuedWrites(through: Int64? = nil) throws -> Bool {
        try readingCache(false) { c in
            let s = try c.statement("SELECT 1 FROM cache_writes WHERE id <= ?1 LIMIT 1")
            defer { s.reset() }
            s.bind(1, int: through ?? Int64.max)
            return try s.step()
        }
    }

    /// The number of queued writes.
    public func queuedCount() throws -> Int {
        try readingCache(0) { c in Int(try c.integer("SELECT count(*) FROM cache_writes") ?? 0) }
    }

    /// Marks write `id` as being sent (`state = sending`, `attempts + 1`) and commits; returns
    /// the row as it was before, or nil when it is gone.
    public func beginSending(id: Int64) throws -> QueuedWrite? {
        try writing { c in try markSending(c, id) }
    }

    /// Marks the rows `ids` as being sent together in one transaction; returns those found, as
    /// they were before, in the order given.
    public func beginSending(ids: [Int64]) throws -> [QueuedWrite] {
        try writing { c in try ids.compactMap { try markSending(c, $0) } }
    }

    /// Undoes `beginSending(ids:)` for rows whose request was answered with a refusal of the
    /// whole: nothing of them was applied, so they are pending and unsent again.
    public func unmarkSending(ids: [Int64]) throws {
        try writing { c in
            let u = try c.statement("UPDATE cache_writes SET state = 'pending', attempts = max(attempts - 1, 0) WHERE id = ?1")
            for id in ids {
                u.reset()
                u.bind(1, int: id)
                try u.run()
            }
        }
    }

    /// Acknowledges several rows at once (one request carried them all), in one transaction.
    public func acknowledge(batch: [(id: Int64, store: [(path: Path, value: Node)], complete: [Path], incomplete: [Path])]) throws {
        try writing { c in
            let d = try c.statement("DELETE FROM cache_writes WHERE id = ?1")
            var stored: [(path: Path, value: Node)] = []
            for row in batch {
                d.reset()
                d.bind(1, int: row.id)
                try d.run()
                for s in row.store { try write(c, s.path, s.value) }
                stored += row.store
            }
            if !stored.isEmpty {
                try log(c, stored.count > EmbeddedDatabase.logMaxPaths ? [.root] : stored.map { $0.path }, .update(.root, stored))
            }
            let now = clock()
            for row in batch {
                for p in row.complete { try track(c, p, EmbeddedDatabase.defaultParams, complete: true, keys: nil, etag: nil, now: now) }
                for p in row.incomplete { try dropCompleteness(c, p) }
            }
            if !stored.isEmpty { try countCacheUpdate(c, bytes: stored.reduce(0) { $0 + EmbeddedDatabase.approximateBytes($1.value) },
                                                     protect: stored.map { ($0.path, EmbeddedDatabase.defaultParams) }) }
        }
    }

    /// Puts write `id` back to `pending` (a flush paused before it was answered).
    public func returnToPending(id: Int64) throws {
        try writing { c in
            let u = try c.statement("UPDATE cache_writes SET state = 'pending' WHERE id = ?1")
            u.bind(1, int: id)
            try u.run()
        }
    }

    /// The server acknowledged write `id`: in one transaction, deletes the row, stores each of
    /// `store` (values as the server holds them) in the server cache and marks each of
    /// `complete` as a complete default query. `incomplete` paths lose completeness instead
    /// (a value that could not be read back). With `beginSending`, that row is marked as
    /// being sent in the same transaction (one commit per row for a flusher that goes on at
    /// once); its row as it was before is returned (nil when it is gone).
    @discardableResult
    public func acknowledge(id: Int64, store: [(path: Path, value: Node)], complete: [Path], incomplete: [Path] = [],
                            beginSending next: Int64? = nil) throws -> QueuedWrite? {
        try writing { c in
            let d = try c.statement("DELETE FROM cache_writes WHERE id = ?1")
            d.bind(1, int: id)
            try d.run()
            for s in store {
                try write(c, s.path, s.value)
            }
            if !store.isEmpty {
                try log(c, store.map { $0.path }, store.count == 1 ? .set(store[0].path, store[0].value) : .update(.root, store))
            } else {
                try logQueueChange(c, .root)
            }
            let now = clock()
            for p in complete { try track(c, p, EmbeddedDatabase.defaultParams, complete: true, keys: nil, etag: nil, now: now) }
            for p in incomplete { try dropCompleteness(c, p) }
            if !store.isEmpty { try countCacheUpdate(c, bytes: store.reduce(0) { $0 + EmbeddedDatabase.approximateBytes($1.value) },
                                                    protect: store.map { ($0.path, EmbeddedDatabase.defaultParams) }) }
            guard let next else { return nil }
            return try markSending(c, next)
        }
    }

    private func markSending(_ c: Connection, _ id: Int64) throws -> QueuedWrite? {
        let s = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE id = ?1")
        s.bind(1, int: id)
        guard try s.step() else { s.reset(); return nil }
        let row = try EmbeddedDatabase.queuedWrite(s)
        s.reset()
        let u = try c.statement("UPDATE cache_writes SET state = 'sending', attempts = attempts + 1 WHERE id = ?1")
        u.bind(1, int: id)
        try u.run()
        return row
    }

    /// Removes write `id` and logs it as rejected with `code` and `message` (the last 100 are
    /// kept). Returns the row, or nil when it was already gone.
    @discardableResult
    public func reject(id: Int64, code: String, message: String) throws -> QueuedWrite? {
        try writing { c in
            guard let row = try deleteRow(c, id) else { return nil }
            let ins = try c.statement("""
                INSERT INTO cache_rejections(id, cmd, kind, path, data, principal, created_ms, attempts, code, error, at_ms)
                VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """)
            ins.bind(1, int: row.id)
            ins.bind(2, text: row.cmd)
            ins.bind(3, text: row.kind.rawValue)
            ins.bind(4, text: row.path.description)
            ins.bind(5, text: JSONWriter.string(row.data, export: true))
            ins.bind(6, text: row.principal)
            ins.bind(7, int: row.createdMillis)
            ins.bind(8, int: Int64(row.attempts))
            ins.bind(9, text: code)
            ins.bind(10, text: message)
            ins.bind(11, int: clock())
            try ins.run()
            let trim = try c.statement("DELETE FROM cache_rejections WHERE seq <= (SELECT max(seq) FROM cache_rejections) - ?1")
            trim.bind(1, int: EmbeddedDatabase.rejectionsKept)
            try trim.run()
            return row
        }
    }

    private func deleteRow(_ c: Connection, _ id: Int64) throws -> QueuedWrite? {
        let s = try c.statement("SELECT \(EmbeddedDatabase.writeColumns) FROM cache_writes WHERE id = ?1")
        s.bind(1, int: id)
        guard try s.step() else { s.reset(); return nil }
        let row = try EmbeddedDatabase.queuedWrite(s)
        s.reset()
        let d = try c.statement("DELETE FROM cache_writes WHERE id = ?1")
        d.bind(1, int: id)
        try d.run()
        try logQueueChange(c, row.path)
        return row
    }

    /// Drops write `id` unsent (`queue drop`); nil when there is no such row.
    public func dropWrite(id: Int64) throws -> QueuedWrite? {
        try writing { c in try deleteRow(c, id) }
    }

    /// Drops every queued write (`queue clear`), returning them in id order.
    public func clearWrites() throws -> [QueuedWrite] {
        try writing { c in
            let rows = try queued(c, through: nil)
            for r in rows { _ = try deleteRow(c, r.id) }
            return rows
        }
    }

    /// The logged rejections, oldest first.
    public func rejections() throws -> [RejectedWrite] {
        try readingCache([]) { c in
            let s = try c.statement("""
                SELECT id, cmd, kind, path, data, 'rejected', attempts, created_ms, principal, code, error, at_ms
                FROM cache_rejections ORDER BY seq
                """)
            defer { s.reset() }
            var out: [RejectedWrite] = []
            while try s.step() {
                out.append(RejectedWrite(write: try EmbeddedDatabase.queuedWrite(s), code: s.string(9), message: s.string(10), atMillis: s.int(11)))
            }
            return out
        }
    }

    // MARK: tracked queries

    /// Stores a server answer at `path` and records it as a complete tracked query, in one
    /// transaction. A default query (`params == "{}"`) replaces the whole value and keeps
    /// `etag`; a filtered query stores each child of its answer and records their keys.
    public func storeServerAnswer(_ path: Path, params: String, value: Node, etag: String? = nil) throws {
        try writing { c in
            let now = clock()
            if params == EmbeddedDatabase.defaultParams {
                try write(c, path, value)
                try log(c, [path], .set(path, value))
                try track(c, path, params, complete: true, keys: nil, etag: etag, now: now)
            } else {
                let children = value.children
                for e in children { try write(c, path.appending(e.key), e.node) }
                if !children.isEmpty {
                    let entries = children.map { (path: Path(validatedKeys: [$0.key]), value: $0.node) }
                    try log(c, children.count > EmbeddedDatabase.logMaxPaths ? [path] : children.map { path.appending($0.key) },
                            .update(path, entries))
                }
                try track(c, path, params, complete: true, keys: children.map { $0.key }, etag: nil, now: now)
            }
            try countCacheUpdate(c, bytes: EmbeddedDatabase.approximateBytes(value), protect: [(path, params)])
        }
    }

    /// Records (or updates) a tracked query. `keys` replaces the query's tracked keys when given.
    public func trackQuery(_ path: Path, params: String, complete: Bool, keys: [String]? = nil, etag: String? = nil) throws {
        try writing { c in try track(c, path, params, complete: complete, keys: keys, etag: etag, now: clock()) }
    }

    func track(_ c: Connection, _ path: Path, _ params: String, complete: Bool, keys: [String]?, etag: String?, now: Int64) throws {
        let up = try c.statement("""
            INSERT INTO cache_tracked_queries(path, params, last_use_ms, complete, etag) VALUES(?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(path, params) DO UPDATE SET last_use_ms = excluded.last_use_ms, complete = excluded.complete,
                etag = excluded.etag
            """)
        up.bind(1, text: path.description)
        up.bind(2, text: params)
        up.bind(3, int: now)
        up.bind(4, int: complete ? 1 : 0)
        if let etag { up.bind(5, text: etag) } else { sqlite3_bind_null(up.handle, 5) }
        try up.run()
        guard let keys else { return }
        let idq = try c.statement("SELECT id FROM cache_tracked_queries WHERE path = ?1 AND params = ?2")
        idq.bind(1, text: path.description)
        idq.bind(2, text: params)
        guard try idq.step() else { idq.reset(); return }
        let id = idq.int(0)
        idq.reset()
        let del = try c.statement("DELETE FROM cache_tracked_keys WHERE query_id = ?1")
        del.bind(1, int: id)
        try del.run()
        let ins = try c.statement("INSERT OR IGNORE INTO cache_tracked_keys(query_id, key) VALUES(?1, ?2)")
        for k in keys {
            ins.reset()
            ins.bind(1, int: id)
            ins.bind(2, text: k)
            try ins.run()
        }
    }

    /// Marks every tracked query at or above `path` incomplete (its cached data may be wrong).
    func dropCompleteness(_ c: Connection, _ path: Path) throws {
        let u = try c.statement("UPDATE cache_tracked_queries SET complete = 0, etag = NULL WHERE path = ?1")
        var p: Path? = path
        while let q = p {
            u.reset()
            u.bind(1, text: q.description)
            try u.run()
            p = q.parent
        }
    }

    /// Sets `last_use_ms` of a tracked query to now (every read does).
    public func touchQuery(_ path: Path, params: String) throws {
        try writing { c in
            let u = try c.statement("UPDATE cache_tracked_queries SET last_use_ms = ?3 WHERE path = ?1 AND params = ?2")
            u.bind(1, text: path.description)
            u.bind(2, text: params)
            u.bind(3, int: clock())
            try u.run()
        }
    }

    /// How stale a query's `last_use_ms` may get before a read from the cache sets it again.
    public static let touchGranularityMillis: Int64 = 60_000

    /// Sets `last_use_ms` of the `used` tracked queries to now, for a read answered from the
    /// cache, when it is older than `touchGranularityMillis` (the purge needs the order of use,
    /// not the millisecond: so a read in a loop stays a read). The commit is not synced to disk
    /// (a lost use time only makes a query look older to the purge).
    public func touchQueries(_ used: [(id: Int64, lastUseMillis: Int64)]) throws {
        let now = clock()
        let ids = used.filter { now - $0.lastUseMillis >= EmbeddedDatabase.touchGranularityMillis }.map { $0.id }
        if ids.isEmpty { return }
        let c = try retryingWhileBusy { try writeConnection() }
        try c.exec("PRAGMA synchronous=OFF")
        defer { try? c.exec("PRAGMA synchronous=FULL") }
        try writing { c in
            let u = try c.statement("UPDATE cache_tracked_queries SET last_use_ms = ?2 WHERE id = ?1")
            for id in ids {
                u.reset()
                u.bind(1, int: id)
                u.bind(2, int: now)
                try u.run()
            }
        }
    }

    /// Every tracked query with its keys, in id order.
    public func trackedQueries() throws -> [TrackedQuery] {
        try readingCache([]) { c in try tracked(c, where: nil) }
    }

    /// The tracked queries whose path is one of `paths` (nil: all).
    func tracked(_ c: Connection, where paths: [Path]?) throws -> [TrackedQuery] {
        var out: [TrackedQuery] = []
        let keys = try c.statement("SELECT key FROM cache_tracked_keys WHERE query_id = ?1")
        func add(_ s: Statement) throws {
            var q = TrackedQuery(id: s.int(0), path: try Path(s.string(1)), params: s.string(2), lastUseMillis: s.int(3),
                                 complete: s.int(4) != 0, activeSession: sqlite3_column_type(s.handle, 5) == SQLITE_NULL ? nil : s.string(5),
                                 etag: sqlite3_column_type(s.handle, 6) == SQLITE_NULL ? nil : s.string(6), keys: [])
            if !q.isDefault {
                keys.reset()
                keys.bind(1, int: q.id)
                while try keys.step() { q.keys.append(keys.string(0)) }
                keys.reset()
            }
            out.append(q)
        }
        let columns = "id, path, params, last_use_ms, complete, active_session, etag"
        if let paths {
            let s = try c.statement("SELECT \(columns) FROM cache_tracked_queries WHERE path = ?1 ORDER BY id")
            for p in paths {
                s.reset()
                s.bind(1, text: p.description)
                while try s.step() { try add(s) }
            }
            s.reset()
        } else {
            let s = try c.statement("SELECT \(columns) FROM cache_tracked_queries ORDER BY id")
            defer { s.reset() }
            while try s.step() { try add(s) }
        }
        return out
    }

    /// The ETag stored with the complete default query at `path`, if any.
    public func storedETag(_ path: Path) throws -> String? {
        try readingCache(nil) { c in
            let s = try c.statement("SELECT etag FROM cache_tracked_queries WHERE path = ?1 AND params = '{}' AND complete = 1")
            defer { s.reset() }
            s.bind(1, text: path.description)
            guard try s.step(), sqlite3_column_type(s.handle, 0) != SQLITE_NULL else { return nil }
            return s.string(0)
        }
    }

    // MARK: reading

    /// The server cache plus the pending writes at `path`, with completeness (offline.md §1.3
    /// and §2.4's rule): complete when a complete default query covers `path` (at or above
    /// it), when `params` names a complete filtered query at `path` (the value then holds only
    /// its tracked keys), when `path`'s key is a tracked key of a complete filtered query at its
    /// parent, or when a pending write sets `path` or a location above it. Otherwise the value
    /// holds only the known children: tracked keys of any filtered query at `path`, children
    /// whose own default query is complete, and children a pending write sets. A filtered
    /// query's window is for the caller to apply. `now` estimates server values.
    /// Records that session `id` (a `watch`) has a live stream of `path` from the server, its
    /// data stored here as it arrives (`streaming` true), or no longer has one.
    public func markStream(session id: String, path: Path, streaming: Bool) throws {
        try writing { c in
            let s = try c.statement(streaming ? "INSERT OR REPLACE INTO cache_streams(session_id, path) VALUES(?1, ?2)"
                                              : "DELETE FROM cache_streams WHERE session_id = ?1")
            s.bind(1, text: id)
            if streaming { s.bind(2, text: path.description) }
            try s.run()
        }
    }

    /// The read fast path (offline.md §2.4): the complete cached answer at `path` when a live
    /// session streams `path` or an ancestor from the server right now, so the cache is as
    /// fresh as a request would be; nil otherwise (and whenever writes are queued: a read sends
    /// them first).
    public func streamedRead(_ path: Path, params: String, now: Int64) throws -> CacheRead? {
        let streams: [String] = try readingCache([]) { c in
            guard try c.integer("SELECT count(*) FROM (SELECT 1 FROM cache_writes LIMIT 1)") == 0 else { return [] }
            let s = try c.statement("SELECT session_id, path FROM cache_streams")
            defer { s.reset() }
            var ids: [String] = []
            while try s.step() {
                if let p = try? Path(s.string(1)), p.contains(path) { ids.append(s.string(0)) }
            }
            return ids
        }
        guard streams.contains(where: sessionIsLive) else { return nil }
        let r = try cachedRead(path, params: params, now: now)
        return r.complete && !r.estimated ? r : nil
    }

    public func cachedRead(_ path: Path, params: String = EmbeddedDatabase.defaultParams, now: Int64) throws -> CacheRead {
        try readingCache(CacheRead(value: .null, complete: false, estimated: false)) { c in
            var ancestors: [Path] = []
            var p: Path? = path
            while let q = p { ancestors.append(q); p = q.parent }
            let rows = try tracked(c, where: ancestors)
            var used = rows.filter { $0.isDefault && $0.complete }.map { (id: $0.id, lastUseMillis: $0.lastUseMillis) }
            var complete = !used.isEmpty
            var known: Set<String>? = nil   // nil: all children
            if !complete && params != EmbeddedDatabase.defaultParams,
               let own = rows.first(where: { $0.path.same(as: path) && $0.params == params && $0.complete }) {
                complete = true
                known = Set(own.keys)
                used.append((own.id, own.lastUseMillis))
            }
            if !complete, let parent = path.parent, let key = path.last,
               let filtered = rows.first(where: { $0.path.same(as: parent) && !$0.isDefault && $0.complete && $0.keys.contains(key) }) {
                complete = true
                used.append((filtered.id, filtered.lastUseMillis))
            }
            var base = try read(c, path)
            if !complete {
                var keys = Set<String>()
                for r in rows where r.path.same(as: path) && !r.isDefault { keys.formUnion(r.keys) }
                for k in try completeChildren(c, path) { keys.insert(k) }
                known = keys
            }
            if let known {
                base = base.isObject ? Node.object(normalizing: base.children.filter { known.contains($0.key) }) : (known.isEmpty ? .null : base)
                if !complete && !base.isObject { base = .null }
            }
            let writes = try queued(c, touching: path, ancestors: ancestors).filter { w in
                w.sets.contains { $0.path.contains(path) || path.contains($0.path) }
            }.map { WriteTree.Write(id: $0.id, sets: $0.sets) }
            let layered = WriteTree.layer(base, at: path, writes: writes, now: now)
            return CacheRead(value: layered.value, complete: complete || layered.covered, estimated: layered.estimated, usedQueries: used)
        }
    }

    /// Keys of the children of `path` that have a complete default query of their own.
    private func completeChildren(_ c: Connection, _ path: Path) throws -> [String] {
        let prefix = path.isRoot ? "/" : path.description + "/"
        let s = try c.statement("""
            SELECT path FROM cache_tracked_queries WHERE params = '{}' AND complete = 1 AND path > ?1 AND path < ?2
            """)
        defer { s.reset() }
        s.bind(1, text: prefix)
        s.bind(2, text: String(prefix.dropLast()) + "0")   // "0" follows "/"
        var out: [String] = []
        while try s.step() {
            let rest = s.string(0).dropFirst(prefix.count)
            if !rest.isEmpty && !rest.contains("/") { out.append(String(rest)) }
        }
        return out
    }

    /// The kept locations and queries (`cache_keep`), in path order.
    public func keptQueries() throws -> [(path: Path, params: String)] {
        try readingCache([]) { c in
            let s = try c.statement("SELECT path, params FROM cache_keep ORDER BY path, params")
            defer { s.reset() }
            var out: [(path: Path, params: String)] = []
            while try s.step() { out.append((try Path(s.string(0)), s.string(1))) }
            return out
        }
    }

    // MARK: meta

    /// The last measured server time offset (server clock − local clock, ms), if any.
    public func serverTimeOffset() throws -> Int64? {
        try readingCache(nil) { c in
            let s = try c.statement("SELECT server_time_offset_ms FROM cache_meta WHERE id = 1")
            defer { s.reset() }
            guard try s.step(), sqlite3_column_type(s.handle, 0) != SQLITE_NULL else { return nil }
            return s.int(0)
        }
    }

    public func setServerTimeOffset(_ ms: Int64) throws {
        try writing { c in
            let u = try c.statement("UPDATE cache_meta SET server_time_offset_ms = ?1 WHERE id = 1")
            u.bind(1, int: ms)
            try u.run()
        }
    }

    /// The url and namespace the cache belongs to, or nil while the file holds no cache.
    public func cacheOwner() throws -> (url: String, namespace: String)? {
        try reading(nil) { c in
            guard try EmbeddedDatabase.isCacheFile(c) else { return nil }
            let s = try c.statement("SELECT url, ns FROM cache_meta WHERE id = 1")
            defer { s.reset() }
            return try s.step() ? (s.string(0), s.string(1)) : nil
        }
    }
}
