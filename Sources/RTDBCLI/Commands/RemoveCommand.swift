import RTDBCore

enum RemoveCommand {
    static let spec = CommandSpec(
        name: "remove", summary: "delete a path and everything below it",
        usage: "rtdb remove PATH",
        arguments: [("PATH", .path, "database path")],
        description: "Deletes PATH and prints {\"path\":P,\"value\":null}.",
        examples: ["rtdb remove /sessions/old"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        try WriteCheck.writable(path)
        let receipt = try inv.database().commit(.remove(path))
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)), ("value", .null)]])
    }
}
