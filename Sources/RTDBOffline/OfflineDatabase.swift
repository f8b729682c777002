import RTDBCore
import RTDBEngine
import RTDBRemote

/// A remote database through an offline cache, a `Database` in its own
/// right: every write is queued in the cache file first and then sent in order by whichever
/// process holds the flush lock (OfflineFlush.swift), and returns a receipt that says whether
/// it was acknowledged (OfflineWrites.swift); reads ask the server and keep its answer, or
/// fall back to the cache, and can be partial (OfflineReads.swift); a watch shows the cache's
/// view, kept fresh by a stream (OfflineWatch.swift). Transactions and `/.info` go to the
/// server (OfflineConnection.swift); the queue, kept queries and upkeep are `CacheControl`
/// (OfflineControl.swift); `session --client-side` is its `SessionHost` (OfflineSession.swift).
///
/// Invariants: a queued row leaves the queue only in the transaction that stores its
/// acknowledged value (or logs its rejection), so a crash loses nothing and sends a row at
/// most once more (`resent`); rows are sent in id order, one request in flight, and a row is
/// never skipped: a failure stops the flush.
public final class OfflineDatabase: Database {
    public let cache: CacheStore
    public let remote: OfflineRemote
    public let mode: CacheMode
    /// How long a write waits for another process's flush to reach its row.
    let lockWaitSeconds: Double
    /// Fetches a fresh credential (`--auth-command`), or nil when there is no way to.
    let refreshCredential: (() throws -> Credential)?
    /// The principal queued writes are made as, from the current credential.
    public internal(set) var principal: String
    var refreshed = false
    /// Told of the outcome of each write sent by an incidental flush: one this process makes
    /// on the way to other work (a read or a transaction sends the queue first, a write sends
    /// the rows queued before its own, a watch sends writes as they are queued). No caller
    /// reports those, and a rejected write must never pass unnoticed; the flushes `sync` asks
    /// for report their own outcomes. A sibling handle shares it.
    public var onIncidentalFlushEvent: ((FlushEvent) -> Void)?

    public init(cache: CacheStore, remote: OfflineRemote, mode: CacheMode, lockWaitSeconds: Double,
                refreshCredential: (() throws -> Credential)?) {
        self.cache = cache
        self.remote = remote
        self.mode = mode
        self.lockWaitSeconds = lockWaitSeconds
        self.refreshCredential = refreshCredential
        self.principal = Principal.of(remote.credential)
    }

    /// Another handle on the same cache and database, with a connection to each of its own
    /// (a watch sends the queue on it while its own connection carries the stream).
    func sibling() -> OfflineDatabase {
        let other = CacheStore(EmbeddedDatabase(file: cache.file, timeoutSeconds: lockWaitSeconds),
                               url: cache.url, namespace: cache.owner.namespace, limit: cache.limit)
        let db = OfflineDatabase(cache: other, remote: remote.anotherConnection(), mode: mode, lockWaitSeconds: lockWaitSeconds,
                                 refreshCredential: refreshCredential)
        db.refreshed = refreshed
        db.onIncidentalFlushEvent = onIncidentalFlushEvent
        return db
    }

    /// A descriptor (stdout) whose other end going away wakes a watch of the cache file at
    /// once (see `EmbeddedDatabase.hangupFD`).
    public var hangupFD: Int32 {
        get { cache.db.hangupFD }
        set { cache.db.hangupFD = newValue }
    }

    /// The local clock plus the last known server offset: the estimate of server time.
    public func estimatedServerTime() -> Int64 {
        OfflineClock.wallMillis() + ((try? cache.serverTimeOffset()) ?? nil ?? 0)
    }

    // MARK: Database

    public func get(_ path: Path) throws -> Node { try read(path, as: .value, partial: false).value }

    public func export(_ path: Path) throws -> Node { try read(path, as: .export, partial: false).value }

    public func shallow(_ path: Path) throws -> Node { try read(path, as: .shallow, partial: false).value }

    public func query(_ path: Path, _ query: Query) throws -> [Node.Entry] { try self.query(path, query, partial: false).value }

    public func set(_ path: Path, _ value: Node) throws -> Node {
        try commit(.set(path, value)).values.first?.value ?? .null
    }

    public func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        try commit(.update(path, entries)).values.compactMap { v in path.relative(v.path).map { ($0, v.value) } }
    }

    public func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] {
        try commit(.push(path, values)).values.map { Node.Entry($0.path.last ?? "", $0.value) }
    }

    public func increment(_ path: Path, by delta: Node) throws -> Node {
        try commit(.increment(path, by: delta)).values.first?.value ?? .null
    }

    /// A conditional write is never queued: it goes to the server (see `transactions`).
    public func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        try transactions(waitSeconds: nil).compareAndSet(path, expected: expected, value: value)
    }

    public func observe(_ path: Path, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try observeViews(path, query: Query(), idle: idle) { try onChange($0.value, $0.changedKeys) }
    }

    public func observe(_ path: Path, query: Query, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try observeViews(path, query: query, idle: idle) { try onChange($0.value, $0.changedKeys) }
    }
}
