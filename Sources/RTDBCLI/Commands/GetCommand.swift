import RTDBCore

enum GetCommand {
    static let shallow = Flag("--shallow", "print an object as {\"child\":true,…} instead of its whole value")
    static let export = Flag("--export", "include priorities, as Firebase's format=export: {\".value\":v,\".priority\":p} for a leaf, a \".priority\" key in an object")
    static let exists = Flag("--exists", "print true or false: whether anything is at PATH (exit status 0, or 11 when nothing is)")

    /// `--exists` found nothing: a status of its own, so a script tells "not there" from a
    /// failure (1 is `internal` and `io_error`).
    static let nothingThere: Int32 = 11

    static let spec = CommandSpec(
        name: "get", summary: "print the value at a path",
        usage: "rtdb get PATH [--shallow | --export | --exists] [--raw]",
        arguments: [("PATH", .path, "database path; / is the root; PATH/.priority is its priority")],
        options: [shallow.spec, export.spec, exists.spec, Registry.rawOption.spec, Registry.partialOption.spec],
        exclusions: { [.pair(shallow, export), .pair(Registry.rawOption, export),
                       .first(exists, excludes: [shallow, export, Registry.rawOption, Registry.partialOption])] },
        description: "Prints the value at PATH as one JSON line, or null when nothing is there. Priorities are left out "
            + "unless --export is given; its output written back with set restores the same data and priorities. "
            + "With --raw, a string prints as its text without quotes (as jq -r prints it). On a terminal, stderr says "
            + "when the database file does not exist yet. /.info holds the connection state, not data: "
            + "/.info/connected and /.info/serverTimeOffset print true and 0 on the database file; with --url they come "
            + "from a realtime (WebSocket) handshake: true and the server's clock minus the local clock in ms, or false "
            + "and null when the server cannot be reached. --exists prints true when anything is at PATH (also the string "
            + "\"null\") and exits 0, or prints false and exits 11 when nothing is, reading no more than a shallow read.",
        examples: ["rtdb get /users/alice", "rtdb get / --shallow", "rtdb get / --export > backup.json",
                   "rtdb get /scores/alice/.priority", "rtdb get /users/alice --exists", "rtdb get /.info/connected --url \"$RTDB_URL\"", "name=$(rtdb get /users/alice/name -r)"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        let export = inv.has(GetCommand.export)
        let db = try inv.database(reading: !path.isInfo)
        let out = inv.output()
        if inv.has(exists) {
            let found = path.isInfo ? !(try InfoTree.value(path, inv.capability(ConnectionInfo.self, of: db))).isNull
                : try Presence.holdsData(db, path) ?? false
            try out.value(.bool(found))
            try out.flush()
            if !found { throw ExitStatus(nothingThere) }
            return
        }
        if path.isInfo {
            // Client state, not data: answered without reading the database.
            let info = try InfoTree.value(path, inv.capability(ConnectionInfo.self, of: db))
            let value = inv.has(shallow) ? info.shallowView : info
            if inv.has(Registry.rawOption) { try out.rawValue(value) } else { try out.value(value, export: export) }
            try out.flush()
            return
        }
        let form: ReadForm = inv.has(shallow) ? .shallow : export ? .export : .value
        if form != .shallow, !inv.has(Registry.rawOption), let streaming = inv.capability(StreamingReads.self, of: db) {
            // Written as it is read, in bounded memory, whatever the size.
            try Interruption.saying("what was printed is not the whole value") {
                try streaming.streamJSON(path, export: export, pretty: out.pretty,
                                         progress: TerminalProgress.forCommand(quiet: inv.quiet, writesAsItGoes: true)) { chunk in
                    if out.quiet { return }
                    try out.rawBytes(chunk)
                    try out.flushIfLarge()
                }
            }
            if !out.quiet { try out.rawBytes([0x0A]) }
            try out.flush()
            return
        }
        let r = try db.read(path, as: form, partial: inv.has(Registry.partialOption))
        if inv.has(Registry.rawOption) { try out.rawValue(r.value) } else { try out.value(r.value, export: export) }
        try out.flush()
        // Only an offline cache answers in part, and only with --partial.
        if !r.complete { throw ReadResult<Node>.incomplete(path) }
    }
}
