import RTDBCore

/// `rtdb session` on the database file: the session lock (Sessions.swift) holds the operations,
/// so they run when the session ends, or when the next process finds its holder dead.
extension EmbeddedDatabase: SessionHost {
    public func openSession(_ options: SessionOptions) throws -> HeldSession {
        if let option = options.clientSide ? "--client-side" : options.transport != nil ? "--transport" : nil {
            throw RTDBError(.usage, "\(option) is for remote databases (--url): on the database file the session lock runs the writes")
        }
        return EmbeddedHeldSession(self)
    }
}

/// A session this process holds with its rows and lock file in an embedded file
/// (Sessions.swift): a database file's own sessions, and an offline cache's client-side ones.
/// Its id is one of the file's push keys; a change goes through its rows, as any other process
/// makes it (`SessionStore`), so that they hold what runs when the session ends.
public protocol FileHeldSession: HeldSession {
    /// The file of its rows.
    var file: EmbeddedDatabase { get }
}

extension FileHeldSession {
    public func change(_ change: DisconnectChange) throws {
        try file.changeSession(id, change)
    }
}

final class EmbeddedHeldSession: FileHeldSession {
    let db: EmbeddedDatabase
    /// The id of its rows and lock file.
    let id: String
    var file: EmbeddedDatabase { db }

    init(_ db: EmbeddedDatabase) {
        self.db = db
        id = db.newPushKey()
    }

    /// Presence keys are chosen before anything is written, so the removal of the child is
    /// registered before the child is written. The events follow the writes: once `connected`
    /// is reported, the on-connect writes (a presence child) are in the file for every reader.
    /// Nothing can disconnect, so each wait is until something happens.
    func hold(_ steps: [SessionStep], events: (SessionEvent) throws -> Void, started: () throws -> Void,
              keepGoing: (Int) throws -> Bool) throws {
        let (operations, writes) = SessionStep.plan(steps, newKey: db.newPushKey)
        let session = try db.beginSession(operations, id: id)
        do {
            var lines: [SessionEvent] = [.connected(session: session.id)]
            lines += operations.map { .registered($0) }
            do {
                for (p, v) in writes {
                    lines.append(.set(p, try db.set(p, v), queued: nil))
                }
            } catch {
                for l in lines { try events(l) }
                throw error
            }
            for l in lines { try events(l) }
            try started()
            while try keepGoing(-1) {}
        } catch {
            _ = try? db.endSession(session)
            throw error
        }
        try db.endSession(session)
        try events(.ended(queued: nil))
    }
}
