import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `watch` under `/.info` (offline.md §2.9, firebase-semantics §11): the connection state, not
/// data. Other paths go to the database's own `observe`.
///
/// * The database file is always connected with no clock offset: one value, then nothing.
/// * A `--url` target keeps a realtime connection: `connected` is false at once, true after the
///   handshake, false when the socket drops, true again after a reconnection (1 s, ×1.3, at most
///   30 s, jittered); `serverTimeOffset` comes from each handshake (null before the first).
/// * A target that refuses the realtime upgrade (REST only) is probed every 5 s instead: any
///   answer but a network failure, 5xx or 429 counts as connected.
enum InfoWatch {
    static func observe(_ db: Database, _ path: Path, query: Query, idle: () throws -> Bool,
                        onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws {
        guard path.isInfo else { return try db.observe(path, query: query, idle: idle, onChange: onChange) }
        let below = Path(validatedKeys: Array(path.keys.dropFirst()))
        guard let remote = db as? RemoteDatabase else {
            guard try onChange(try InfoTree.value(path, db), nil) else { return }
            while try idle() { usleep(250_000) }
            return
        }
        let client = remote.realtimeClient()
        defer { client.close() }
        var last: Node? = nil
        /// Delivers the value when it changed; false when the watch is done.
        func deliver(_ info: Node) throws -> Bool {
            let value = info.child(at: below)
            if let l = last, l.same(as: value) { return true }
            last = value
            return try onChange(value, nil)
        }
        guard try deliver(client.info) else { return }
        var pause = 1_000
        var nextAttempt: Int64 = 0
        var restOnly = false
        while try idle() {
            if restOnly {
                guard try deliver(Node.object([Node.Entry("connected", .bool(remote.answersREST()))])) else { return }
                var slept = 0
                while slept < 5_000, try idle() { usleep(100_000); slept += 100 }
                continue
            }
            if client.connected {
                _ = try? client.pump(timeoutMillis: 250)
                while (try? client.nextEvent(timeoutMillis: 0)) != nil {}
                if !client.connected {
                    pause = 1_000
                    nextAttempt = monotonicMillis() + RemoteSession.jittered(pause)
                }
            } else if monotonicMillis() >= nextAttempt {
                do {
                    try client.connect()
                    pause = 1_000
                } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
                    if RealtimeClient.isUpgradeRefusal(e) { restOnly = true; continue }
                    if client.shutdownReason != nil { throw e }
                    client.abandon()
                    pause = min(30_000, pause * 13 / 10)
                    nextAttempt = monotonicMillis() + RemoteSession.jittered(pause)
                }
            } else {
                usleep(50_000)
            }
            guard try deliver(client.info) else { return }
        }
    }
}
