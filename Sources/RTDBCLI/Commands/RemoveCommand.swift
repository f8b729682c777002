import RTDBCore

enum RemoveCommand {
    static let force = Flag("--force", "delete the root / of a database that holds data")

    static let spec = CommandSpec(
        name: "remove", summary: "delete a path and everything below it",
        usage: "rtdb remove PATH [--force]",
        arguments: [("PATH", .path, "database path")],
        options: [force.spec],
        description: "Deletes PATH and prints {\"path\":P,\"value\":null}. Deleting the root / of a database that holds data "
            + "needs --force (an empty PATH is a usage error, never the root). Through --url, a node the server refuses to delete "
            + "at once (too large for its writeSizeLimit) is deleted in chunks, the deepest parts first: not atomically, "
            + "which a terminal is told.",
        examples: ["rtdb remove /sessions/old", "rtdb remove / --force"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        try WriteCheck.writable(path)
        let db = try inv.database()
        try RootWrites.check(inv, path, db, .remove, force: inv.has(force))
        let receipt: WriteReceipt
        do {
            receipt = try db.commit(.remove(path))
        } catch let e as RTDBError where e.code == .tooLarge {
            // Refused for its size: in chunks, as many requests as the server needs.
            guard let chunker = inv.capability(ChunkedWrites.self, of: db) else { throw e }
            let work = try Interruption.saying("the requests sent before were made, so part of \(path) was deleted (not atomic)") {
                try chunker.removeChunked(path, progress: TerminalProgress.forCommand(quiet: inv.quiet))
            }
            Diagnostics.note("\(path) was too large to delete at once: deleted in \(Quantity.of(work.requests, "request")), not atomically")
            receipt = WriteReceipt(values: [(path, .null)])
        }
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)), ("value", .null)]])
    }
}
