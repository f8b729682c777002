import RTDBCore

enum QueueCommand {
    static let rejected = Flag("--rejected", "list the writes the server rejected (the last 100) instead")

    static let spec = CommandSpec(
        name: "queue", summary: "list, drop or clear the writes an offline cache has not sent yet",
        usage: "rtdb queue [--rejected] | rtdb queue drop ID... | rtdb queue clear",
        arguments: [("ACTION", .text, "drop or clear (none: list the queue)"), ("ID", .number, "id of a queued write")],
        options: [rejected.spec],
        description: "Works on the offline cache of the --url database (see --persist, --cache). Without ACTION, prints one "
            + "{\"id\":N,\"cmd\":C,\"kind\":K,\"path\":P,\"data\":D,\"state\":S,\"attempts\":A,\"created\":MS,\"principal\":W} line per "
            + "queued write, in the order they will be sent (state sending: sent, answer not seen; it is sent again). "
            + "--rejected prints the rejected writes with \"error\" (the code), \"message\" and \"at\", and marks them seen: "
            + "sync exits 4 (rejected) while the log holds rejections not yet listed (other than a write's own error). drop removes the "
            + "named writes unsent and clear removes all, each printing {\"event\":\"dropped\",\"id\":N,\"path\":P}; "
            + "an id that is not queued is not_found (3) and nothing is dropped. Never contacts the server.",
        examples: ["rtdb --url \"$RTDB_URL\" --persist queue", "rtdb --url \"$RTDB_URL\" --persist queue drop 7",
                   "rtdb --url \"$RTDB_URL\" --persist queue --rejected"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let db = try cache(inv, command: "queue")
        let out = inv.output()
        let action = inv.positionals.first
        switch action {
        case nil:
            let rejected = inv.has(QueueCommand.rejected)
            if rejected {
                let log = try db.rejectedWrites()
                for r in log {
                    try out.record(fields(r.write, state: "rejected") + [("error", .string(r.error.code.rawValue)), ("message", .string(r.error.message)),
                                                                        ("at", .int(Int(r.atMillis)))])
                }
                try out.flush()
                // Shown: `sync` no longer fails for these (it does for any rejected later).
                try db.markRejectionsSeen(log.map(\.seq))
            } else {
                for w in try db.queuedWrites() { try out.record(fields(w, state: w.state.rawValue)) }
            }
        case "drop":
            if inv.has(rejected) { throw inv.usageError("queue drop: --rejected lists the log; it drops nothing") }
            let texts = Array(inv.positionals.dropFirst())
            if texts.isEmpty { throw inv.usageError("queue drop: missing ID") }
            var ids: [Int64] = []
            for t in texts {
                guard let n = Int64(t), n > 0 else { throw inv.usageError("queue drop: ID must be a positive whole number, not \(Limits.quote(t))") }
                ids.append(n)
            }
            // Under the flush lock, so that nothing is dropped from under a sender.
            try db.withQueueLocked {
                // All named ids must be queued, or nothing is dropped.
                for id in ids where try db.queuedWrite(id: id) == nil {
                    throw RTDBError(.notFound, "queue drop: no queued write has id \(id); nothing was dropped")
                }
                for id in ids {
                    if let w = try db.dropWrite(id: id) { try out.record(dropped(w)) }
                }
            }
        case "clear":
            if inv.positionals.count > 1 { throw inv.usageError("queue clear: unexpected argument \(Limits.quote(inv.positionals[1]))") }
            if inv.has(rejected) { throw inv.usageError("queue clear: --rejected lists the log; it clears nothing") }
            try db.withQueueLocked {
                for w in try db.clearWrites() { try out.record(dropped(w)) }
            }
        case let other?:
            throw inv.usageError("queue: unknown action \(Limits.quote(other)); use drop or clear, or none to list")
        }
        try out.flush()
    }

    static func fields(_ w: QueuedWrite, state: String) -> [(String, Field)] {
        [("id", .int(Int(w.id))), ("cmd", .string(w.cmd)), ("kind", .string(w.kind.rawValue)), ("path", .string(w.path.description)),
         ("data", .node(w.data)), ("state", .string(state)), ("attempts", .int(w.attempts)), ("created", .int(Int(w.createdMillis))),
         ("principal", .string(w.principal))]
    }

    static func dropped(_ w: QueuedWrite) -> [(String, Field)] {
        [("event", .string("dropped")), ("id", .int(Int(w.id))), ("path", .string(w.path.description))]
    }

    /// The offline cache the command line names, else a usage error.
    static func cache(_ inv: Invocation, command: String) throws -> CacheControl {
        try inv.capability(CacheControl.self, of: try inv.cachedDatabase(patient: command == "sync"),
                           missing: inv.usageError("\(command) works on an offline cache: give --url URL with --persist (or --cache FILE)"))
    }
}
