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
        if let offline = try inv.offlineDatabase() {
            try OfflineOutput.write(inv, offline, cmd: "remove", kind: .set, path: path, data: .null) { _ in
                [[("path", .string(path.description)), ("value", .null)]]
            }
            return
        }
        _ = try inv.database().set(path, .null)
        let out = inv.output(committed: path)
        try out.record([("path", .string(path.description)), ("value", .null)])
        try out.flush()
    }
}
