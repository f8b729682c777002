import RTDBCore
import RTDBNet

/// `rtdb session` on a `--url` target, over the realtime protocol: the server
/// holds the operations (`o`/`om`/`oc`) and runs them when the connection ends, however it
/// ends. Every (re)connection registers them again, with a new presence child, then makes the
/// on-connect writes; a dropped connection is retried with back-off (1 s, ×1.3, at most 30 s,
/// jittered). A normal end closes the socket, which is what makes the server run them.
///
/// Over REST only (`--transport rest`, or a server that refuses the WebSocket upgrade) nobody
/// would run them: that is `unsupported` (the offline cache's client-side session can).
extension RemoteDatabase: SessionHost {
    public func openSession(_ options: SessionOptions) throws -> HeldSession {
        if options.clientSide { throw RTDBError(.internal, "session: no offline cache for \(target.display)") }
        if options.transport == .rest { throw restOnly("--transport rest") }
        return RealtimeHeldSession(self, lastsWhileCommandRuns: options.heldForCommand)
    }

    func restOnly(_ why: String) -> RTDBError {
        RTDBError(.unsupported, "session: \(target.display) is used over REST (\(why)), which has no on-disconnect writes; "
                  + "--client-side makes them from this session when it ends normally; nothing was registered")
    }
}

final class RealtimeHeldSession: HeldSession {
    let remote: RemoteDatabase
    let client: RealtimeClient
    /// A command runs for the length of the session: a server that shuts the session out
    /// does not end it (the command goes on), it only leaves nobody holding the operations.
    let lastsWhileCommandRuns: Bool
    var pushIDs = PushIDGenerator()
    /// This process's name for the session, the same across reconnections (the server gives
    /// each connection an id of its own).
    let id: String
    /// Changes made while the session lives (`change`), in order: every reconnection registers
    /// them again after the session's own operations, so the server holds what was asked last.
    var changes: [DisconnectChange] = []

    init(_ remote: RemoteDatabase, lastsWhileCommandRuns: Bool) {
        self.remote = remote
        self.client = remote.realtimeClient()
        self.lastsWhileCommandRuns = lastsWhileCommandRuns
        id = pushIDs.next(now: RemoteDatabase.wallClock())
    }

    /// Sent on the live connection and answered by the server before it counts; refused at
    /// once while the session is between connections (its reconnection would otherwise have to
    /// guess whether the server took it).
    func change(_ change: DisconnectChange) throws {
        guard client.connected else {
            throw RTDBError(.unavailable, "session \(id) is not connected to \(remote.target.display) right now "
                            + "(it reconnects by itself); nothing was changed")
        }
        try send(change)
        changes.append(change)
    }

    /// One change as the realtime protocol's request: `o`, `om` or `oc`.
    func send(_ change: DisconnectChange) throws {
        switch change {
        case .register(.set(let p, let v)): try client.onDisconnectPut(p, v)
        case .register(.remove(let p)): try client.onDisconnectPut(p, .null)
        case .register(.update(let p, let entries)): try client.onDisconnectMerge(p, entries)
        case .cancel(let p): try client.onDisconnectCancel(p)
        }
    }

    /// A key made with the server's clock as the last handshake gave it.
    func newKey() -> String { pushIDs.next(now: RemoteDatabase.wallClock() + (client.serverTimeOffset ?? 0)) }

