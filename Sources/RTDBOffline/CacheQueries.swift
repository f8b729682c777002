import RTDBCore
import RTDBEngine

/// A tracked query: a location (`params` = `{}`, the default query) or a
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

    public var isDefault: Bool { params == TrackedParams.defaultParams }
}

/// What the cache knows at a path: the server cache with the pending writes layered on top.
public struct CacheRead: Sendable {
    /// The layered value, priorities included; when not `complete`, only the known children
    /// (or null).
    public var value: Node
    /// True when the value is whole.
    public var complete: Bool
    /// A pending write with server values was applied: the value holds estimates.
    public var estimated: Bool
    /// One of those estimates is an increment added to a number the cache does not hold.
    public var unknownBase = false
    /// The tracked queries the answer came from, with their `last_use_ms` (for `touchQueries`).
    public var usedQueries: [(id: Int64, lastUseMillis: Int64)] = []
}

/// Which tracked queries beyond a complete default query may make a cached read complete.
public struct CacheReadRules: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A complete filtered query of the same order whose answer holds the asked one
    /// (`Query.isAnswered(by:known:)`): a one-shot read can be answered whole from it.
    public static let containingWindows = CacheReadRules(rawValue: 1)
    /// The asked filtered query's own tracked keys, even under a complete default query: a live
    /// stream of that window keeps them fresh, while the default query's copy may be old.
    public static let ownWindowFirst = CacheReadRules(rawValue: 2)
}

/// Tracked queries and the layered read of the cache.
extension CacheStore {
    /// Stores a server answer at `path` and records it as a complete tracked query, in one
    /// transaction. A default query (`params == "{}"`) replaces the whole value and keeps
    /// `etag`; a filtered query stores each child of its answer and records their keys.
    public func storeServerAnswer(_ path: Path, params: String, value: Node, etag: String? = nil) throws {
        try db.writeTransaction { t in
            let now = t.now()
            if params == TrackedParams.defaultParams {
                try t.write(path, value)
                try t.log([path], .set(path, value))
                try track(t, path, params, complete: true, keys: nil, etag: etag, now: now)
            } else {
                let children = value.children
                for e in children { try t.write(path.appending(e.key), e.node) }
                if !children.isEmpty {
                    let entries = children.map { (path: Path(validatedKeys: [$0.key]), value: $0.node) }
                    try t.log(children.count > FileTransaction.logMaxPaths ? [path] : children.map { path.appending($0.key) },
                              .update(path, entries))
                }
                try track(t, path, params, complete: true, keys: children.map { $0.key }, etag: nil, now: now)
            }
            try countCacheUpdate(t, bytes: CacheStore.approximateBytes(value), protect: [CachedQuery(path: path, params: params)])
        }
    }

    /// Records (or updates) a tracked query. `keys` replaces the query's tracked keys when given.
    public func trackQuery(_ path: Path, params: String, complete: Bool, keys: [String]? = nil, etag: String? = nil) throws {
        try db.writeTransaction { t in try track(t, path, params, complete: complete, keys: keys, etag: etag, now: t.now()) }
    }

