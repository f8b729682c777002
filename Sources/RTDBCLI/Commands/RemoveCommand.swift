import RTDBCore

enum RemoveCommand {
    static let spec = CommandSpec(
        name: "remove", summary: "delete a path and everything below it",
        usage: "rtdb remove PATH",
        arguments: [("PATH", .path, "database path")],
        description: "Deletes PATH and prints {\"path\":P,\"value\":null}. Through --url, a node the server refuses to delete "
            + "at once (too large for its writeSizeLimit) is deleted in chunks, the deepest parts first: not atomically, "
            + "which a terminal is told.",
        examples: ["rtdb remove /sessions/old"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        try WriteCheck.writable(path)
        let db = try inv.database()
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
