import RTDBCore

/// The queue, kept queries and upkeep of the cache, for `queue`, `sync`, `keep` and `cache`.
/// Nothing here contacts the server but `flush`, `probeServer`,
/// `refreshKept` and `keep` in auto mode.
extension OfflineDatabase: CacheControl {
    public var cacheFile: String { cache.file }
    public var cacheMode: CacheMode { mode }

    // MARK: the queue

    public func queuedWrites() throws -> [QueuedWrite] { try cache.queuedWrites() }

    public func queuedWrite(id: Int64) throws -> QueuedWrite? { try cache.queuedWrite(id: id) }

    public func rejectedWrites() throws -> [RejectedWrite] { try cache.rejections() }

    public func unseenRejections() throws -> [RejectedWrite] { try cache.rejections(unseen: true) }

    public func markRejectionsSeen(_ seqs: [Int64]) throws { try cache.markRejectionsSeen(seqs) }

    public func withQueueLocked<T>(_ body: () throws -> T) throws -> T {
        guard let lock = try FlushLock.acquire(cacheFile: cache.file, seconds: lockWaitSeconds, keepWaiting: { true }) else {
            throw RTDBError(.timeout, "another rtdb process is sending the queued writes of \(cache.file); try again")
        }
        return try withExtendedLifetime(lock) { try body() }
    }

    public func dropWrite(id: Int64) throws -> QueuedWrite? { try cache.dropWrite(id: id) }

    public func clearWrites() throws -> [QueuedWrite] { try cache.clearWrites() }

    public func flush(onEvent: (FlushEvent) throws -> Void) throws -> FlushStop? {
        try flush(through: nil, onEvent: onEvent)
    }

    public func queuedCount() throws -> Int { try cache.queuedCount() }

    public func probeServer() -> Bool { remote.answersREST() }

    // MARK: kept queries

    public func keep(_ path: Path, query: Query) throws -> (kept: CachedQuery, complete: Bool) {
        let params = TrackedParams.canonical(query)
        try cache.keep(path, params: params)
        let filtered = params == TrackedParams.defaultParams ? nil : query
        let complete: Bool
        if mode == .offline {
            complete = try cache.cachedRead(path, params: params, now: estimatedServerTime()).complete
        } else {
            complete = try read(path, query: filtered).complete
        }
        return (CachedQuery(path: path, params: params), complete)
    }

    public func unkeep(_ path: Path, query: Query) throws -> (kept: CachedQuery, found: Bool) {
        let params = TrackedParams.canonical(query)
        return (CachedQuery(path: path, params: params), try cache.unkeep(path, params: params))
    }

    public func keptQueries() throws -> [CachedQuery] { try cache.keptQueries() }

    public func refreshKept(_ each: (CachedQuery) throws -> Void) throws {
        for kept in try cache.keptQueries() {
            _ = try read(kept.path, query: try TrackedParams.query(kept.params))
            try each(kept)
        }
    }

    public func keepFresh(_ kept: CachedQuery, idle: () throws -> Bool) throws {
        let query = try TrackedParams.query(kept.params) ?? Query()
        try CacheWatch(db: self, path: kept.path, query: query, sendsQueue: false).run(idle: idle) { _ in true }
    }

    // MARK: upkeep

    /// The limit when none was given (`--cache-size`'s default).
    static let defaultLimit = 10_485_760

    public func cacheInfo() throws -> CacheInfo {
        CacheInfo(file: cache.file, url: remote.display, limit: cache.limit ?? OfflineDatabase.defaultLimit, counts: try cache.counts())
    }

    public func trackedQueries() throws -> [TrackedQueryInfo] {
        let kept = try cache.keptQueries()
        return try cache.trackedQueries().map { q in
            TrackedQueryInfo(query: CachedQuery(path: q.path, params: q.params), complete: q.complete,
                             active: q.activeSession.map { cache.db.isLiveSession($0) } ?? false,
                             kept: kept.contains { $0.path.same(as: q.path) && $0.params == q.params },
                             lastUseMillis: q.lastUseMillis, keys: q.keys.count)
        }
    }

    public func prune(vacuum: Bool) throws -> [CachedQuery] {
        let pruned = try cache.prune(limit: cache.limit ?? OfflineDatabase.defaultLimit)
        if vacuum { try cache.db.vacuum() }
        return pruned
    }

    public func clear(all: Bool) throws -> (dropped: [QueuedWrite], queries: Int) {
        let dropped = all ? try withQueueLocked { try cache.clearWrites() } : []
        return (dropped, try cache.clearCache())
    }
}
