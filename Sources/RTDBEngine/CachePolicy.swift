import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `rtdb cache info` reports about an offline cache (offline.md §2.7).
public struct CacheInfo: Sendable {
    /// The estimate of the server cache's size: Σ(length(path) + length(value)) of its rows.
    public var bytes: Int
    public var queries: Int
    public var complete: Int
    public var kept: Int
    public var pending: Int
    public var rejected: Int
    public var serverTimeOffset: Int64?
}

/// A tracked query removed by a purge round.
public struct PrunedQuery: Sendable {
    public var path: Path
    public var params: String
}

/// Kept locations, active queries and the least-recently-used purge of an offline cache
/// (offline.md §1.6, §2.7).
///
/// Invariants: a purge never deletes a queued write, a kept query (`cache_keep`), a query
/// active in a live session (its session's lock is held), or data under the path of any
/// tracked query that stays; data under no tracked query is never touched. The size is an
/// estimate (as in the SDKs), so `bytes` ≤ `limit` after a purge holds for the estimate.
extension EmbeddedDatabase {
    /// Above this many server-cache updates since the last check, the next update checks.
    public static let updatesPerCheck: Int64 = 1000
    /// A transaction that stored at least this many bytes checks at once.
    public static let bytesPerCheck = 1 << 20
    /// A purge round keeps at most this many of the prunable queries.
    public static let maxPrunableKept = 1000

    // MARK: kept queries

    /// Records a kept query (`keep add`); false when it was kept already.
    @discardableResult
    public func keep(_ path: Path, params: String) throws -> Bool {
        try writing { c in
            let s = try c.statement("INSERT OR IGNORE INTO cache_keep(path, params) VALUES(?1, ?2)")
            s.bind(1, text: path.description)
            s.bind(2, text: params)
            try s.run()
            return sqlite3_changes(c.handle) > 0
        }
    }

    /// Forgets a kept query (`keep rm`); false when it was not kept.
    @discardableResult
    public func unkeep(_ path: Path, params: String) throws -> Bool {
        try writing { c in
            let s = try c.statement("DELETE FROM cache_keep WHERE path = ?1 AND params = ?2")
            s.bind(1, text: path.description)
            s.bind(2, text: params)
            try s.run()
            return sqlite3_changes(c.handle) > 0
        }
    }

    // MARK: active queries

    /// Marks the tracked query (`path`, `params`) active for `session` (a live watch), creating
    /// it incomplete when it is not tracked yet, and sets its last use to now.
    public func activateQuery(_ path: Path, params: String, session: String) throws {
        try writing { c in
            let s = try c.statement("""
                INSERT INTO cache_tracked_queries(path, params, last_use_ms, complete, active_session) VALUES(?1, ?2, ?3, 0, ?4)
                ON CONFLICT(path, params) DO UPDATE SET last_use_ms = excluded.last_use_ms, active_session = excluded.active_session
                """)
            s.bind(1, text: path.description)
            s.bind(2, text: params)
            s.bind(3, int: clock())
            s.bind(4, text: session)
            try s.run()
        }
    }

    /// Ends `session`'s activations: its queries become inactive, last used now.
    public func deactivateQueries(session: String) throws {
        try writing { c in
            let s = try c.statement("UPDATE cache_tracked_queries SET active_session = NULL, last_use_ms = ?2 WHERE active_session = ?1")
            s.bind(1, text: session)
            s.bind(2, int: clock())
            try s.run()
        }
    }

    /// True while the session `id` is alive: its lock file exists and another descriptor
    /// cannot lock it (the holder, possibly this process, still does).
    public func isLiveSession(_ id: String) -> Bool { sessionIsLive(id) }

