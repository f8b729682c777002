import RTDBCore

/// A watch through the cache: `observeViews` of an `OfflineDatabase`.
///
/// Invariant: every view is the **cache's** (the server cache with the pending writes layered
/// on top, `cachedRead`), so what the watch shows never depends on where a change came from:
/// the server's stream, this machine's queued writes (of any process), their reverts after a
/// rejection, or a catch-up after a reconnection. Views say whether they are whole.
///
/// Auto mode first shows what the cache knows, then streams the location, storing each
/// `put`/`patch` into the server cache with the location's default query complete and active
/// (a filtered query streams its window alone, stored as that query's children and keys, and
/// while it is live the view reads those keys rather than an older whole copy);
/// while the server cannot be reached it follows the cache file's commits and tries again after
/// 1 s, ×1.3 per failure up to 30 s, jittered (0.7–1). Once connected, the stream reconnects by
/// itself; the fresh value it sends replaces the cached one. `--offline` only follows the cache
/// file; `--online` watches the server, no cache. The watch holds a session (the engine's
/// session lock) whose id marks its queries active, so a purge leaves them alone while it
/// lives; while its stream is live it is listed in `cache_streams`, and reads at or below its
/// path answer from the cache without a request (`streamedRead`).
extension OfflineDatabase {
    /// The first pause before trying the server again, its growth and its cap.
    static let retryFirstMillis = 1000.0
    static let retryFactor = 1.3
    static let retryCapMillis = 30_000.0

    public func observeViews(_ path: Path, query: Query, idle: () throws -> Bool,
                             onChange: (ObservedView) throws -> Bool) throws {
        if mode == .online {
            return try remote.database.observe(path, query: query, idle: idle) { value, keys in
                try onChange(ObservedView(value: value, changedKeys: keys, complete: nil))
            }
        }
        if path.isPriority {
            // A priority belongs to its node: the node is watched (and cached), its priority shown.
            return try CacheWatch(db: self, path: path.node, query: Query(), sendsQueue: true).run(idle: idle) { view in
                try onChange(ObservedView(value: view.value.priority, changedKeys: nil, complete: view.complete))
            }
        }
        try CacheWatch(db: self, path: path, query: query, sendsQueue: true).run(idle: idle, onChange: onChange)
    }
}

/// One watch of the cache; `idle` and `onChange` are the caller's. `sendsQueue`: the watch
/// sends queued writes as they appear and when it connects again (a kept stream of
/// `sync --follow` leaves them to `sync`, which reports each).
final class CacheWatch {
    private let db: OfflineDatabase
    private let cache: CacheStore
    private let path: Path
    private let query: Query
    private let params: String
    private let sendsQueue: Bool
    /// The caller's `idle` or `onChange` said to end.
    private var stopped = false
    /// A stream of the query's window is live: its tracked keys are current.
    private var windowLive = false

    init(db: OfflineDatabase, path: Path, query: Query, sendsQueue: Bool) {
        self.db = db
        self.cache = db.cache
        self.path = path
        self.query = query
        self.params = TrackedParams.canonical(query)
        self.sendsQueue = sendsQueue
    }

