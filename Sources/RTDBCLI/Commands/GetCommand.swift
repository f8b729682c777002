import RTDBCore

enum GetCommand {
    static let spec = CommandSpec(
        name: "get", summary: "print the value at a path",
        usage: "rtdb get PATH [--shallow | --export]",
        arguments: [("PATH", .path, "database path; / is the root; PATH/.priority is its priority")],
        options: [OptionSpec("--shallow", "print an object as {\"child\":true,…} instead of its whole value"),
                  OptionSpec("--export", "include priorities, as Firebase's format=export: {\".value\":v,\".priority\":p} for a leaf, a \".priority\" key in an object")],
        description: "Prints the value at PATH as one JSON line, or null when nothing is there. Priorities are left out "
            + "unless --export is given; its output written back with set restores the same data and priorities.",
        examples: ["rtdb get /users/alice", "rtdb get / --shallow", "rtdb get / --export > backup.json",
                   "rtdb get /scores/alice/.priority"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let path = try inv.path(inv.arguments(["PATH"])[0])
        if inv.has("--shallow") && inv.has("--export") { throw inv.usageError("--shallow and --export exclude each other") }
        let db = try inv.database()
        let export = inv.has("--export")
        let value = inv.has("--shallow") ? try db.shallow(path) : export ? try db.export(path) : try db.get(path)
        let out = inv.output()
        try out.value(value, export: export)
        try out.flush()
    }
}
