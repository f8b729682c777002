/// A write waiting in an offline cache's queue.
///
/// Invariant: ids increase strictly (a deleted id is never reused), so id order is the order
/// the writes were made in, across processes and restarts.
public struct QueuedWrite: Sendable {
    public enum Kind: String, Sendable { case set, update }
    public enum State: String, Sendable { case pending, sending }

    public var id: Int64
    /// The command that made it: `set`, `update`, `push`, `remove`, `increment` or `session`.
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

/// A write the server rejected, kept in the cache's log (the last 100).
public struct RejectedWrite: Sendable {
    public var write: QueuedWrite
    /// Why: its code (`permission_denied`, `invalid_data`, `too_large`, …) and the server's words.
    public var error: RTDBError
    public var atMillis: Int64
    /// Its place in the log: grows with each rejection and is never reused.
    public var seq: Int64

    public init(write: QueuedWrite, error: RTDBError, atMillis: Int64, seq: Int64 = 0) {
        self.write = write
        self.error = error
        self.atMillis = atMillis
        self.seq = seq
    }
}

/// What happened to one queued write while the queue was sent.
public enum FlushEvent: Sendable {
    /// Applied by the server: `answered` holds each set's value as the server stored it.
    case acked(QueuedWrite, answered: [(path: Path, value: Node)], resent: Bool)
    case rejected(QueuedWrite, RTDBError)
}

/// Why sending a queue stopped before its last write.
public struct FlushStop: Error, Sendable {
    public var reason: QueueReason
    public var error: RTDBError

    public init(reason: QueueReason, error: RTDBError) {
        self.reason = reason
        self.error = error
    }
}

/// How an offline cache reaches its server.
public enum CacheMode: Sendable {
    /// Send the queue, ask the server, fall back to the cache.
    case auto
    /// Never contact the server.
    case offline
    /// The server is required; nothing stays queued.
    case online
}

/// A kept or tracked query: a location and its canonical query parameters (a JSON object of
/// the REST parameters, `{}` for the whole location).
public struct CachedQuery: Sendable {
    public var path: Path
    public var params: String

    /// The params of a whole location (its default query).
    public static let wholeLocation = "{}"

    public var isWholeLocation: Bool { params == CachedQuery.wholeLocation }

    public init(path: Path, params: String) {
        self.path = path
        self.params = params
    }
}

/// A tracked query as `cache ls` shows it.
public struct TrackedQueryInfo: Sendable {
    public var query: CachedQuery
    public var complete: Bool
    /// A live watch keeps it fresh (and the purge spares it).
    public var active: Bool
    public var kept: Bool
    public var lastUseMillis: Int64
    /// How many result keys a filtered query holds.
    public var keys: Int

    public init(query: CachedQuery, complete: Bool, active: Bool, kept: Bool, lastUseMillis: Int64, keys: Int) {
        self.query = query
        self.complete = complete
        self.active = active
        self.kept = kept
        self.lastUseMillis = lastUseMillis
        self.keys = keys
    }
}

/// What an offline cache's tables hold, as `cache info` counts them.
public struct CacheCounts: Sendable {
    /// The estimate of the cached data's size: Σ(length(path) + length(value)) of its rows.
    public var bytes = 0
    public var queries = 0
    public var complete = 0
    public var kept = 0
    public var pending = 0
    public var rejected = 0
    public var serverTimeOffset: Int64? = nil

    /// All zero: what a file without a cache holds.
    public init() {}
}

/// What `cache info` reports: the cache's file, its server and size limit,
/// and its counts, which read as the info's own (`info.bytes`, `info.pending`, …).
@dynamicMemberLookup
public struct CacheInfo: Sendable {
    public var file: String
    /// The remote database, without credentials.
    public var url: String
    public var limit: Int
    public var counts: CacheCounts

    public init(file: String, url: String, limit: Int, counts: CacheCounts) {
        self.file = file
        self.url = url
        self.limit = limit
        self.counts = counts
    }

    public subscript<T>(dynamicMember count: KeyPath<CacheCounts, T>) -> T { counts[keyPath: count] }
}

/// A remote database through an offline cache: the queue of writes, kept queries and the
/// cache's upkeep, for `queue`, `sync`, `keep` and `cache`.
public protocol CacheControl: Database {
    var cacheFile: String { get }
    var cacheMode: CacheMode { get }

    // MARK: the queue

    func queuedWrites() throws -> [QueuedWrite]
    func queuedWrite(id: Int64) throws -> QueuedWrite?
    func rejectedWrites() throws -> [RejectedWrite]
    /// The logged rejections not yet seen: neither listed (`queue --rejected` marks what it
    /// lists) nor the error of the command that made the write.
    func unseenRejections() throws -> [RejectedWrite]
    /// Marks the logged rejections `seqs` as seen.
    func markRejectionsSeen(_ seqs: [Int64]) throws
    /// Told of the outcome of each write sent by a flush this process makes on the way to
    /// other work (a read, a write of its own, a watch, a transaction), which no caller reports.
    var onIncidentalFlushEvent: ((FlushEvent) -> Void)? { get set }
    /// Runs `body` holding the queue's flush lock (waiting for another sender up to the
    /// timeout), so that nothing is dropped from under a sender.
    func withQueueLocked<T>(_ body: () throws -> T) throws -> T
    /// Drops a write unsent; nil when there is no such write.
    func dropWrite(id: Int64) throws -> QueuedWrite?
    /// Drops every queued write, in id order.
    func clearWrites() throws -> [QueuedWrite]
    /// Sends every queued write in order, calling `onEvent` after each outcome has committed;
    /// nil when the queue is empty at the end, else why it stopped.
    func flush(onEvent: (FlushEvent) throws -> Void) throws -> FlushStop?
    func queuedCount() throws -> Int
    /// Whether the server answers at all now (a cheap request).
    func probeServer() -> Bool

    // MARK: kept queries

    /// Keeps `query` at `path` (never purged, refreshed by `sync`); in auto mode reads it from
    /// the server once. Whether the cache now holds it in full.
    func keep(_ path: Path, query: Query) throws -> (kept: CachedQuery, complete: Bool)
    /// Forgets a kept query; whether it was kept.
    func unkeep(_ path: Path, query: Query) throws -> (kept: CachedQuery, found: Bool)
    func keptQueries() throws -> [CachedQuery]
    /// Reads each kept query again (an unchanged one costs a 304), reporting each.
    func refreshKept(_ each: (CachedQuery) throws -> Void) throws
    /// Streams `kept` (a location, or a query's window) from the server into the cache until
    /// `idle` returns false, reconnecting by itself; sends none of the queued writes, which
    /// stay the caller's to send and report (`sync --follow`).
    func keepFresh(_ kept: CachedQuery, idle: () throws -> Bool) throws

    // MARK: upkeep

    func cacheInfo() throws -> CacheInfo
    func trackedQueries() throws -> [TrackedQueryInfo]
    /// Runs the least-recently-used purge now, returning the pruned queries;
    /// `vacuum` gives the freed space back to the file system.
    func prune(vacuum: Bool) throws -> [CachedQuery]
    /// Empties the cached data and forgets every tracked query (how many there were); `all`
    /// also drops the queued writes (under the flush lock), returned in id order.
    func clear(all: Bool) throws -> (dropped: [QueuedWrite], queries: Int)
}
