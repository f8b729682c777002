import RTDBCore

enum UpdateCommand {
    static let file = Valued<String>("--file", value: "FILE", kind: .file, "read the JSON object from FILE (- reads stdin)")

    static let spec = CommandSpec(
        name: "update", summary: "replace several relative paths at once, all or nothing",
        usage: "rtdb update PATH (VALUE | - | --file FILE)",
        arguments: [("PATH", .path, "database path the update is relative to"),
                    ("VALUE", .json, "JSON object whose keys are relative paths (may contain /); null deletes")],
        options: [file.spec],
        description: "Each key of VALUE names a path under PATH that is replaced; siblings are untouched. "
            + "Overlapping keys (\"a\" and \"a/b\") are refused. Prints {\"path\":P,\"value\":U}, U with server values resolved.",
        examples: ["rtdb update / '{\"users/bob/name\":\"Bob\",\"users/alice/age\":31}'",
                   "rtdb update /users/alice '{\"nick\":null}'"],
        run: run)

    static func run(_ inv: Invocation) throws {
        guard let first = inv.positionals.first else { throw inv.usageError("update: missing PATH") }
        let path = try inv.path(first)
        let source = try ValueInput.source(inv, args: inv.positionals.dropFirst(), string: nil, file: file)
        try WriteCheck.writable(path)
        guard case .text(let text, let opened) = try StreamedWrite.take(inv, path, source, as: .update) else { return }
        let bytes = text ?? []
        guard let raw = try bytes.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) }) else {
            throw RTDBError(.invalidData, "update needs a JSON object of relative paths")
        }
        let entries = try WriteCheck.update(raw, at: path)
        let receipt = try (opened ?? inv.database()).commit(.update(path, entries))
        let relative = receipt.values.compactMap { v in path.relative(v.path).map { (path: $0, value: v.value) } }
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)), ("value", .node(shown(relative)))]])
    }

    /// The update as printed: its keys (relative paths) in key order, server values resolved,
    /// deletions kept visible as `null` (so this object is for display, not stored data).
    static func shown(_ applied: [(path: Path, value: Node)]) -> Node {
        let entries = applied.map { Node.Entry($0.path.unrooted, $0.value) }
        if entries.isEmpty { return .null }
        let keyed = entries.map { (SortableKey($0.key), $0) }.sorted { SortableKey.compare($0.0, $1.0) < 0 }
        return .object(keyed.map { $0.1 })
    }
}
