import RTDBCore

/// `set` and `update` of an input too large to parse whole, streamed into a database that
/// takes it so (JSONInput.swift). The line printed is the one the command prints for a parsed
/// value, its values read back from the database once the write has committed (streamed too:
/// the value is never held whole).
enum StreamedWrite {
    /// What `set` and `update` have to write once their input is open.
    enum Input {
        /// A database that streams took the large input: it is written and its line printed.
        case streamed
        /// The input's JSON text, nil when the value is given otherwise (`--string`,
        /// `--server-timestamp`); and the database, when reading a large input opened it already.
        case text([UInt8]?, opened: Database?)
    }

    /// Opens `source`'s input. Past a few megabytes, a database that can stream the input takes
    /// it so, unless the path is a priority; anything else is read whole. `opened`: the target,
    /// when the command has opened it already.
    static func take(_ inv: Invocation, _ path: Path, _ source: ValueInput.ValueSource, as kind: ImportKind,
                     opened: Database? = nil) throws -> Input {
        switch try JSONInput.open(source) {
        case .large(let input)?:
            let db = try opened ?? inv.database()
            if !path.isPriority, let streaming = inv.capability(StreamingWrites.self, of: db) {
                try run(inv, streaming, path, input, as: kind)
                return .streamed
            }
            return .text(try input.whole(), opened: db)
        case .whole(let bytes)?:
            return .text(bytes, opened: nil)
        case nil:
            return .text(nil, opened: nil)
        }
    }

    static func run(_ inv: Invocation, _ db: StreamingWrites, _ path: Path, _ input: LargeInput, as kind: ImportKind) throws {
        let progress = TerminalProgress.forCommand(quiet: inv.quiet)
        let written = try Interruption.saying("nothing was written") {
            try db.importJSON(path, from: input.source(), as: kind, progress: progress)
        }
        let out = inv.output(committed: path)
        if out.quiet { return }
        let pretty = out.pretty
        // As `Output.record` lays out {"path":P,"value":V}.
        var head: [UInt8] = [UInt8(ascii: "{")]
        out.appendFieldName("path", first: true, into: &head)
        JSONWriter.appendString(path.description, to: &head)
        out.appendFieldName("value", first: false, into: &head)
        try out.rawBytes(head)
        let reader = db.capability(StreamingReads.self)
        switch kind {
        case .set:
            try value(at: path, reader, db, pretty: pretty, indent: 1, out)
        case .update:
            // The entries by their relative paths, in key order, as `UpdateCommand.shown`.
            let keyed = written.compactMap { p in path.relative(p).map { (SortableKey($0.unrooted), $0.unrooted, p) } }
                .sorted { SortableKey.compare($0.0, $1.0) < 0 }
            if keyed.isEmpty {
                try out.rawBytes(Array("null".utf8))
            } else {
                try out.rawBytes([UInt8(ascii: "{")])
                for (n, entry) in keyed.enumerated() {
                    var sep: [UInt8] = n > 0 ? [UInt8(ascii: ",")] : []
                    if pretty { sep += Array("\n    ".utf8) }
                    JSONWriter.appendString(entry.1, to: &sep)
                    sep.append(UInt8(ascii: ":"))
                    if pretty { sep.append(0x20) }
                    try out.rawBytes(sep)
                    try value(at: entry.2, reader, db, pretty: pretty, indent: 2, out)
                }
                try out.rawBytes(Array((pretty ? "\n  }" : "}").utf8))
            }
        }
        try out.rawBytes(Array((pretty ? "\n}\n" : "}\n").utf8))
        try out.flush()
    }

    /// The value stored at `path`, each line indented `indent` levels deeper when pretty.
    private static func value(at path: Path, _ reader: StreamingReads?, _ db: Database, pretty: Bool, indent: Int, _ out: Output) throws {
        let emit: ([UInt8]) throws -> Void = { chunk in
            try out.rawBytes(pretty ? Output.indented(chunk, levels: indent) : chunk)
        }
        if let reader {
            try reader.streamJSON(path, export: false, pretty: pretty, progress: Progress.none) { chunk in
                try emit(chunk)
                try out.flushIfLarge()
            }
        } else {
            var text: [UInt8] = []
            JSONWriter(pretty: pretty).write(try db.get(path), into: &text)
            try emit(text)
        }
    }
}
