import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What goes to the server whatever the cache holds: `/.info` (never cached)
/// and transactions (never queued or persisted).
extension OfflineDatabase: ConnectionInfo {
    /// `--offline` is not connected and shows the last measured clock offset (null if none);
    /// otherwise the server is asked, and the offset it gives is kept for the estimates of
    /// server values.
    public func connectionInfo() throws -> Node {
        if mode == .offline {
            let offset = try cache.serverTimeOffset()
            return Node.object([Node.Entry("connected", .bool(false)),
                                Node.Entry("serverTimeOffset", offset.map { Node.int($0) } ?? .null)])
        }
        let info = try remote.connectionInfo()
        if case .int(let offset) = info.child("serverTimeOffset") { try? cache.setServerTimeOffset(offset) }
        return info
    }

    public func observeConnection(idle: () throws -> Bool, onChange: (Node) throws -> Bool) throws {
        if mode == .offline {
            guard try onChange(try connectionInfo()) else { return }
            while try idle() { usleep(250_000) }
            return
        }
        try remote.observeConnection(idle: idle, onChange: onChange)
    }

    /// A transaction runs on the server once it can be reached (the queued writes sent first),
    /// and its committed value is stored in the cache; it throws `unavailable`/`timeout` at
    /// once without `waitSeconds`, else after that long of retrying with a growing pause.
    public func transactions(waitSeconds: Double?) throws -> Database {
        if mode == .offline {
            throw RTDBError(.unavailable, "tx: a transaction is never queued, so it cannot run with --offline")
        }
        let deadline = OfflineClock.monotonicMillis() + Int64((waitSeconds ?? 0) * 1000)
        var pause: Int64 = 250
        while true {
            do {
                try remote.connect()
                break
            } catch let e as RTDBError {
                let now = OfflineClock.monotonicMillis()
                guard waitSeconds != nil, now < deadline else {
                    throw RTDBError(e.code == .timeout ? .timeout : .unavailable,
                                    "tx: \(e.message); a transaction is never queued (--wait SECONDS waits for the server)")
                }
                usleep(UInt32(min(pause, deadline - now)) * 1000)
                pause = min(pause * 2, 2000)
            }
        }
        flushIncidentally()
        return ServerTransactions(server: remote.database, cache: cache)
    }
}

/// The server as a transaction sees it: every call goes to the server; a committed
/// compare-and-set is also stored in the cache, as what the server holds now.
final class ServerTransactions: Database {
    let server: Database
    let cache: CacheStore

    init(server: Database, cache: CacheStore) {
        self.server = server
        self.cache = cache
    }

    func get(_ path: Path) throws -> Node { try server.get(path) }
    func export(_ path: Path) throws -> Node { try server.export(path) }
    func shallow(_ path: Path) throws -> Node { try server.shallow(path) }
    func query(_ path: Path, _ query: Query) throws -> [Node.Entry] { try server.query(path, query) }
    func set(_ path: Path, _ value: Node) throws -> Node { try server.set(path, value) }
    func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        try server.update(path, entries)
    }
    func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] { try server.push(path, values) }
    func increment(_ path: Path, by delta: Node) throws -> Node { try server.increment(path, by: delta) }

    func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        let result = try server.compareAndSet(path, expected: expected, value: value)
        if case .committed(let stored) = result {
            try? cache.storeServerAnswer(path, params: TrackedParams.defaultParams, value: stored)
        }
        return result
    }

    func observe(_ path: Path, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try server.observe(path, idle: idle, onChange: onChange)
    }

    func observe(_ path: Path, query: Query, idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        try server.observe(path, query: query, idle: idle, onChange: onChange)
    }
}
