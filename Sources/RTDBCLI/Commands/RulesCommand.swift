import RTDBCore
import RTDBRules

enum RulesCommand {
    static let spec = CommandSpec(
        name: "rules", summary: "check a security rules file",
        usage: "rtdb rules check FILE",
        arguments: [("check", .text, "the action: check (the only one)"),
                    ("FILE", .file, "a rules file in Firebase's database.rules.json format (- reads stdin)")],
        description: "Checks a security rules file offline, as rtdb serve --rules and PUT /.settings/rules.json do: "
            + "comments are allowed, every expression is parsed and type-checked. Prints {\"ok\":true} when the "
            + "file is valid. Otherwise the error (invalid_data, status 3) lists each problem on a line of its own as "
            + "FILE:LINE:COLUMN: message, where LINE and COLUMN (from 1) point at the offending token in the file.",
        examples: ["rtdb rules check database.rules.json    # prints {\"ok\":true}, or each problem as FILE:LINE:COLUMN: message"],
        run: run)

    static func run(_ inv: Invocation) throws {
        if inv.positionals.isEmpty { throw inv.usageError("rules: missing the action; use: rtdb rules check FILE") }
        let args = try inv.arguments(["ACTION", "FILE"])
        guard args[0] == "check" else { throw inv.usageError("rules: unknown action \(Limits.quote(args[0])); use: rtdb rules check FILE") }
        _ = try load(args[1])
        let out = inv.output()
        try out.raw("{\"ok\":true}\n")
        try out.flush()
    }

    /// Reads and loads a rules file; `invalid_data` lists every problem as `FILE:L:C: message`.
    static func load(_ file: String) throws -> RuleSet {
        let bytes = file == "-" ? try readAll(fd: 0, limit: 16 << 20, what: "stdin") : try readFile(file, limit: 16 << 20)
        let name = file == "-" ? "stdin" : file
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw RTDBError(.invalidData, "\(name): the rules file is not UTF-8 text")
        }
        do {
            return try RuleSet(text)
        } catch {
            let lines = error.problems.map { "\(name):\($0.description)" }
            throw RTDBError(.invalidData, "invalid rules:\n" + lines.joined(separator: "\n"))
        }
    }
}
