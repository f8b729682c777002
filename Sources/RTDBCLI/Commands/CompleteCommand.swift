import RTDBCore

/// Hidden helper for the shell completions: `rtdb __complete paths PREFIX` prints the database
/// paths that extend PREFIX by one key, one per line, read from the database the command line
/// names (--db, RTDB_DB or the default). Never fails loudly: completion must stay quiet.
enum CompleteCommand {
    static let spec = CommandSpec(
        name: "__complete", summary: "completion helper for shell scripts",
        usage: "rtdb __complete paths PREFIX",
        description: "Prints candidate database paths for PREFIX, one per line.",
        examples: ["rtdb __complete paths /us"],
        hidden: true,
        run: run)

    static func run(_ inv: Invocation) throws {
        guard inv.positionals.first == "paths" else { return }
        let prefix = inv.positionals.count > 1 ? inv.positionals[1] : ""
        // Split into the parent path and the partial key being typed.
        let slash = prefix.lastIndex(of: "/")
        let parentText = slash.map { String(prefix[..<$0]) } ?? ""
        let partial = slash.map { String(prefix[prefix.index(after: $0)...]) } ?? prefix
        guard let parent = try? Path(parentText) else { return }
        guard let db = try? inv.database(cache: .never), let shallow = try? db.shallow(parent) else { return }
        let base = parent.isRoot ? "/" : parent.description + "/"
        var text = ""
        for e in shallow.children where e.key.utf8.starts(with: partial.utf8) {
            text += base + e.key + "\n"
        }
        try CLI.printText(text)
    }
}
