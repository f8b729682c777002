import RTDBCore

enum GetCommand {
    static let spec = CommandSpec(
        name: "get", summary: "print the value at a path",
        usage: "rtdb get PATH [--shallow]",
        arguments: [("PATH", .path, "database path; / is the root")],
        options: [OptionSpec("--shallow", "print an object as {\"child\":true,…} instead of its whole value")],
        description: "Prints the value at PATH as one JSON line, or null when nothing is there.",
        examples: ["rtdb get /users/alice", "rtdb get / --shallow"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        let db = try inv.database()
        let value = inv.has("--shallow") ? try db.shallow(path) : try db.get(path)
        let out = inv.output()
        try out.value(value)
        try out.flush()
    }
}