    func hold(_ steps: [SessionStep], events: (SessionEvent) throws -> Void, started: () throws -> Void,
              keepGoing: (Int) throws -> Bool) throws {
        // The first connection: a registration refused here ends the session before anything
        // starts. Unreachable: it starts, and the registration waits for the connection.
        var registeredOn = 0
        do {
            try client.connect()
        } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
            if RealtimeClient.isUpgradeRefusal(e) { throw remote.restOnly(e.message) }
            // A certificate that does not verify is no outage to wait out: the session ends
            // with the reason (status 6) instead of retrying in silence.
            if TLSHook.isCertificateRefusal(e) { throw e }
        }
        if client.connected {
            do {
                try register(steps, events: events)
                registeredOn = client.connectionCount
            } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
                client.close()
                throw e
            } catch {
                // Lost while registering: the loop below connects again and registers again.
            }
        }
        try started()
        var pause = 1_000
        var nextAttempt = monotonicMillis() + RemoteDatabase.jittered(pause)
        var wasConnected = client.connected
        var wait = 0
        while try keepGoing(wait) {
            wait = 0
            if client.connected {
                _ = try? client.pump(timeoutMillis: 50)
                while let e = try? client.nextEvent(timeoutMillis: 0) {
                    if case .authRevoked(let why) = e { try events(.note("session: \(why)")) }
                }
                if client.connected && registeredOn != client.connectionCount {
                    // A call reconnected by itself: register on the new connection.
                    registeredOn = (try? reregister(steps, events: events)) ?? registeredOn
                }
            }
            if wasConnected && !client.connected {
                try events(.disconnected)
                pause = 1_000
                nextAttempt = monotonicMillis() + RemoteDatabase.jittered(pause)
            }
            wasConnected = client.connected
            if client.connected { continue }
            if let reason = client.shutdownReason, !lastsWhileCommandRuns {
                // The server will not take this session again: nothing holds the operations.
                throw RTDBError(.unavailable, "session: \(remote.target.display) shut the connection down: \(reason)")
            }
            if monotonicMillis() >= nextAttempt && client.shutdownReason == nil {
                do {
                    try client.connect()
                    if let n = try reregister(steps, events: events) { registeredOn = n }
                    pause = 1_000
                } catch {
                    // Unreachable again, or refused (a credential): try later, the session goes on;
                    // a certificate that no longer verifies ends it.
                    if let e = error as? RTDBError, TLSHook.isCertificateRefusal(e) { throw e }
                    if let e = error as? RTDBError, e.code != .unavailable && e.code != .timeout {
                        try events(.note("session: \(e.message)"))
                    }
                    client.abandon()
                    pause = min(30_000, pause * 13 / 10)
                }
                nextAttempt = monotonicMillis() + RemoteDatabase.jittered(pause)
                wasConnected = client.connected
                continue
            }
            wait = 50
        }
        // The socket closes: the server runs the operations now.
        client.close()
        try events(.ended(queued: nil))
    }

    /// A refusal on a reconnection is reported and the session goes on (the next connection
    /// tries again); returns the connection it registered on, nil when it did not.
    func reregister(_ steps: [SessionStep], events: (SessionEvent) throws -> Void) throws -> Int? {
        do {
            try register(steps, events: events)
            return client.connectionCount
        } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
            try events(.note("session: \(e.message)"))
            return client.connectionCount
        }
    }

    /// On a new connection: registers the operations in order, then makes the on-connect writes,
    /// then reports them. A refused registration cancels what this connection registered; a
    /// refused on-connect write leaves them, so that closing the connection undoes the writes
    /// already made (the presence child goes).
    func register(_ steps: [SessionStep], events: (SessionEvent) throws -> Void) throws {
        let (operations, writes) = SessionStep.plan(steps, newKey: newKey)
        var lines: [SessionEvent] = [.connected(session: id)]
        var done: [Path] = []
        var wrote = false
        do {
            for op in operations {
                try send(.register(op))
                done.append(op.path)
                lines.append(.registered(op))
            }
            // What was changed while the session lived comes after its own operations, as it did.
            for c in changes {
                try send(c)
                if case .register(let op) = c { done.append(op.path) }
            }
            for (p, v) in writes {
                wrote = true
                try client.put(p, v)
                lines.append(.set(p, v, queued: nil))
            }
        } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
            if !wrote {   // no on-connect write made yet
                for p in done { try? client.onDisconnectCancel(p) }
            }
            throw e
        }
        for l in lines { try events(l) }
    }
}
