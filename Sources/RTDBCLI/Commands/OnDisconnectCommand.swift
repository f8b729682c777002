import RTDBCore

/// `rtdb on-disconnect set|update|remove|cancel`: changes the operations of a live session, as
/// the SDKs' `onDisconnect()` calls do at any time. The session is named by `--session ID` or
/// `$RTDB_SESSION` (which `rtdb session` gives its command). A session whose holder listens
/// for changes (`SessionControl`: a remote database's, a `--client-side` one) is asked; one on
/// the embedded file is changed through the file's rows (`SessionStore`), by this process.
enum OnDisconnectCommand {
    static let session = Valued<String>("--session", value: "ID", kind: .text, environment: "RTDB_SESSION",
        "the session to change (env RTDB_SESSION, which rtdb session gives its command)") { text, source in
        guard SessionControl.validID(text) else {
            throw RTDBError(.usage, "\(source) needs a session id (the \"session\" of its connected line), not \(Limits.quote(text))")
        }
        return text
    }

    /// What the first argument asks for.
    enum Action: String, CaseIterable {
        case set, update, remove, cancel
    }

    static let spec = CommandSpec(
        name: "on-disconnect", summary: "change the on-disconnect operations of a live session",
        usage: "rtdb on-disconnect (set PATH VALUE | update PATH VALUE | remove PATH | cancel [PATH]) [--session ID]",
        arguments: [("ACTION", .text, "set, update, remove or cancel"), ("PATH", .path, "database path"),
                    ("VALUE", .json, "JSON value (set), or a JSON object of relative paths (update); - reads stdin")],
        options: [session.spec, ValueInput.string.spec, ValueInput.file.spec, SetCommand.serverTimestamp.spec],
        description: "Registers or cancels an operation of the live session that --session ID or $RTDB_SESSION names "
            + "(rtdb session gives RTDB_SESSION to its command; the id is the \"session\" of its connected line), from "
            + "that command or any other process of the same user, as Firebase's onDisconnect().set(), update(), "
            + "remove() and cancel() do while a connection lives: a later operation at a path replaces earlier ones at "
            + "or below it, and cancel drops those at or below PATH (without PATH: all of them, the session's own "
            + "included). Prints {\"session\":S,\"op\":O,\"path\":P} (with \"value\" for set and update) once the change "
            + "is registered: on the embedded file in the session's rows, with --url once the server acknowledged it. "
            + "A session held with --url (or --client-side) is asked over its control socket, whatever this command "
            + "line's target; one on the embedded file is found in the database this command line names, so give the "
            + "same --db (or RTDB_DB) as the session. Refusals: no session given, 2; no live session of that id (never "
            + "started, ended, or its process gone), not_found, 3; the server's rules, permission_denied, 4; a remote "
            + "session between connections (unavailable) or not answering in time (timeout), 6. Nothing is changed then.",
        examples: ["rtdb on-disconnect set /jobs/j7/state '\"abandoned\"'",
                   "rtdb on-disconnect cancel /users/joe/connections",
                   "rtdb on-disconnect set /users/joe/lastOnline --server-timestamp --session \"$ID\"",
                   "rtdb on-disconnect cancel"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let action = try inv.action(Action.self)
        let args = inv.positionals.dropFirst()
        if action != .set {
            if inv.has(SetCommand.serverTimestamp) { throw inv.usageError("--server-timestamp goes with on-disconnect set") }
            if inv.has(ValueInput.string) { throw inv.usageError("--string goes with on-disconnect set") }
        }
        let change: DisconnectChange
        switch action {
        case .set, .update:
            guard let text = args.first else { throw inv.usageError("on-disconnect \(action.rawValue): missing PATH") }
            let path = try inv.path(text)
            try WriteCheck.writable(path)
            if action == .set {
                let source = try ValueInput.source(inv, args: args.dropFirst(), serverTimestamp: SetCommand.serverTimestamp)
                let value = try source.node()
                try WriteCheck.value(value, at: path)
                change = .register(.set(path, value))
            } else {
                let source = try ValueInput.source(inv, args: args.dropFirst(), string: nil)
                let bytes = try source.jsonBytes() ?? []
                guard let raw = try bytes.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) }) else {
                    throw RTDBError(.invalidData, "on-disconnect update needs a JSON object of relative paths")
                }
                change = .register(.update(path, try WriteCheck.update(raw, at: path)))
            }
        case .remove:
            guard let text = args.first else { throw inv.usageError("on-disconnect remove: missing PATH") }
            if args.count > 1 { throw inv.usageError("on-disconnect remove: unexpected argument \(Limits.quote(args[args.startIndex + 1]))") }
            if inv.has(ValueInput.file) { throw inv.usageError("--file goes with on-disconnect set or update") }
            let path = try inv.path(text)
            try WriteCheck.writable(path)
            change = .register(.remove(path))
        case .cancel:
            if args.count > 1 { throw inv.usageError("on-disconnect cancel: unexpected argument \(Limits.quote(args[args.startIndex + 1]))") }
            if inv.has(ValueInput.file) { throw inv.usageError("--file goes with on-disconnect set or update") }
            change = .cancel(try args.first.map { try inv.path($0) } ?? .root)
        }
        guard let id = try inv.setting(session) else {
            throw inv.usageError("on-disconnect: no session: give --session ID, or run it from the command of rtdb session (RTDB_SESSION)")
        }
        let timeout = try inv.timeoutSeconds()
        if try !SessionControl.ask(id, change, timeoutMillis: timeout > 0 ? Int(min(timeout, 86_400) * 1000) : -1) {
            // No process listens for it: a session on the embedded file, changed in its rows.
            let db = try inv.database(cache: .never)
            let store = try inv.capability(SessionStore.self, of: db, missing: RTDBError(.notFound,
                "no live session \(Limits.quote(id)) held by a process of this user on this machine; nothing was changed"))
            try store.changeSession(id, change)
        }
        var line: [(String, Field)] = [("session", .string(id)), ("op", .string(change.kind)), ("path", .string(change.path.description))]
        switch change {
        case .register(.set(_, let v)): line.append(("value", .node(v)))
        case .register(.update(_, let entries)): line.append(("value", .node(UpdateCommand.shown(entries))))
        default: break
        }
        let out = inv.output()
        try out.record(line)
        try out.flush()
    }
}
