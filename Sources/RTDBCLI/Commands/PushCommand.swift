import RTDBCore

enum PushCommand {
    static let linesOption = Flag("--lines", "read JSON lines from stdin and push each, in order, as one atomic write")

    static let spec = CommandSpec(
        name: "push", summary: "add a value under a new chronological push ID",
        usage: "rtdb push PATH (VALUE | - | --string TEXT | --file FILE | --lines)",
        arguments: [("PATH", .path, "database path of the list"), ("VALUE", .json, "JSON value; - reads it from stdin")],
        options: [ValueInput.string.spec, ValueInput.file.spec, linesOption.spec],
        description: "Adds VALUE under a new 20-character push ID and prints {\"path\":P/K,\"key\":K,\"value\":V}. "
            + "With --lines, every line of stdin is one value (blank lines are skipped); one bad line writes nothing.",
        examples: ["rtdb push /messages '{\"text\":\"hi\"}'", "jq -c '.[]' items.json | rtdb push /items --lines"],
        run: run)

    static func run(_ inv: Invocation) throws {
        guard let first = inv.positionals.first else { throw inv.usageError("push: missing PATH") }
        let path = try inv.path(first)
        try WriteCheck.writable(path)
        // A push ID stands in for the new key when checking depth and keys.
        let sample = path.appending("-AAAAAAAAAAAAAAAAAAA")
        var values: [Node] = []
        if inv.has(linesOption) {
            if inv.positionals.count > 1 || inv.has(ValueInput.string) || inv.has(ValueInput.file) {
                throw inv.usageError("push: --lines reads the values from stdin; give no other value")
            }
            let bytes = try readAll(fd: 0, limit: Limits.maxWriteBytes, what: "stdin")
            let progress = TerminalProgress.forCommand(quiet: inv.quiet)
            progress.begin("push", total: Int64(bytes.count), unit: .bytes)
            defer { progress.end() }
            values = try lines(bytes, at: sample) { progress.update(done: Int64($0)) }
        } else {
            let value = try ValueInput.source(inv, args: inv.positionals.dropFirst()).node()
            try WriteCheck.value(value, at: sample)
            values = [value]
        }
        // One value per new child, `path/key`, in order.
        let receipt = try inv.database().commit(.push(path, values))
        try inv.output(committed: path).report(receipt, receipt.values.map { child in
            [("path", .string(child.path.description)), ("key", .string(child.path.last ?? "")), ("value", .node(child.value))]
        })
    }

    /// Parses and checks every line before anything is written.
    /// `read` is told how many bytes have been read, now and then.
    static func lines(_ bytes: [UInt8], at sample: Path, read: (Int) -> Void = { _ in }) throws -> [Node] {
        var values: [Node] = []
        try bytes.withUnsafeBufferPointer { all in
            var start = 0
            var lineNo = 0
            while start <= all.count {
                var end = start
                while end < all.count && all[end] != 0x0A { end += 1 }
                lineNo += 1
                if lineNo & 1023 == 0 { read(start) }
                let line = UnsafeBufferPointer(rebasing: all[start..<end])
                start = end + 1
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                do {
                    let v = try JSONReader.parse(line)
                    try WriteCheck.value(v, at: sample)
                    values.append(v)
                } catch let e as RTDBError {
                    throw RTDBError(e.code, "line \(lineNo): \(e.message); nothing was pushed")
                }
            }
        }
        return values
    }
}
