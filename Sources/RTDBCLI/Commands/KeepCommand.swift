import RTDBCore

/// `rtdb keep add|rm|ls`: kept locations and queries of an offline cache, a
/// keepSynced that persists across processes: `sync` refreshes them, a purge never drops them.
enum KeepCommand {
    static let spec = CommandSpec(
        name: "keep", summary: "keep a location or query of an offline cache synced and never purged",
        usage: "rtdb keep add PATH [ORDER] [RANGE] [LIMIT] | rtdb keep rm PATH [ORDER] [RANGE] [LIMIT] | rtdb keep ls",
        arguments: [("ACTION", .text, "add, rm or ls"), ("PATH", .path, "the location to keep")],
        options: Registry.queryOptions,
        exclusions: { QueryOptions.exclusions },
        description: "Works on the offline cache of the --url database (see --persist, --cache). add records PATH (with the "
            + "query the options give, else the whole location) as kept: the LRU purge never removes it or the data under "
            + "it, and 'rtdb sync' reads it again. In auto mode add also reads it from the server once; it prints "
            + "{\"event\":\"kept\",\"path\":P,\"query\":Q,\"complete\":B} (B: the cache now holds it in full). rm forgets it "
            + "(its data stays until purged) and prints {\"event\":\"unkept\",\"path\":P,\"query\":Q,\"found\":B}. ls prints "
            + "{\"path\":P,\"query\":Q} per kept query. Q is the query's REST parameters as an object (null for a whole location). "
            + "Exits 0, also offline; 2 on a usage error.",
        examples: ["rtdb --url \"$RTDB_URL\" --persist keep add /config",
                   "rtdb --url \"$RTDB_URL\" --persist keep add /scores --order-by-value --limit-to-last 10",
                   "rtdb --url \"$RTDB_URL\" --persist keep ls"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let action = try inv.action(Action.self)
        switch action {
        case .add, .rm:
            let args = Array(inv.positionals.dropFirst())
            guard args.count == 1 else {
                throw inv.usageError(args.isEmpty ? "keep \(action.rawValue): missing PATH" : "keep \(action.rawValue): unexpected argument \(Limits.quote(args[1]))")
            }
            let path = try inv.path(args[0])
            let query = try QueryOptions.parse(inv)
            let db = try QueueCommand.cache(inv, command: "keep")
            let out = inv.output()
            if action == .add {
                let (kept, complete) = try db.keep(path, query: query)
                try out.record([("event", .string("kept")), ("path", .string(path.description)), ("query", queryField(kept.params)),
                                ("complete", .bool(complete))])
            } else {
                let (kept, found) = try db.unkeep(path, query: query)
                try out.record([("event", .string("unkept")), ("path", .string(path.description)), ("query", queryField(kept.params)),
                                ("found", .bool(found))])
            }
            try out.flush()
        case .ls:
            if inv.positionals.count > 1 { throw inv.usageError("keep ls: unexpected argument \(Limits.quote(inv.positionals[1]))") }
            if let o = Registry.queryOptions.first(where: { inv.has($0) }) { throw inv.usageError("keep ls takes no \(o.long)") }
            let db = try QueueCommand.cache(inv, command: "keep")
            let out = inv.output()
            for k in try db.keptQueries() {
                try out.record([("path", .string(k.path.description)), ("query", queryField(k.params))])
            }
            try out.flush()
        }
    }

    /// A query's canonical params as the JSON object they are.
    static func queryField(_ params: String) -> Field {
        .node((try? JSONReader.parse(params)) ?? .object([]))
    }

    /// What the first argument asks for, in the order usage errors list them.
    enum Action: String, CaseIterable {
        case add, rm, ls
    }
}
