import RTDBCore
import RTDBEngine
import RTDBOffline
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `watch` through an offline cache (offline.md §1.3, §2.4).
///
/// Invariant: every event is a diff of two views of the **cache** (the server cache with the
/// pending writes layered on top, `cachedRead`), so what the watch prints never depends on
/// where a change came from: the server's stream, this machine's queued writes (of any
/// process), their reverts after a rejection, or a catch-up after a reconnection. Child events
/// describe the known children at once; a `value` event is printed only while the view is
/// complete (with `--child-events`, one `value` line marks the moment it becomes complete).
///
/// Auto mode first prints what the cache knows, then streams the location (the REST event
/// stream), storing each `put`/`patch` into the server cache with the location's default
/// query complete and active; while the server cannot be reached it follows the cache file's commits and tries again after 1 s, ×1.3 per
/// failure up to 30 s, jittered (0.7–1). Once connected, the stream reconnects by itself; the
/// fresh value it sends replaces the cached one, and the diff prints what changed meanwhile.
/// `--offline` only follows the cache file. The watch holds a session (Sessions.swift) whose
/// id marks its queries active, so a purge leaves them alone while it lives; while its stream
/// is live it is listed in `cache_streams`, and reads at or below its path answer from the
/// cache without a request (`streamedRead`).
final class CachedWatch {
    let inv: Invocation
    let db: OfflineDatabase
    let path: Path
    let query: Query
    let params: String
    let childEvents: Bool
    let changesOnly: Bool
    let sink: WatchSink
    private var previous: Node? = nil
    private var previousComplete = false
    private var stopped = false

    init(_ inv: Invocation, _ db: OfflineDatabase, path: Path, query: Query, childEvents: Bool, changesOnly: Bool, sink: WatchSink) {
        self.inv = inv
        self.db = db
        self.path = path
        self.query = query
        self.params = TrackedParams.canonical(query)
        self.childEvents = childEvents
        self.changesOnly = changesOnly
        self.sink = sink
    }

    /// The first pause before trying the server again, its growth and its cap (offline.md §1.7).
    static let retryFirstMillis = 1000.0
    static let retryFactor = 1.3
    static let retryCapMillis = 30_000.0

    func run() throws {
        let session = try db.cache.beginSession([])
        defer {
            try? db.cache.deactivateQueries(session: session.id)
            _ = try? db.cache.endSession(session)
        }
        try db.cache.activateQuery(path, params: params, session: session.id)
        if db.mode == .offline {
            _ = try followCache(until: nil)
            return
        }
        if params != EmbeddedDatabase.defaultParams {
            // The stream carries the whole location: its default query is the one kept fresh.
            try db.cache.activateQuery(path, params: EmbeddedDatabase.defaultParams, session: session.id)
        }
        // What the cache knows prints at once, before the server answers (or does not).
        guard try refresh() else { return }
        db.remote.reconnectMillis = (Int(CachedWatch.retryFirstMillis), Int(CachedWatch.retryCapMillis))
        // While the stream is live, reads of this location (any process) answer from the cache.
        db.remote.onStreamState = { [db, path] live in try? db.cache.markStream(session: session.id, path: path, streaming: live) }
        // Queued writes go out on another connection: this one carries the stream.
        let flusher = try inv.offlineDatabase()
        var retry = CachedWatch.retryFirstMillis
        while !stopped {
            do {
                try stream(flusher: flusher)
                return   // the stream ends only when the watch is to end
            } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
                // Not reachable: the cache answers until the next try.
            }
            let wait = Int64(retry * Double.random(in: 0.7...1.0))
            retry = min(CachedWatch.retryCapMillis, retry * CachedWatch.retryFactor)
            guard try followCache(until: OfflineClock.monotonicMillis() + wait) else { return }
        }
    }

    /// Streams the location from the server, storing what it sends and printing the view's
    /// changes; also prints other processes' queued writes as they commit. Throws
    /// `unavailable`/`timeout` when the first connection fails; returns when the watch ends.
    private func stream(flusher: OfflineDatabase?) throws {
        var version = try db.cache.commitCounter()
        var fresh = true
        try db.remote.observe(path, idle: { [self] in
            guard WatchCommand.stdoutIsOpen() else { stopped = true; return false }
            let now = try db.cache.commitCounter()
            if now != version {
                version = now
                if try !refresh() { return false }
                if let flusher, try db.cache.queuedCount() > 0 { _ = try? flusher.flush() }
            }
            return true
        }) { [self] value, keys in
            // The whole value comes first on each (re)connection (no keys): it replaces the
            // cached one; later events name the children they touch.
            let whole = fresh || keys == nil
            if whole {
                try db.cache.storeServerAnswer(path, params: EmbeddedDatabase.defaultParams, value: value)
            } else if let keys {
                try db.cache.storeServerChildren(path, keys.map { ($0, value.child($0)) })
            }
            if params != EmbeddedDatabase.defaultParams {
                try db.cache.trackQuery(path, params: params, complete: true, keys: query.window(of: value).map { $0.key })
            }
            fresh = false
            guard try refresh() else { return false }
            // Connected again: send what was queued meanwhile.
            if whole, let flusher, try db.cache.queuedCount() > 0 { _ = try? flusher.flush() }
            return true
        }
    }

    /// Follows the cache file's commits, printing the view's changes, until `deadline`
    /// (monotonic ms; nil: until the watch ends). False when the watch is to end.
    private func followCache(until deadline: Int64?) throws -> Bool {
        db.cache.hangupFD = 1
        var ended = false
        try db.cache.observe(path, idle: { [self] in
            guard WatchCommand.stdoutIsOpen() else { stopped = true; ended = true; return false }
            if let deadline, OfflineClock.monotonicMillis() >= deadline { return false }
            return true
        }) { [self] _, _ in
            if try !refresh() { ended = true; return false }
            return true
        }
        return !ended && !stopped
    }

    /// Reads the view from the cache and delivers its events: the first time `child_added`
    /// per known child (and `value` when complete), then the changes. False when the watch
    /// is to end.
    private func refresh() throws -> Bool {
        let r = try db.cache.cachedRead(path, params: params, now: db.estimatedServerTime())
        var events: [Event] = []
        if let old = previous {
            if childEvents {
                events = EventGenerator.changes(query: query, old: old, new: r.value, childEvents: true)
                if r.complete && !previousComplete { events += EventGenerator.initial(query: query, value: r.value, childEvents: false) }
            } else if r.complete {
                events = previousComplete ? EventGenerator.changes(query: query, old: old, new: r.value, childEvents: false)
                    : EventGenerator.initial(query: query, value: r.value, childEvents: false)
            }
        } else if !changesOnly {
            if childEvents { events = EventGenerator.initial(query: query, value: r.value, childEvents: true) }
            if r.complete { events += EventGenerator.initial(query: query, value: r.value, childEvents: false) }
        }
        previous = r.value
        previousComplete = r.complete
        guard try sink.deliver(events) else { stopped = true; return false }
        return true
    }
}
