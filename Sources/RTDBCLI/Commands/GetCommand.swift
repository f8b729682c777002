import RTDBCore

enum GetCommand {
    static let spec = CommandSpec(
        name: "get", summary: "print the value at a path",
        usage: "rtdb get PATH [--shallow]",
        arguments: [("PATH", .path, "database path; / is the root")],
        options: [OptionSpec("--shallow", "print an object as {\"child\":true,…} instead of its whole value"), Registry.rawOption],
        description: "Prints the value at PATH as one JSON line, or null when nothing is there. With --raw, a string prints "
            + "as its text without quotes (as jq -r prints it). On a terminal, stderr says when the database file does not exist yet.",
        examples: ["rtdb get /users/alice", "rtdb get / --shallow", "name=$(rtdb get /users/alice/name -r)"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        let db = try inv.database(reading: true)
        let value = inv.has("--shallow") ? try db.shallow(path) : try db.get(path)
        let out = inv.output()
        if inv.has("--raw") { try out.rawValue(value) } else { try out.value(value) }
        try out.flush()
    }
}
