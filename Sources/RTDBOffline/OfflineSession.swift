import RTDBCore
import RTDBEngine

/// `rtdb session --client-side`: the session makes its own
/// operations. They are recorded in the cache file under the session lock, with the principal
/// they are made as, queued when the session ends normally and sent at once, as one multi-path
/// update whose server values the server resolves. If the session dies instead, the next rtdb
/// process that opens the cache for writing (any write, `sync`, or another client-side
/// session) queues them (`CacheFile.sessionEnding`), and its flush sends them; they are lost
/// only with the machine. Without `--client-side` the remote database holds the session.
extension OfflineDatabase: SessionHost {
    public func openSession(_ options: SessionOptions) throws -> HeldSession {
        guard options.clientSide else {
            guard let host = remote.database.capability(SessionHost.self) else {
                throw RTDBError(.unsupported, "session: this database cannot hold a session; nothing was registered")
            }
            return try host.openSession(options)
        }
        return ClientSideSession(self)
    }
}

final class ClientSideSession: FileHeldSession {
    let db: OfflineDatabase
    /// The id of its rows in the cache file, which are what is queued when the session ends.
    let id: String
    var file: EmbeddedDatabase { db.cache.db }

    init(_ db: OfflineDatabase) {
        self.db = db
        id = db.cache.db.newPushKey()
    }

    func hold(_ steps: [SessionStep], events: (SessionEvent) throws -> Void, started: () throws -> Void,
              keepGoing: (Int) throws -> Bool) throws {
        var pushIDs = PushIDGenerator()
        let (operations, writes) = SessionStep.plan(steps, newKey: { pushIDs.next(now: db.estimatedServerTime()) })
        let principal = db.principal
        let session = try file.beginSession(operations, id: id) { t, id in
            let p = try t.connection.statement("INSERT INTO cache_session_principals(session_id, principal) VALUES(?1, ?2)")
            p.bind(1, text: id)
            p.bind(2, text: principal)
            try p.run()
        }
        var lines: [SessionEvent] = [.connected(session: session.id)]
        lines += operations.map { .registered($0) }
        do {
            for (p, v) in writes {
                let outcome = try db.write(cmd: "session", kind: .set, path: p, data: v)
                let queued = outcome.reason.map { WriteReceipt.Queued(id: outcome.id, reason: $0, estimated: false) }
                lines.append(.set(p, outcome.answered?.last?.value ?? v, queued: queued))
            }
        } catch {
            // Once something was written, the operations run as at a normal end (they undo it:
            // the presence child goes); before that nothing is written at all.
            if lines.count > 1 + operations.count {
                for l in lines { try events(l) }
                try finish(session, events: events)
            } else {
                try? file.abandonSession(session)
            }
            throw error
        }
        for l in lines { try events(l) }
        try started()
        while try keepGoing(-1) {}
        try events(.ended(queued: try finish(session, events: events)))
    }

    /// Queues the session's operations and sends the queue; what cannot be sent now stays
    /// queued for the next flush (`rtdb sync`): returns why, nil when they were sent.
    @discardableResult
    func finish(_ session: EmbeddedSession, events: (SessionEvent) throws -> Void) throws -> QueueReason? {
        if try file.endSession(session).isEmpty { return nil }
        var left: String? = nil
        var why: QueueReason? = nil
        do {
            why = try db.flush { event in
                if case .rejected(let row, let e) = event, row.cmd == "session" {
                    try events(.note("session: the server refused the on-disconnect writes: \(e.message)"))
                } else {
                    // Other writes that were queued: sent on the way.
                    db.onIncidentalFlushEvent?(event)
                }
            }?.reason
            left = why?.rawValue
        } catch let e as RTDBError {
            why = .unavailable
            left = e.message
        }
        if let left {
            try events(.note("session: the on-disconnect writes are queued in \(db.cache.file) (\(left)); rtdb sync sends them"))
        }
        // Still queued only if the flush stopped before the session's row.
        guard let why else { return nil }
        return try db.cache.queuedWrites().contains { $0.cmd == "session" } ? why : nil
    }
}
