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
        if let offline = try inv.offlineDatabase() {
            let sv = Node.object([Node.Entry(".sv", .object([Node.Entry("increment", delta)]))])
            try OfflineOutput.write(inv, offline, cmd: "increment", kind: .set, path: path, data: sv) { values in
                [[("path", .string(path.description)), ("value", .node(values.first?.value ?? .null))]]
            }
            return
        }
        let value = try inv.database().increment(path, by: delta)
        let out = inv.output(committed: path)
        try out.record([("path", .string(path.description)), ("value", .node(value))])
        try out.flush()
    }
}
