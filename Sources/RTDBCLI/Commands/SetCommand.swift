import RTDBCore

enum SetCommand {
    static let serverTimestamp = Flag("--server-timestamp", "write the server time ({\".sv\":\"timestamp\"})")

    static let spec = CommandSpec(
        name: "set", summary: "replace the value at a path",
        usage: "rtdb set PATH (VALUE | - | --string TEXT | --file FILE | --server-timestamp)",
        arguments: [("PATH", .path, "database path"), ("VALUE", .json, "JSON value; - reads it from stdin; null deletes")],
        options: [ValueInput.string.spec, ValueInput.file.spec, serverTimestamp.spec],
        description: "Replaces PATH with VALUE and prints {\"path\":P,\"value\":V}, V as stored (server values resolved).",
        examples: ["rtdb set /users/alice '{\"name\":\"Alice\",\"age\":30}'", "rtdb set /motd --string 'hello world'",
                   "curl -s https://example.com/data.json | rtdb set /imported -", "rtdb set /lastSeen --server-timestamp"],
        run: run)

    static func run(_ inv: Invocation) throws {
        guard let first = inv.positionals.first else { throw inv.usageError("set: missing PATH") }
        let path = try inv.path(first)
        let source = try ValueInput.source(inv, args: inv.positionals.dropFirst(), serverTimestamp: serverTimestamp)
        try WriteCheck.writable(path)
        let value: Node
        switch try JSONInput.open(source) {
        case .large(let input)?:
            // Past a few megabytes, a database that can stream the input takes it so.
            let db = try inv.database()
            if !path.isPriority, let streaming = inv.capability(StreamingWrites.self, of: db) {
                return try StreamedWrite.run(inv, streaming, path, input, as: .set)
            }
            value = try source.node(from: input.whole())
        case .whole(let bytes)?:
            value = try source.node(from: bytes)
        case nil:
            value = try source.node()
        }
        try WriteCheck.value(value, at: path)
        let receipt = try inv.database().commit(.set(path, value))
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)),
                                                         ("value", .node(receipt.values.first?.value ?? .null))]])
    }
}
