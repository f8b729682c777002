import RTDBCore

/// `rtdb cache info|ls|prune|clear`: the state and upkeep of an offline cache. Never contacts the server.
enum CacheCommand {
    static let vacuum = Flag("--vacuum", "prune: also give the freed space back to the file system")
    static let all = Flag("--all", "clear: also drop the queued writes")

    static let spec = CommandSpec(
        name: "cache", summary: "show, list, purge or clear an offline cache",
        usage: "rtdb cache info | rtdb cache ls | rtdb cache prune [--vacuum] | rtdb cache clear [--all]",
        arguments: [("ACTION", .text, "info, ls, prune or clear")],
        options: [vacuum.spec, all.spec],
        description: "Works on the offline cache of the --url database (see --persist, --cache). info prints "
            + "{\"file\":F,\"url\":U,\"bytes\":B,\"limit\":L,\"queries\":N,\"complete\":C,\"kept\":K,\"pending\":P,"
            + "\"rejected\":R,\"serverTimeOffset\":MS} (B estimates the cached data: the length of each stored path and value; "
            + "L is --cache-size). ls prints one {\"path\":P,\"query\":Q,\"complete\":B,\"active\":B,\"kept\":B,\"lastUse\":MS,"
            + "\"keys\":N} line per tracked query. prune runs the least-recently-used purge now: while B is above L (or more "
            + "than 1000 queries could go), the oldest fifth of the queries that are neither kept nor watched goes, with the "
            + "data under them that no other tracked or kept query needs; one {\"event\":\"pruned\",\"path\":P,\"query\":Q} "
            + "line per query, then {\"event\":\"prune_done\",\"queries\":N,\"bytes_before\":B0,\"bytes_after\":B1,\"limit\":L} "
            + "(also when nothing went: N is 0). The same purge runs by itself after 1000 stores into the cache, or a store of 1 MiB. clear "
            + "empties the cached data and forgets every tracked query, printing {\"event\":\"cleared\",\"queries\":N}; "
            + "kept queries stay kept; --all also drops the queued writes ({\"event\":\"dropped\",\"id\":N,\"path\":P} each). "
            + "Queued writes are never purged. Exits 0, also offline; 2 on a usage error.",
        examples: ["rtdb --url \"$RTDB_URL\" --persist cache info",
                   "rtdb --url \"$RTDB_URL\" --persist --cache-size 2097152 cache prune --vacuum",
                   "rtdb --url \"$RTDB_URL\" --persist cache clear"],
        run: run)

    static func run(_ inv: Invocation) throws {
        if inv.positionals.count > 1 {
            throw inv.usageError("cache \(inv.positionals[0]): unexpected argument \(Limits.quote(inv.positionals[1]))")
        }
        let action = try inv.action(Action.self)
        if inv.has(vacuum) && action != .prune { throw inv.usageError("--vacuum goes with cache prune") }
        if inv.has(all) && action != .clear { throw inv.usageError("--all goes with cache clear") }
        let db = try QueueCommand.cache(inv, command: "cache")
        let out = inv.output()
        switch action {
        case .info:
            let i = try db.cacheInfo()
            try out.record([("file", .string(i.file)), ("url", .string(i.url)), ("bytes", .int(i.bytes)),
                            ("limit", .int(i.limit)), ("queries", .int(i.queries)), ("complete", .int(i.complete)),
                            ("kept", .int(i.kept)), ("pending", .int(i.pending)), ("rejected", .int(i.rejected)),
                            ("serverTimeOffset", i.serverTimeOffset.map { .int(Int($0)) } ?? .null)])
        case .ls:
            for q in try db.trackedQueries() {
                try out.record([("path", .string(q.query.path.description)), ("query", KeepCommand.queryField(q.query.params)),
                                ("complete", .bool(q.complete)), ("active", .bool(q.active)),
                                ("kept", .bool(q.kept)), ("lastUse", .int(Int(q.lastUseMillis))), ("keys", .int(q.keys))])
            }
        case .prune:
            let before = try db.cacheInfo()
            let pruned = try db.prune(vacuum: inv.has(vacuum))
            for p in pruned {
                try out.record([("event", .string("pruned")), ("path", .string(p.path.description)), ("query", KeepCommand.queryField(p.params))])
            }
            // What went, also when nothing did (the cache was within its limit).
            let after = try db.cacheInfo()
            try out.record([("event", .string("prune_done")), ("queries", .int(pruned.count)), ("bytes_before", .int(before.bytes)),
                            ("bytes_after", .int(after.bytes)), ("limit", .int(after.limit))])
        case .clear:
            let cleared = try db.clear(all: inv.has(all))
            for w in cleared.dropped { try out.record(QueueCommand.dropped(w)) }
            try out.record([("event", .string("cleared")), ("queries", .int(cleared.queries))])
        }
        try out.flush()
    }

    /// What the first argument asks for, in the order usage errors list them.
    enum Action: String, CaseIterable {
        case info, ls, prune, clear
    }
}
