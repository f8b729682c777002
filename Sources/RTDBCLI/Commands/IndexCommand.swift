import RTDBCore

enum IndexCommand {
    static let spec = CommandSpec(
        name: "index", summary: "add, remove or list the indexes that order-by-child and order-by-value queries use",
        usage: "rtdb index add PATH CHILD | rtdb index remove PATH CHILD | rtdb index list",
        arguments: [("ACTION", .text, "add, remove or list"),
                    ("PATH", .path, "the location whose children are indexed; a $name segment matches any key, as in .indexOn rules (/rooms/$room/messages)"),
                    ("CHILD", .child, "the child path the children are ordered by (score, address/city), or .value for their own value")],
        description: "Maintains persistent indexes of the embedded database. An index of PATH by CHILD keeps the children "
            + "of every location matching PATH sorted by the value at CHILD (by their own value for .value), and every "
            + "write keeps it exact in the same transaction. query and rtdb serve's orderBy then "
            + "read only the children in the window (a limit, or --start-at/--end-at bounds) instead of the whole "
            + "location, and watch with a limit holds and re-reads only its window; results and events are the "
            + "same with or without an index. Key order (the default) and priority order "
            + "need none. add builds the index from the data already stored and prints {\"path\":P,\"child\":C,\"added\":B} "
            + "(B false: it existed); remove prints {\"path\":P,\"child\":C,\"removed\":B} (B false: there was none); "
            + "list prints one {\"path\":P,\"child\":C} line per index.",
        examples: ["rtdb index add /users age", "rtdb index add '/rooms/$room/messages' ts",
                   "rtdb index add /scores .value", "rtdb index list", "rtdb index remove /users age"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let action = try inv.action(Action.self)
        let out = inv.output()
        switch action {
        case .list:
            _ = try inv.arguments(["ACTION"])
            for d in try indexable(inv, reading: true).indexes() {
                try out.record([("path", .string(d.location)), ("child", .string(d.childText))])
            }
        case .add, .remove:
            let args = try inv.arguments(["ACTION", "PATH", "CHILD"])
            try inv.nonEmptyPath(args[1])
            let d = try IndexDefinition(location: args[1], child: args[2])
            let db = try indexable(inv, reading: false)
            let done = action == .add
                ? try Interruption.saying("the index was not added") { try db.addIndex(d, progress: TerminalProgress.forCommand(quiet: inv.quiet)) }
                : try db.removeIndex(d)
            try out.record([("path", .string(d.location)), ("child", .string(d.childText)),
                            (action == .add ? "added" : "removed", .bool(done))])
        }
        try out.flush()
    }

    static func indexable(_ inv: Invocation, reading: Bool) throws -> Indexable {
        try inv.capability(Indexable.self, of: try inv.database(reading: reading, cache: .never),
                           missing: RTDBError(.unsupported, "indexes belong to the embedded database; a remote database takes them from its rules (.indexOn)"))
    }

    /// What the first argument asks for, in the order usage errors list them.
    enum Action: String, CaseIterable {
        case add, remove, list
    }
}