    func track(_ t: FileTransaction, _ path: Path, _ params: String, complete: Bool, keys: [String]?, etag: String?, now: Int64) throws {
        let c = t.connection
        let up = try c.statement("""
            INSERT INTO cache_tracked_queries(path, params, last_use_ms, complete, etag) VALUES(?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(path, params) DO UPDATE SET last_use_ms = excluded.last_use_ms, complete = excluded.complete,
                etag = excluded.etag
            """)
        up.bind(1, text: path.description)
        up.bind(2, text: params)
        up.bind(3, int: now)
        up.bind(4, int: complete ? 1 : 0)
        if let etag { up.bind(5, text: etag) } else { up.bindNull(5) }
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
    func dropCompleteness(_ t: FileTransaction, _ path: Path) throws {
        let u = try t.connection.statement("UPDATE cache_tracked_queries SET complete = 0, etag = NULL WHERE path = ?1")
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
        try db.writeTransaction { t in
            let u = try t.connection.statement("UPDATE cache_tracked_queries SET last_use_ms = ?3 WHERE path = ?1 AND params = ?2")
            u.bind(1, text: path.description)
            u.bind(2, text: params)
            u.bind(3, int: t.now())
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
        let now = db.now()
        let ids = used.filter { now - $0.lastUseMillis >= CacheStore.touchGranularityMillis }.map { $0.id }
        if ids.isEmpty { return }
        try db.writeTransaction(durable: false) { t in
            let u = try t.connection.statement("UPDATE cache_tracked_queries SET last_use_ms = ?2 WHERE id = ?1")
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
        try reading([]) { t in try tracked(t, where: nil) }
    }

    /// The tracked queries whose path is one of `paths` (nil: all).
    func tracked(_ t: FileTransaction, where paths: [Path]?) throws -> [TrackedQuery] {
        var out: [TrackedQuery] = []
        let keys = try t.connection.statement("SELECT key FROM cache_tracked_keys WHERE query_id = ?1")
        func add(_ s: Statement) throws {
            var q = TrackedQuery(id: s.int(0), path: try Path(s.string(1)), params: s.string(2), lastUseMillis: s.int(3),
                                 complete: s.int(4) != 0, activeSession: s.optionalString(5), etag: s.optionalString(6), keys: [])
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
            let s = try t.connection.statement("SELECT \(columns) FROM cache_tracked_queries WHERE path = ?1 ORDER BY id")
            for p in paths {
                s.reset()
                s.bind(1, text: p.description)
                while try s.step() { try add(s) }
            }
            s.reset()
        } else {
            let s = try t.connection.statement("SELECT \(columns) FROM cache_tracked_queries ORDER BY id")
            defer { s.reset() }
            while try s.step() { try add(s) }
        }
        return out
    }

    /// The ETag stored with the complete default query at `path`, if any.
    public func storedETag(_ path: Path) throws -> String? {
        try reading(nil) { t in
            let s = try t.connection.statement("SELECT etag FROM cache_tracked_queries WHERE path = ?1 AND params = '{}' AND complete = 1")
            defer { s.reset() }
            s.bind(1, text: path.description)
            guard try s.step() else { return nil }
            return s.optionalString(0)
        }
    }

    // MARK: a live watch's stream

    /// Records that session `id` (a `watch`) has a live stream of `path` from the server, its
    /// data stored here as it arrives (`streaming` true), or no longer has one.
    public func markStream(session id: String, path: Path, streaming: Bool) throws {
        try db.writeTransaction { t in
            let s = try t.connection.statement(streaming ? "INSERT OR REPLACE INTO cache_streams(session_id, path) VALUES(?1, ?2)"
                                                         : "DELETE FROM cache_streams WHERE session_id = ?1")
            s.bind(1, text: id)
            if streaming { s.bind(2, text: path.description) }
            try s.run()
        }
    }

    /// The read fast path: the complete cached answer at `path` when a live
    /// session streams `path` or an ancestor from the server right now, so the cache is as
    /// fresh as a request would be; nil otherwise (and whenever writes are queued: a read sends
    /// them first).
    public func streamedRead(_ path: Path, params: String, now: Int64) throws -> CacheRead? {
        let streams: [String] = try reading([]) { t in
            guard try t.connection.integer("SELECT count(*) FROM (SELECT 1 FROM cache_writes LIMIT 1)") == 0 else { return [] }
            let s = try t.connection.statement("SELECT session_id, path FROM cache_streams")
            defer { s.reset() }
            var ids: [String] = []
            while try s.step() {
                if let p = try? Path(s.string(1)), p.contains(path) { ids.append(s.string(0)) }
            }
            return ids
        }
        guard streams.contains(where: db.isLiveSession) else { return nil }
        let r = try cachedRead(path, params: params, now: now)
        return r.complete && !r.estimated ? r : nil
    }

    // MARK: reading

    /// The server cache plus the pending writes at `path`, with completeness:
    /// complete when a complete default query covers `path` (at or above
    /// it), when `params` names a complete filtered query at `path` (the value then holds only
    /// its tracked keys), when `path`'s key is a tracked key of a complete filtered query at its
    /// parent, or when a pending write sets `path` or a location above it. Otherwise the value
    /// holds only the known children: tracked keys of any filtered query at `path`, children
    /// whose own default query is complete, and children a pending write sets. A filtered
    /// query's window is for the caller to apply. `rules` allow more (`CacheReadRules`).
    /// `now` estimates server values.
    public func cachedRead(_ path: Path, params: String = TrackedParams.defaultParams, now: Int64,
                           rules: CacheReadRules = []) throws -> CacheRead {
        try reading(CacheRead(value: .null, complete: false, estimated: false)) { t in
            var ancestors: [Path] = []
            var p: Path? = path
            while let q = p { ancestors.append(q); p = q.parent }
            let rows = try tracked(t, where: ancestors)
            var used = rows.filter { $0.isDefault && $0.complete }.map { (id: $0.id, lastUseMillis: $0.lastUseMillis) }
            var complete = !used.isEmpty
            var known: Set<String>? = nil   // nil: all children
            if (!complete || rules.contains(.ownWindowFirst)) && params != TrackedParams.defaultParams,
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
            // With priorities: a priority order needs them, `get --export` shows them.
            var base = try t.readExport(path)
            if !complete && rules.contains(.containingWindows), let asked = try? TrackedParams.query(params),
               let holder = rows.first(where: { r in
                   guard r.path.same(as: path), !r.isDefault, r.complete, r.params != params,
                         let cached = try? TrackedParams.query(r.params) else { return false }
                   let keys = Set(r.keys)
                   return asked.isAnswered(by: cached, known: base.children.filter { keys.contains($0.key) })
               }) {
                complete = true
                known = Set(holder.keys)
                used.append((holder.id, holder.lastUseMillis))
            }
            if !complete {
                var keys = Set<String>()
                for r in rows where r.path.same(as: path) && !r.isDefault { keys.formUnion(r.keys) }
                for k in try completeChildren(t, path) { keys.insert(k) }
                known = keys
            }
            if let known {
                base = base.isObject ? Node.object(normalizing: base.children.filter { known.contains($0.key) }) : (known.isEmpty ? .null : base)
                if !complete && !base.isObject { base = .null }
            }
            let writes = try queued(t, touching: path, ancestors: ancestors).filter { w in
                w.sets.contains { $0.path.contains(path) || path.contains($0.path) }
            }.map { WriteTree.Write(id: $0.id, sets: $0.sets) }
            // What the server cache holds for sure: all of it when complete, else the known children.
            let whole = complete && known == nil
            let layered = WriteTree.layer(base, at: path, writes: writes, now: now) { rel in
                whole || rel.keys.first.map { known?.contains($0) ?? false } ?? false
            }
            return CacheRead(value: layered.value, complete: complete || layered.covered, estimated: layered.estimated,
                             unknownBase: layered.unknownBase, usedQueries: used)
        }
    }

    /// Keys of the children of `path` that have a complete default query of their own.
    private func completeChildren(_ t: FileTransaction, _ path: Path) throws -> [String] {
        let prefix = path.isRoot ? "/" : path.description + "/"
        let s = try t.connection.statement("""
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

    // MARK: meta

    /// The last measured server time offset (server clock − local clock, ms), if any.
    public func serverTimeOffset() throws -> Int64? {
        try reading(nil) { t in
            let s = try t.connection.statement("SELECT server_time_offset_ms FROM cache_meta WHERE id = 1")
            defer { s.reset() }
            guard try s.step() else { return nil }
            return s.isNull(0) ? nil : s.int(0)
        }
    }

    public func setServerTimeOffset(_ ms: Int64) throws {
        try db.writeTransaction { t in
            let u = try t.connection.statement("UPDATE cache_meta SET server_time_offset_ms = ?1 WHERE id = 1")
            u.bind(1, int: ms)
            try u.run()
        }
    }
}
