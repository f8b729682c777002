import RTDBCore

enum IncrementCommand {
    static let spec = CommandSpec(
        name: "increment", summary: "atomically add a number to the value at a path",
        usage: "rtdb increment PATH [DELTA]",
        arguments: [("PATH", .path, "database path of the counter"),
                    ("DELTA", .number, "JSON number to add (default 1; may be negative or fractional)")],
        description: "Adds DELTA by the server-value rule: a missing or non-numeric value becomes DELTA; two integers add "
            + "exactly in 64 bits (a double past that). Prints {\"path\":P,\"value\":NEW}.",
        examples: ["rtdb increment /stats/visits", "rtdb increment /stock/apples -3", "rtdb increment /balance 0.25"],
        run: run)

    static func run(_ inv: Invocation) throws {
        let args = try inv.arguments(["PATH", "DELTA"], optional: 1)
        let path = try inv.path(args[0])
        try WriteCheck.writable(path)
        var delta: Node = .int(1)
        if args.count > 1 {
            delta = try JSONReader.parse(args[1])
            switch delta {
            case .int, .double: break
            default: throw RTDBError(.invalidData, "increment: DELTA must be a JSON number, not \(Limits.quote(args[1]))")
            }
        }
        let receipt = try inv.database().commit(.increment(path, by: delta))
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)),
                                                         ("value", .node(receipt.values.first?.value ?? .null))]])
    }
}
