import RTDBCore

enum PushCommand {
    static let linesOption = Flag("--lines", "read JSON lines from stdin and push each, in order, in bounded memory (one atomic write on the database file)")
    static let keyOnly = Flag("--key-only", "print a new push ID for PATH without writing anything (Firebase's push().key)")

    static let spec = CommandSpec(
        name: "push", summary: "add a value under a new chronological push ID",
        usage: "rtdb push PATH (VALUE | - | --string TEXT | --file FILE | --lines | --key-only [-r])",
        arguments: [("PATH", .path, "database path of the list"), ("VALUE", .json, "JSON value; - reads it from stdin")],
        options: [ValueInput.string.spec, ValueInput.file.spec, linesOption.spec, keyOnly.spec, Registry.rawOption.spec],
        description: "Adds VALUE under a new 20-character push ID and prints {\"path\":P/K,\"key\":K,\"value\":V}. "
            + "With --lines, every line of stdin is one value (blank lines are skipped); one bad line writes nothing; memory "
            + "stays bounded however many lines. On the database file they are one transaction (the lines to print wait in "
            + "a temporary file until it commits); through --url every line is checked first, then they go in writes of "
            + "about 1 MiB, each atomic, halved when the server refuses one for its size. "
            + "With --key-only nothing is written: it prints {\"path\":P/K,\"key\":K} (with -r, K alone) for a key to "
            + "write later, say in one multi-path update; the key is made as push makes its keys, so it sorts among "
            + "them by the time it was made. With --url it is made with the server's clock (the local clock plus the "
            + "offset of one realtime handshake, as the SDKs correct theirs; the local clock when the server cannot be "
            + "reached); with an offline cache, with the offset the cache measured.",
        examples: ["rtdb push /messages '{\"text\":\"hi\"}'", "jq -c '.[]' items.json | rtdb push /items --lines",
                   "key=$(rtdb push /posts --key-only -r)"],
        run: run)

    static func run(_ inv: Invocation) throws {
        guard let first = inv.positionals.first else { throw inv.usageError("push: missing PATH") }
        let path = try inv.path(first)
        try WriteCheck.writable(path)
        // A push ID stands in for the new key when checking depth and keys.
        let sample = path.appending("-AAAAAAAAAAAAAAAAAAA")
        if inv.has(keyOnly) { return try printKey(inv, path: path, sample: sample) }
        if inv.has(Registry.rawOption) { throw inv.usageError("push: -r goes with --key-only") }
        if inv.has(linesOption) {
            if inv.positionals.count > 1 || inv.has(ValueInput.string) || inv.has(ValueInput.file) {
                throw inv.usageError("push: --lines reads the values from stdin; give no other value")
            }
            return try PushLines.run(inv, path, sample: sample)
        }
        let value = try ValueInput.source(inv, args: inv.positionals.dropFirst()).node()
        try WriteCheck.value(value, at: sample)
        // One value per new child, `path/key`, in order.
        let receipt = try inv.database().commit(.push(path, [value]))
        try inv.output(committed: path).report(receipt, receipt.values.map { child in
            PushLines.record(path, Node.Entry(child.path.last ?? "", child.value))
        })
    }

    /// `--key-only`: a new key for `path`, written nowhere.
    static func printKey(_ inv: Invocation, path: Path, sample: Path) throws {
        if inv.positionals.count > 1 || inv.has(ValueInput.string) || inv.has(ValueInput.file) || inv.has(linesOption) {
            throw inv.usageError("push: --key-only writes nothing; give no value")
        }
        if path.isPriority { throw RTDBError(.invalidPath, "cannot push under \(path): a priority has no children") }
        if sample.depth > Limits.maxDepth { throw RTDBError(.tooDeep, "a child of \(path) would be more than \(Limits.maxDepth) levels deep") }
        let db = try inv.database()
        let source = try inv.capability(PushKeys.self, of: db, missing: RTDBError(.unsupported, "push: this database cannot make push keys"))
        let made = try source.pushKey()
        if let offset = made.serverTimeOffset {
            inv.verbose("push key made with the server's clock: the local clock \(offset < 0 ? "-" : "+") \(Quantity.of(Int(abs(offset)), "ms", "ms"))")
        } else {
            inv.verbose("push key made with the local clock (no server clock offset known)")
        }
        let out = inv.output()
        if inv.has(Registry.rawOption) {
            try out.raw(made.key + "\n")
        } else {
            try out.record([("path", .string(path.appending(made.key).description)), ("key", .string(made.key))])
        }
        try out.flush()
    }
}
