import RTDBCore

/// Hidden helper of `sync --follow` (KeptStreams.swift): `rtdb __kept-stream PATH PARAMS`
/// streams one kept location or query (PARAMS: its canonical query parameters, as `keep ls`
/// stores them, `{}` for a whole location) into the offline cache of the --url database until
/// the reader of its stdout goes away. It prints nothing and sends no queued write: `sync`
/// sends them, so that it can report each.
enum KeptStreamCommand {
    static let spec = CommandSpec(
        name: "__kept-stream", summary: "one kept stream of sync --follow",
        usage: "rtdb __kept-stream PATH PARAMS",
        description: "Streams a kept location or query into the offline cache until stdout's reader goes away.",
        examples: ["rtdb --url \"$RTDB_URL\" --persist __kept-stream /scores '{}'"],
        hidden: true,
        run: run)

    static func run(_ inv: Invocation) throws {
        guard inv.positionals.count == 2 else { throw inv.usageError("__kept-stream: needs PATH and PARAMS") }
        let path = try inv.path(inv.positionals[0])
        let db = try inv.capability(CacheControl.self, of: try inv.database(watching: true),
                                    missing: inv.usageError("__kept-stream works on an offline cache"))
        try db.keepFresh(CachedQuery(path: path, params: inv.positionals[1]), idle: WatchCommand.stdoutIsOpen)
    }
}