    func run(idle: () throws -> Bool, onChange: (ObservedView) throws -> Bool) throws {
        let session = try cache.db.beginSession([])
        defer {
            try? cache.deactivateQueries(session: session.id)
            _ = try? cache.db.endSession(session)
        }
        try cache.activateQuery(path, params: params, session: session.id)
        if db.mode == .offline {
            _ = try followCache(until: nil, idle: idle, onChange: onChange)
            return
        }
        // What the cache knows shows at once, before the server answers (or does not).
        guard try refresh(onChange) else { return }
        // Queued writes go out on another connection: this one carries the stream.
        let flusher = sendsQueue ? db.sibling() : nil
        var retry = OfflineDatabase.retryFirstMillis
        while !stopped {
            do {
                try stream(session: session.id, flusher: flusher, idle: idle, onChange: onChange)
                return   // the stream ends only when the watch is to end
            } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
                // Not reachable: the cache answers until the next try.
            }
            let wait = Int64(retry * Double.random(in: 0.7...1.0))
            retry = min(OfflineDatabase.retryCapMillis, retry * OfflineDatabase.retryFactor)
            guard try followCache(until: OfflineClock.monotonicMillis() + wait, idle: idle, onChange: onChange) else { return }
        }
    }

    /// Streams the location (a filtered query: its window) from the server, storing what it
    /// sends and showing the view's changes; also shows other processes' queued writes as they
    /// commit. Throws `unavailable`/`timeout` when the first connection fails; returns when the
    /// watch ends.
    private func stream(session: String, flusher: OfflineDatabase?, idle: () throws -> Bool,
                        onChange: (ObservedView) throws -> Bool) throws {
        var version = try cache.db.commitCounter()
        var fresh = true
        let window = params != TrackedParams.defaultParams
        // While the stream is live, reads of this location (any process) answer from the cache;
        // a window's stream keeps only the window fresh, so it marks nothing, and its view
        // reads the window's own keys.
        // Weak: the stream may report once more as it ends, after this watch let go.
        let live: (Bool) -> Void = { [cache, path, weak self] live in
            if window {
                if !live { self?.windowLive = false }
            } else {
                try? cache.markStream(session: session, path: path, streaming: live)
            }
        }
        try db.remote.stream(path, query: window ? query : nil,
                             reconnectMillis: (Int(OfflineDatabase.retryFirstMillis), Int(OfflineDatabase.retryCapMillis)),
                             live: live, idle: {
            guard try idle() else { stopped = true; return false }
            let now = try cache.db.commitCounter()
            if now != version {
                version = now
                if try !refresh(onChange) { return false }
                if let flusher, try cache.queuedCount() > 0 { flusher.flushIncidentally() }
            }
            return true
        }) { value, keys in
            // The whole value comes first on each (re)connection (no keys): it replaces the
            // cached one; later events name the children they touch.
            let whole = fresh || keys == nil
            if window {
                // A child that left the window may still be on the server: only the children
                // in it are stored, and the keys say which they are.
                let inside = whole ? value.children.map { (key: $0.key, value: $0.node) }
                    : (keys ?? []).map { (key: $0, value: value.child($0)) }.filter { !$0.value.isNull }
                try cache.storeServerChildren(path, inside)
                try cache.trackQuery(path, params: params, complete: true, keys: query.window(of: value).map { $0.key })
                windowLive = true
            } else if whole {
                try cache.storeServerAnswer(path, params: TrackedParams.defaultParams, value: value)
            } else if let keys {
                try cache.storeServerChildren(path, keys.map { ($0, value.child($0)) })
            }
            fresh = false
            guard try refresh(onChange) else { return false }
            // Connected again: send what was queued meanwhile.
            if whole, let flusher, try cache.queuedCount() > 0 { flusher.flushIncidentally() }
            return true
        }
    }

    /// Follows the cache file's commits, showing the view's changes, until `deadline`
    /// (monotonic ms; nil: until the watch ends). False when the watch is to end.
    private func followCache(until deadline: Int64?, idle: () throws -> Bool, onChange: (ObservedView) throws -> Bool) throws -> Bool {
        var ended = false
        try cache.db.observe(path, idle: {
            guard try idle() else { stopped = true; ended = true; return false }
            if let deadline, OfflineClock.monotonicMillis() >= deadline { return false }
            return true
        }) { _, _ in
            if try !refresh(onChange) { ended = true; return false }
            return true
        }
        return !ended && !stopped
    }

    /// Reads the view from the cache and passes it on. False when the watch is to end.
    private func refresh(_ onChange: (ObservedView) throws -> Bool) throws -> Bool {
        let r = try cache.cachedRead(path, params: params, now: db.estimatedServerTime(), rules: windowLive ? .ownWindowFirst : [])
        guard try onChange(ObservedView(value: r.value, changedKeys: nil, complete: r.complete)) else {
            stopped = true
            return false
        }
        return true
    }
}
