import RTDBCore

enum SetCommand {
    static let serverTimestamp = Flag("--server-timestamp", "write the server time ({\".sv\":\"timestamp\"})")
    static let chunked = Flag("--chunked", "through --url: write a document too large for one request as a sequence of "
                              + "multi-path updates; not atomic, so only to an empty location unless --force")
    static let chunkSize = Valued<Int>("--chunk-size", value: "BYTES", kind: .number,
        "with --chunked: the most JSON one request carries (default 1048576)") { text, source in
        try OptionValue.whole(text, source, in: 1024...Limits.maxWriteBytes, of: "bytes")
    }
    static let force = Flag("--force", "replace the root / of a database that holds data; with --chunked: remove what "
                            + "the location holds first (in chunks too)")

    static let spec = CommandSpec(
        name: "set", summary: "replace the value at a path",
        usage: "rtdb set PATH (VALUE | - | --string TEXT | --file FILE | --server-timestamp)",
        arguments: [("PATH", .path, "database path"), ("VALUE", .json, "JSON value; - reads it from stdin; null deletes")],
        options: [ValueInput.string.spec, ValueInput.file.spec, serverTimestamp.spec, chunked.spec, chunkSize.spec, force.spec],
        description: "Replaces PATH with VALUE and prints {\"path\":P,\"value\":V}, V as stored (server values resolved). "
            + "On the database file a value of any size is one transaction (read in bounded memory past 16 MiB). "
            + "Through --url one request carries at most 256 MiB; --chunked writes a larger document as multi-path "
            + "updates of --chunk-size bytes, which is not atomic: it refuses a location that holds data unless --force, "
            + "and prints {\"path\":P,\"requests\":N,\"bytes\":B,\"atomic\":false}. Replacing the root / of a database "
            + "that holds data needs --force (an empty PATH is a usage error, never the root).",
        examples: ["rtdb set /users/alice '{\"name\":\"Alice\",\"age\":30}'", "rtdb set /motd --string 'hello world'",
                   "curl -s https://example.com/data.json | rtdb set /imported -", "rtdb set /lastSeen --server-timestamp",
                   "rtdb set / --file backup.json --force", "rtdb --url \"$RTDB_URL\" set / --file backup.json --chunked --force"],
        run: run)

    static func run(_ inv: Invocation) throws {
        guard let first = inv.positionals.first else { throw inv.usageError("set: missing PATH") }
        let path = try inv.path(first)
        let source = try ValueInput.source(inv, args: inv.positionals.dropFirst(), serverTimestamp: serverTimestamp)
        try WriteCheck.writable(path)
        if inv.has(chunked) { return try runChunked(inv, path, source) }
        if inv.has(chunkSize) { throw inv.usageError("set: \(chunkSize.long) goes with --chunked") }
        // The root is checked before the input is read; the database stays open for the write.
        var root: Database? = nil
        if path.isRoot {
            let db = try inv.database()
            try RootWrites.check(inv, path, db, .replace, force: inv.has(force))
            root = db
        }
        guard case .text(let text, let opened) = try suggestingChunked(inv, { try StreamedWrite.take(inv, path, source, as: .set, opened: root) })
        else { return }
        let value = try text.map { try source.node(from: $0) } ?? source.node()
        try WriteCheck.value(value, at: path)
        let receipt = try suggestingChunked(inv) { try (opened ?? root ?? inv.database()).commit(.set(path, value)) }
        try inv.output(committed: path).report(receipt, [[("path", .string(path.description)),
                                                         ("value", .node(receipt.values.first?.value ?? .null))]])
    }

    /// Runs `body`, whose `too_large` can only be the size of the whole write (the write limit,
    /// a server's 413): through --url such a document can still be written in many requests,
    /// and the error says how.
    static func suggestingChunked<T>(_ inv: Invocation, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as RTDBError where e.code == .tooLarge {
            guard let db = try? inv.database(cache: .never), inv.capability(ChunkedWrites.self, of: db) != nil else { throw e }
            throw RTDBError(e.code, e.message + "; set --chunked writes a document this large as a sequence of smaller writes (not atomic)")
        }
    }

    /// `--chunked`: the document as many bounded requests to a remote database.
    static func runChunked(_ inv: Invocation, _ path: Path, _ source: ValueInput.ValueSource) throws {
        let db = try inv.database(cache: .never)
        guard let chunker = inv.capability(ChunkedWrites.self, of: db) else {
            throw inv.usageError("set: --chunked writes through --url; the database file takes a value of any size in one transaction")
        }
        let stream: ByteSource
        var keep: LargeInput? = nil
        // Read as it is sent, whatever its size.
        switch try JSONInput.open(source, streamAbove: 0) {
        case .large(let input)?:
            keep = input
            stream = input.source()
        case .whole(let bytes)?:
            stream = BytesSource(bytes)
        case nil:
            var text: [UInt8] = []
            JSONWriter().write(try source.node(), into: &text)
            stream = BytesSource(text)
        }
        let chunkBytes = try inv.value(chunkSize) ?? 1 << 20
        let work = try Interruption.saying("the requests sent before were written, so \(path) holds part of the document (not atomic)") {
            try chunker.writeChunked(path, from: stream, chunkBytes: chunkBytes, force: inv.has(force),
                                     progress: TerminalProgress.forCommand(quiet: inv.quiet))
        }
        withExtendedLifetime(keep) {}
        Diagnostics.note("\(path) was written in \(Quantity.of(work.requests, "request")), not atomically")
        let out = inv.output(committed: path)
        try out.record([("path", .string(path.description)), ("requests", .int(work.requests)),
                        ("bytes", .int(Int(work.bytes))), ("atomic", .bool(false))])
        try out.flush()
    }
}
