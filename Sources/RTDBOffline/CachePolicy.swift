import RTDBCore
import RTDBEngine

/// Kept locations, active queries and the least-recently-used purge of an offline cache.
///
/// Invariants: a purge never deletes a queued write, a kept query (`cache_keep`), a query
/// active in a live session (its session's lock is held), or data under the path of any
/// tracked query that stays; data under no tracked query is never touched. The size is an
/// estimate (as in the SDKs), so `bytes` ≤ `limit` after a purge holds for the estimate.
extension CacheStore {
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
        try changeKept("INSERT OR IGNORE INTO cache_keep(path, params) VALUES(?1, ?2)", path, params)
    }

    /// Forgets a kept query (`keep rm`); false when it was not kept.
    @discardableResult
    public func unkeep(_ path: Path, params: String) throws -> Bool {
        try changeKept("DELETE FROM cache_keep WHERE path = ?1 AND params = ?2", path, params)
    }

    /// Runs `sql` on the kept query `(path, params)` (`?1`, `?2`); whether it changed a row.
    private func changeKept(_ sql: String, _ path: Path, _ params: String) throws -> Bool {
        try db.writeTransaction { t in
            let s = try t.connection.statement(sql)
            s.bind(1, text: path.description)
            s.bind(2, text: params)
            try s.run()
            return t.connection.changes > 0
        }
    }

    /// The kept locations and queries (`cache_keep`), in path order.
    public func keptQueries() throws -> [CachedQuery] {
        try reading([]) { t in
            let s = try t.connection.statement("SELECT path, params FROM cache_keep ORDER BY path, params")
            defer { s.reset() }
            var out: [CachedQuery] = []
            while try s.step() { out.append(CachedQuery(path: try Path(s.string(0)), params: s.string(1))) }
            return out
        }
    }

    // MARK: active queries

    /// Marks the tracked query (`path`, `params`) active for `session` (a live watch), creating
    /// it incomplete when it is not tracked yet, and sets its last use to now.
    public func activateQuery(_ path: Path, params: String, session: String) throws {
        try db.writeTransaction { t in
            let s = try t.connection.statement("""
                INSERT INTO cache_tracked_queries(path, params, last_use_ms, complete, active_session) VALUES(?1, ?2, ?3, 0, ?4)
                ON CONFLICT(path, params) DO UPDATE SET last_use_ms = excluded.last_use_ms, active_session = excluded.active_session
                """)
            s.bind(1, text: path.description)
            s.bind(2, text: params)
            s.bind(3, int: t.now())
            s.bind(4, text: session)
            try s.run()
        }
    }

    /// Ends `session`'s activations: its queries become inactive, last used now.
    public func deactivateQueries(session: String) throws {
        try db.writeTransaction { t in
            let s = try t.connection.statement("UPDATE cache_tracked_queries SET active_session = NULL, last_use_ms = ?2 WHERE active_session = ?1")
            s.bind(1, text: session)
            s.bind(2, int: t.now())
            try s.run()
        }
    }

    // MARK: info

    /// The size estimate and the counts `cache info` prints (zeros for a file without a cache).
    public func counts() throws -> CacheCounts {
        try reading(CacheCounts()) { t in
            let c = t.connection
            func rows(_ sql: String) throws -> Int { Int(try c.integer(sql) ?? 0) }
            var counts = CacheCounts()
            let s = try c.statement("SELECT server_time_offset_ms FROM cache_meta WHERE id = 1")
            counts.serverTimeOffset = try s.step() && !s.isNull(0) ? s.int(0) : nil
            s.reset()
            counts.bytes = try t.storedBytes()
            counts.queries = try rows("SELECT count(*) FROM cache_tracked_queries")
            counts.complete = try rows("SELECT count(*) FROM cache_tracked_queries WHERE complete = 1")
            counts.kept = try rows("SELECT count(*) FROM cache_keep")
            counts.pending = try rows("SELECT count(*) FROM cache_writes")
            counts.rejected = try rows("SELECT count(*) FROM cache_rejections")
            return counts
        }
    }

    // MARK: purge

    /// Runs purge rounds while the estimate is above `limit` or more than 1000 queries are
    /// prunable, returning the pruned queries, oldest first.
    @discardableResult
    public func prune(limit: Int) throws -> [CachedQuery] {
        try db.writeTransaction { t in
            guard try CacheFile.isCacheFile(t) else { return [] }
            return try prune(t, limit: limit)
        }
    }

    /// The purge rounds; `protect` names queries that are not prunable this time (the answer
    /// being stored). When the estimate stays above `limit`, the next store checks again.
    func prune(_ t: FileTransaction, limit: Int, protect: [CachedQuery] = []) throws -> [CachedQuery] {
        var pruned: [CachedQuery] = []
        defer {
            let over = ((try? t.storedBytes()) ?? 0) > limit
            try? t.connection.exec("UPDATE cache_meta SET updates_since_check = \(over ? CacheStore.updatesPerCheck + 1 : 0) WHERE id = 1")
        }
        while true {
            let all = try tracked(t, where: nil)
            let kept = try keptRows(t)
            let prunable = all.filter { q in
                !kept.contains { $0.path.same(as: q.path) && $0.params == q.params }
                    && !protect.contains { $0.path.same(as: q.path) && $0.params == q.params }
                    && !(q.activeSession.map { db.isLiveSession($0) } ?? false)
            }.sorted { ($0.lastUseMillis, $0.id) < ($1.lastUseMillis, $1.id) }
            guard !prunable.isEmpty else { break }
            guard try t.storedBytes() > limit || prunable.count > CacheStore.maxPrunableKept else { break }
            let keepCount = min(prunable.count * 8 / 10, CacheStore.maxPrunableKept)
            let doomed = Array(prunable.prefix(prunable.count - keepCount))
            let doomedIDs = Set(doomed.map { $0.id })
            // Paths whose data stays: every other tracked query, and every kept one.
            let staying = all.filter { !doomedIDs.contains($0.id) }.map { $0.path } + kept.map { $0.path }
            for q in doomed {
                if staying.contains(where: { $0.contains(q.path) }) { continue }   // an ancestor (or the path) stays
                let inner = staying.filter { q.path.contains($0) }
                let saved = try inner.map { ($0, try t.read($0)) }
                try t.write(q.path, .null)
                for (p, v) in saved where !v.isNull { try t.write(p, v) }
            }
            let del = try t.connection.statement("DELETE FROM cache_tracked_queries WHERE id = ?1")
            let delKeys = try t.connection.statement("DELETE FROM cache_tracked_keys WHERE query_id = ?1")
            for q in doomed {
                del.reset(); del.bind(1, int: q.id); try del.run()
                delKeys.reset(); delKeys.bind(1, int: q.id); try delKeys.run()
                pruned.append(CachedQuery(path: q.path, params: q.params))
            }
        }
        return pruned
    }

    func keptRows(_ t: FileTransaction) throws -> [CachedQuery] {
        let s = try t.connection.statement("SELECT path, params FROM cache_keep")
        defer { s.reset() }
        var out: [CachedQuery] = []
        while try s.step() { out.append(CachedQuery(path: try Path(s.string(0)), params: s.string(1))) }
        return out
    }

    /// The automatic check, inside a transaction that stored `bytes` in the
    /// server cache: counts the update, and purges at once when more than 1000 updates were
    /// counted since the last check or this one stored 1 MiB or more. The queries just stored
    /// (`protect`) are spared this time, so an answer is never purged by its own store; while
    /// the cache stays above the limit, the next store checks again. Needs `limit`.
    func countCacheUpdate(_ t: FileTransaction, bytes: Int, protect: [CachedQuery]) throws {
        guard let limit else { return }
        try t.connection.exec("UPDATE cache_meta SET updates_since_check = updates_since_check + 1 WHERE id = 1")
        let count = try t.connection.integer("SELECT updates_since_check FROM cache_meta WHERE id = 1") ?? 0
        if count > CacheStore.updatesPerCheck || bytes >= CacheStore.bytesPerCheck {
            _ = try prune(t, limit: limit, protect: protect)
        }
    }

    // MARK: clear

    /// Empties the server cache and forgets every tracked query (`cache clear`); returns how
    /// many queries were tracked. Queued writes and kept queries stay (`cache clear --all`
    /// drops the writes with `clearWrites()`, so that watchers see them reverted).
    public func clearCache() throws -> Int {
        try db.writeTransaction { t in
            guard try CacheFile.isCacheFile(t) else { return 0 }
            let n = Int(try t.connection.integer("SELECT count(*) FROM cache_tracked_queries") ?? 0)
            try t.write(.root, .null)
            try t.connection.exec("DELETE FROM cache_tracked_keys; DELETE FROM cache_tracked_queries; UPDATE cache_meta SET updates_since_check = 0")
            return n
        }
    }

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

    // MARK: a live watch's store

    /// Stores children of `path` as a live stream reported them (`value` is each child's
    /// server value, null when removed), for a watch whose default query at `path` is already
    /// complete: the data changes, the tracked queries do not.
    public func storeServerChildren(_ path: Path, _ children: [(key: String, value: Node)]) throws {
        guard !children.isEmpty else { return }
        try db.writeTransaction { t in
            var bytes = 0
            for e in children {
                try t.write(path.appending(e.key), e.value)
                bytes += CacheStore.approximateBytes(e.value)
            }
            let entries = children.map { (path: Path(validatedKeys: [$0.key]), value: $0.value) }
            try t.log(children.count > FileTransaction.logMaxPaths ? [path] : children.map { path.appending($0.key) },
                      .update(path, entries))
            try countCacheUpdate(t, bytes: bytes, protect: [CachedQuery(path: path, params: TrackedParams.defaultParams)])
        }
    }
}
