import RTDBCore

/// Whether a path holds data, read as cheaply as a target allows: one look-up in the database
/// file, else a shallow read, which gives the children of an object as `true` rather than
/// their values. The one place `get --exists`
/// and the root's guard (`RootWrites`) decide it.
enum Presence {
    /// True when something is at `path` (the string "null" is something; nothing is null).
    /// With `partial`, an offline cache that knows only part of the value answers from what it
    /// knows: nil when that is nothing, since it cannot tell.
    static func holdsData(_ db: Database, _ path: Path, partial: Bool = false) throws -> Bool? {
        // (The children of a large object are not even listed.)
        if let presence = db.capability(PresenceReads.self) { return try presence.holdsData(path) }
        let r = try db.read(path, as: .shallow, partial: partial)
        if !r.value.isNull { return true }
        return r.complete ? false : nil
    }
}

/// `set /` and `remove /` replace everything a database holds, the mistake a stray slash or an
/// unset variable makes. On a database that holds data they need `--force`, as firebase-tools
/// asks before it replaces or deletes everything; on an empty one they run as they are. The
/// root is read (shallow) before anything is written, and a refusal is a usage error that
/// changes nothing.
enum RootWrites {
    /// What the command does to the root, for the message.
    enum Action: String {
        case replace = "replaces"
        case remove = "deletes"
    }

    /// Throws the usage error unless `path` is not the root, `force` is given, or the root is
    /// known to be empty.
    static func check(_ inv: Invocation, _ path: Path, _ db: Database, _ action: Action, force: Bool) throws {
        guard path.isRoot, !force else { return }
        let holds: Bool?
        do {
            holds = try Presence.holdsData(db, .root, partial: true)
        } catch let e as RTDBError where e.code == .permissionDenied {
            // Rules that let a credential write the root need not let it read it.
            holds = nil
        }
        switch holds {
        case false?:
            return
        case true?:
            throw inv.usageError("\(inv.command.name) / \(action.rawValue) everything the database holds: add --force "
                                 + "if that is what you mean; nothing was written")
        case nil:
            throw inv.usageError("\(inv.command.name) / \(action.rawValue) everything the database holds, and whether it holds "
                                 + "anything cannot be read: add --force if that is what you mean; nothing was written")
        }
    }
}