    func sessionIsLive(_ id: String) -> Bool {
        guard !id.contains("/") else { return false }
        let fd = open(sessionsFolder + "/" + id + ".lock", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return true
    }

    // MARK: info

    /// The size estimate and the counts `cache info` prints (zeros for a file without a cache).
    public func cacheInfo() throws -> CacheInfo {
        try readingCache(CacheInfo(bytes: 0, queries: 0, complete: 0, kept: 0, pending: 0, rejected: 0, serverTimeOffset: nil)) { c in
            let offset: Int64?
            let s = try c.statement("SELECT server_time_offset_ms FROM cache_meta WHERE id = 1")
            if try s.step(), sqlite3_column_type(s.handle, 0) != SQLITE_NULL { offset = s.int(0) } else { offset = nil }
            s.reset()
            return CacheInfo(bytes: try estimate(c),
                             queries: Int(try c.integer("SELECT count(*) FROM cache_tracked_queries") ?? 0),
                             complete: Int(try c.integer("SELECT count(*) FROM cache_tracked_queries WHERE complete = 1") ?? 0),
                             kept: Int(try c.integer("SELECT count(*) FROM cache_keep") ?? 0),
                             pending: Int(try c.integer("SELECT count(*) FROM cache_writes") ?? 0),
                             rejected: Int(try c.integer("SELECT count(*) FROM cache_rejections") ?? 0),
                             serverTimeOffset: offset)
        }
    }

    /// Σ(length(path) + length(value)) over the server cache's rows.
    func estimate(_ c: Connection) throws -> Int {
        Int(try c.integer("SELECT coalesce(sum(length(path) + coalesce(length(v), 0)), 0) FROM data") ?? 0)
    }

    // MARK: purge

    /// Runs purge rounds while the estimate is above `limit` or more than 1000 queries are
    /// prunable (offline.md §1.6), returning the pruned queries, oldest first.
    @discardableResult
    public func pruneCache(limit: Int) throws -> [PrunedQuery] {
        try writing { c in
            guard try EmbeddedDatabase.isCacheFile(c) else { return [] }
            return try prune(c, limit: limit)
        }
    }

    /// The purge rounds; `protect` names queries that are not prunable this time (the answer
    /// being stored). When the estimate stays above `limit`, the next store checks again.
    func prune(_ c: Connection, limit: Int, protect: [(path: Path, params: String)] = []) throws -> [PrunedQuery] {
        var pruned: [PrunedQuery] = []
        defer {
            let over = ((try? estimate(c)) ?? 0) > limit
            try? c.exec("UPDATE cache_meta SET updates_since_check = \(over ? EmbeddedDatabase.updatesPerCheck + 1 : 0) WHERE id = 1")
        }
        while true {
            let all = try tracked(c, where: nil)
            let kept = try keptRows(c)
            let prunable = all.filter { q in
                !kept.contains { $0.path.same(as: q.path) && $0.params == q.params }
                    && !protect.contains { $0.path.same(as: q.path) && $0.params == q.params }
                    && !(q.activeSession.map { sessionIsLive($0) } ?? false)
            }.sorted { ($0.lastUseMillis, $0.id) < ($1.lastUseMillis, $1.id) }
            guard !prunable.isEmpty else { break }
            guard try estimate(c) > limit || prunable.count > EmbeddedDatabase.maxPrunableKept else { break }
            let keepCount = min(prunable.count * 8 / 10, EmbeddedDatabase.maxPrunableKept)
            let doomed = Array(prunable.prefix(prunable.count - keepCount))
            let doomedIDs = Set(doomed.map { $0.id })
            // Paths whose data stays: every other tracked query, and every kept one.
            let staying = all.filter { !doomedIDs.contains($0.id) }.map { $0.path } + kept.map { $0.path }
            for q in doomed {
                if staying.contains(where: { $0.contains(q.path) }) { continue }   // an ancestor (or the path) stays
                let inner = staying.filter { q.path.contains($0) }
                let saved = try inner.map { ($0, try read(c, $0)) }
                try write(c, q.path, .null)
                for (p, v) in saved where !v.isNull { try write(c, p, v) }
            }
            let del = try c.statement("DELETE FROM cache_tracked_queries WHERE id = ?1")
            let delKeys = try c.statement("DELETE FROM cache_tracked_keys WHERE query_id = ?1")
            for q in doomed {
                del.reset(); del.bind(1, int: q.id); try del.run()
                delKeys.reset(); delKeys.bind(1, int: q.id); try delKeys.run()
                pruned.append(PrunedQuery(path: q.path, params: q.params))
            }
        }
        return pruned
    }

    func keptRows(_ c: Connection) throws -> [(path: Path, params: String)] {
        let s = try c.statement("SELECT path, params FROM cache_keep")
        defer { s.reset() }
        var out: [(path: Path, params: String)] = []
        while try s.step() { out.append((try Path(s.string(0)), s.string(1))) }
        return out
    }

    /// The automatic check (offline.md §2.7), inside a transaction that stored `bytes` in the
    /// server cache: counts the update, and purges at once when more than 1000 updates were
    /// counted since the last check or this one stored 1 MiB or more. The queries just stored
    /// (`protect`) are spared this time, so an answer is never purged by its own store; while
    /// the cache stays above the limit, the next store checks again. Needs `cacheLimit`.
    func countCacheUpdate(_ c: Connection, bytes: Int, protect: [(path: Path, params: String)]) throws {
        guard let limit = cacheLimit else { return }
        try c.exec("UPDATE cache_meta SET updates_since_check = updates_since_check + 1 WHERE id = 1")
        let count = try c.integer("SELECT updates_since_check FROM cache_meta WHERE id = 1") ?? 0
        if count > EmbeddedDatabase.updatesPerCheck || bytes >= EmbeddedDatabase.bytesPerCheck {
            _ = try prune(c, limit: limit, protect: protect)
        }
    }

    // MARK: clear

    /// Empties the server cache and forgets every tracked query (`cache clear`); returns how
    /// many queries were tracked. Queued writes and kept queries stay (`cache clear --all`
    /// drops the writes with `clearWrites()`, so that watchers see them reverted).
    public func clearCache() throws -> Int {
        try writing { c in
            guard try EmbeddedDatabase.isCacheFile(c) else { return 0 }
            let n = Int(try c.integer("SELECT count(*) FROM cache_tracked_queries") ?? 0)
            try write(c, .root, .null)
            try c.exec("DELETE FROM cache_tracked_keys; DELETE FROM cache_tracked_queries; UPDATE cache_meta SET updates_since_check = 0")
            return n
        }
    }

    /// Gives back the space freed by a purge to the file system (`cache prune --vacuum`).
    public func vacuumCache() throws {
        try writing { _ in }   // the file exists and is this cache's
        let c = try writeConnection()
        try c.exec("VACUUM")
    }
}

extension EmbeddedDatabase {
    /// About how many bytes a value takes in the server cache (keys and leaves), for the
    /// automatic check; cheap and approximate, like the estimate itself.
    static func approximateBytes(_ n: Node) -> Int {
        switch n {
        case .null: return 0
        case .bool: return 5
        case .int, .double: return 8
        case .string(let s): return s.utf8.count + 2
        case .object(let entries): return entries.reduce(0) { $0 + $1.key.utf8.count + 2 + approximateBytes($1.node) }
        case .prioritized(let v, let p): return approximateBytes(v) + approximateBytes(p)
        }
    }
}

// MARK: a live watch's store

extension EmbeddedDatabase {
    /// Stores children of `path` as a live stream reported them (`value` is each child's
    /// server value, null when removed), for a watch whose default query at `path` is already
    /// complete: the data changes, the tracked queries do not.
    public func storeServerChildren(_ path: Path, _ children: [(key: String, value: Node)]) throws {
        guard !children.isEmpty else { return }
        try writing { c in
            var bytes = 0
            for e in children {
                try write(c, path.appending(e.key), e.value)
                bytes += EmbeddedDatabase.approximateBytes(e.value)
            }
            let entries = children.map { (path: Path(validatedKeys: [$0.key]), value: $0.value) }
            try log(c, children.count > EmbeddedDatabase.logMaxPaths ? [path] : children.map { path.appending($0.key) },
                    .update(path, entries))
            try countCacheUpdate(c, bytes: bytes, protect: [(path, EmbeddedDatabase.defaultParams)])
        }
    }

    /// A counter that changes when another connection commits to the cache file (nil while
    /// there is no file): a live watch looks at it to notice other processes' queued writes.
    public func commitCounter() throws -> Int64? { try dataVersion() }
}
