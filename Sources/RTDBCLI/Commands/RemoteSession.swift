import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBOffline
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb session` on a `--url` target (offline.md §2.9).
///
/// Over the realtime protocol the server holds the operations (`o`/`om`/`oc`) and runs them
/// when the connection ends, however it ends. Every (re)connection registers them again, with a
/// new presence child, then makes the on-connect writes; a dropped connection is retried with
/// back-off (1 s, ×1.3, at most 30 s, jittered). A normal end closes the socket, which is what
/// makes the server run them.
///
/// With `--client-side` (or a target reached over REST only) nobody holds them but the session
/// itself: it makes them over REST, as one multi-path update, when it ends normally; a killed
/// session's operations are lost.
enum RemoteSession {
    static func run(_ inv: Invocation, _ remote: RemoteDatabase, steps: [SessionCommand.Step],
                    command: [String], rest: Bool) throws {
        if inv.has(SessionCommand.clientSide) { return try clientSide(inv, remote, steps: steps, command: command) }
        if rest { throw restOnly(remote, "--transport rest") }
        let events = try SessionCommand.EventSink(inv, file: inv.value(SessionCommand.events), toStdout: command.isEmpty && !inv.quiet)
        Interruption.install()
        let client = remote.realtimeClient()
        var pushIDs = PushIDGenerator()
        func newKey() -> String { pushIDs.next(now: RemoteDatabase.wallClock() + (client.serverTimeOffset ?? 0)) }

        // The first connection: a registration refused here ends the session before CMD starts.
        // Unreachable: CMD runs, and the registration waits for the connection.
        var registeredOn = 0
        do {
            try client.connect()
        } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
            if RealtimeClient.isUpgradeRefusal(e) { throw restOnly(remote, e.message) }
        }
        if client.connected {
            do {
                try register(client, steps, newKey: newKey, events: events)
                registeredOn = client.connectionCount
            } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
                client.close()
                throw e
            } catch {
                // Lost while registering: the loop below connects again and registers again.
            }
        }

        var held: SessionCommand.HeldCommand? = command.isEmpty ? nil : try SessionCommand.HeldCommand(command)
        var status: Int32 = 0
        var pause = 1_000
        var nextAttempt = monotonicMillis() + jittered(pause)
        var wasConnected = client.connected
        while true {
            if held != nil, let s = try held?.exited() {
                status = s
                break
            }
            if held == nil, Interruption.pending() != nil { break }
            if client.connected {
                _ = try? client.pump(timeoutMillis: 50)
                while let e = try? client.nextEvent(timeoutMillis: 0) {
                    if case .authRevoked(let why) = e { Diagnostics.note("session: \(why)") }
                }
                if client.connected && registeredOn != client.connectionCount {
                    // A call reconnected by itself: register on the new connection.
                    registeredOn = (try? reregister(client, steps, newKey: newKey, events: events)) ?? registeredOn
                }
            }
            if wasConnected && !client.connected {
                try events.line([("event", .string("disconnected"))])
                pause = 1_000
                nextAttempt = monotonicMillis() + jittered(pause)
            }
            wasConnected = client.connected
            if client.connected { continue }
            if client.shutdownReason != nil, held == nil {
                // The server will not take this session again: nothing holds the operations.
                throw RTDBError(.unavailable, "session: \(remote.target.display) shut the connection down: \(client.shutdownReason ?? "")")
            }
            if monotonicMillis() >= nextAttempt && client.shutdownReason == nil {
                do {
                    try client.connect()
                    if let n = try reregister(client, steps, newKey: newKey, events: events) { registeredOn = n }
                    pause = 1_000
                } catch {
                    // Unreachable again, or refused (a credential): try later, CMD goes on.
                    if let e = error as? RTDBError, e.code != .unavailable && e.code != .timeout {
                        Diagnostics.note("session: \(e.message)")
                    }
                    client.abandon()
                    pause = min(30_000, pause * 13 / 10)
                }
                nextAttempt = monotonicMillis() + jittered(pause)
                wasConnected = client.connected
                continue
            }
            var p = pollfd(fd: Interruption.readFD, events: Int16(POLLIN), revents: 0)
            let watchSignals = Interruption.readFD >= 0 && !(held?.forwarded ?? false) && Interruption.pending() == nil
            _ = poll(&p, watchSignals ? 1 : 0, 50)
        }
        // The socket closes: the server runs the operations now.
        client.close()
        try events.line([("event", .string("ended"))])
        if status != 0 { throw ExitStatus(status) }
    }

    /// A refusal on a reconnection is reported and the session goes on (the next connection
    /// tries again); returns the connection it registered on, nil when it did not.
    static func reregister(_ client: RealtimeClient, _ steps: [SessionCommand.Step], newKey: () -> String,
                           events: SessionCommand.EventSink) throws -> Int? {
        do {
            try register(client, steps, newKey: newKey, events: events)
            return client.connectionCount
        } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
            Diagnostics.note("session: \(e.message)")
            return client.connectionCount
        }
    }

    /// On a new connection: registers the operations in order, then makes the on-connect writes,
    /// then prints the event lines. A refused registration cancels what this connection
    /// registered; a refused on-connect write leaves them, so that closing the connection undoes
    /// the writes already made (the presence child goes).
    static func register(_ client: RealtimeClient, _ steps: [SessionCommand.Step], newKey: () -> String,
                         events: SessionCommand.EventSink) throws {
        let (operations, writes) = SessionCommand.plan(steps, newKey: newKey)
        var lines: [[(String, Field)]] = [[("event", .string("connected")), ("session", .string(client.sessionID ?? ""))]]
        var done: [Path] = []
        do {
            for op in operations {
                switch op {
                case .set(let p, let v): try client.onDisconnectPut(p, v)
                case .remove(let p): try client.onDisconnectPut(p, .null)
                case .update(let p, let entries): try client.onDisconnectMerge(p, entries)
                }
                done.append(op.path)
                lines.append(SessionCommand.registeredLine(op))
            }
            for (p, v) in writes {
                try client.put(p, v)
                lines.append(SessionCommand.setLine(p, v))
            }
        } catch let e as RTDBError where e.code != .unavailable && e.code != .timeout {
            if lines.count == 1 + done.count {   // no on-connect write made yet
                for p in done { try? client.onDisconnectCancel(p) }
            }
            throw e
        }
        for l in lines { try events.line(l) }
    }

    static func jittered(_ ms: Int) -> Int64 { Int64(ms / 2 + Int.random(in: 0...(ms / 2))) }

    static func restOnly(_ remote: RemoteDatabase, _ why: String) -> RTDBError {
        RTDBError(.unsupported, "session: \(remote.target.display) is used over REST (\(why)), which has no on-disconnect writes; "
                  + "--client-side makes them from this session when it ends normally; nothing was registered")
    }

    // MARK: --client-side

    /// The session makes its own operations (offline.md §2.9, REST row): they are recorded in
    /// the offline cache of the database (the default cache file unless --cache names one)
    /// under the session lock, queued when the session ends normally (CMD exits, SIGINT,
    /// SIGTERM) and sent at once, as one multi-path update whose server values the server
    /// resolves. If the session dies instead, the next rtdb process that opens the cache for
    /// writing (any write, `sync`, or another client-side session) queues them, and its flush
    /// sends them; they are lost only with the machine.
    static func clientSide(_ inv: Invocation, _ remote: RemoteDatabase, steps: [SessionCommand.Step], command: [String]) throws {
        guard let offline = try inv.offlineDatabase(persist: true) else {
            throw RTDBError(.internal, "session: no offline cache for \(remote.target.display)")
        }
        let events = try SessionCommand.EventSink(inv, file: inv.value(SessionCommand.events), toStdout: command.isEmpty && !inv.quiet)
        Interruption.install()
        var pushIDs = PushIDGenerator()
        let (operations, writes) = SessionCommand.plan(steps, newKey: { pushIDs.next(now: offline.estimatedServerTime()) })
        let session = try offline.cache.beginSession(operations, principal: offline.principal)
        var lines: [[(String, Field)]] = [[("event", .string("connected")), ("session", .string(session.id))]]
        lines += operations.map(SessionCommand.registeredLine)
        do {
            for (p, v) in writes {
                let outcome = try offline.write(cmd: "session", kind: .set, path: p, data: v)
                var line = SessionCommand.setLine(p, outcome.answered?.last?.value ?? v)
                if let reason = outcome.reason {
                    line += [("queued", .node(.bool(true))), ("id", .node(.int(outcome.id))), ("reason", .string(reason))]
                }
                lines.append(line)
            }
        } catch {
            // Once something was written, the operations run as at a normal end (they undo it:
            // the presence child goes); before that nothing is written at all.
            if lines.count > 1 + operations.count {
                for l in lines { try events.line(l) }
                try finish(offline, session)
            } else {
                try? offline.cache.abandonSession(session)
            }
            throw error
        }
        for l in lines { try events.line(l) }
        var status: Int32 = 0
        if command.isEmpty {
            SessionCommand.waitForSignal()
        } else {
            status = try SessionCommand.runCommand(command)
        }
        var ended: [(String, Field)] = [("event", .string("ended"))]
        if let reason = try finish(offline, session) { ended += [("queued", .node(.bool(true))), ("reason", .string(reason))] }
        try events.line(ended)
        if status != 0 { throw ExitStatus(status) }
    }

    /// Queues the session's operations and sends the queue; what cannot be sent now stays
    /// queued for the next flush (`rtdb sync`): returns why, nil when they were sent.
    @discardableResult
    static func finish(_ offline: OfflineDatabase, _ session: EmbeddedSession) throws -> String? {
        if try offline.cache.endSession(session).isEmpty { return nil }
        var left: String? = nil
        var why: String? = nil
        do {
            why = try offline.flush { event in
                if case .rejected(let row, let e) = event, row.cmd == "session" {
                    Diagnostics.note("session: the server refused the on-disconnect writes: \(e.message)")
                }
            }?.reason
            left = why
        } catch let e as RTDBError {
            why = "unavailable"
            left = e.message
        }
        if let left {
            Diagnostics.note("session: the on-disconnect writes are queued in \(offline.cache.file) (\(left)); rtdb sync sends them")
        }
        // Still queued only if the flush stopped before the session's row.
        guard let why else { return nil }
        return try offline.cache.queuedWrites().contains { $0.cmd == "session" } ? why : nil
    }
}
