import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `/.info` of a `--url` target: the state of a
/// realtime connection, not data.
///
/// * A read makes one handshake: connected and the server's clock offset, or not connected.
/// * A watch keeps a realtime connection: `connected` is false at once, true after the
///   handshake, false when the socket drops, true again after a reconnection (1 s, ×1.3, at most
///   30 s, jittered); `serverTimeOffset` comes from each handshake (null before the first).
/// * A target that refuses the realtime upgrade (REST only) is probed every 5 s instead: any
///   answer but a network failure, 5xx or 429 counts as connected.
extension RemoteDatabase: ConnectionInfo {
    public func connectionInfo() throws -> Node { try realtimeInfo() }

    public func observeConnection(idle: () throws -> Bool, onChange: (Node) throws -> Bool) throws {
        let client = realtimeClient()
        defer { client.close() }
        guard try onChange(client.info) else { return }
        var pause = 1_000
        var nextAttempt: Int64 = 0
        var restOnly = false
        while try idle() {
            if restOnly {
                guard try onChange(Node.object([Node.Entry("connected", .bool(answersREST()))])) else { return }
                var slept = 0
                while slept < 5_000, try idle() { usleep(100_000); slept += 100 }
                continue
            }
            if client.connected {
                _ = try? client.pump(timeoutMillis: 250)
                while (try? client.nextEvent(timeoutMillis: 0)) != nil {}
                if !client.connected {
                    pause = 1_000
                    nextAttempt = monotonicMillis() + RemoteDatabase.jittered(pause)
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
                    nextAttempt = monotonicMillis() + RemoteDatabase.jittered(pause)
                }
            } else {
                usleep(50_000)
            }
            guard try onChange(client.info) else { return }
        }
    }

    /// A pause of about `ms` ms, jittered (half of it to all of it), so that clients that lost
    /// one server do not come back in step.
    static func jittered(_ ms: Int) -> Int64 { Int64(ms / 2 + Int.random(in: 0...(ms / 2))) }
}
