import RTDBCore

/// `push --lines`: each line of stdin is a value pushed, in order, in bounded memory however
/// many lines there are.
///
/// On a database that takes a stream of pushes (the file) every value goes into one
/// transaction as its line is read: a bad line, a failed write or a killed process leaves
/// nothing written. The lines to print wait in a temporary file (`Spool`) until the write has
/// committed, since stdout shows only what is stored.
///
/// Elsewhere (--url, an offline cache) every line is checked before anything is sent (kept in
/// a temporary file past `batchBytes`), so a bad line still writes nothing; the values then go
/// in writes of at most about `batchBytes` of JSON each, in order, each atomic, and each
/// printed once written. A write the server refuses for its size goes again in halves, and
/// later writes are no larger. A failure part way says how many values were pushed.
enum PushLines {
    /// The most JSON one write of values carries through --url: the input of a larger push is
    /// never held whole, and a server that takes less is met by halving.
    static let batchBytes = 1 << 20

    static func run(_ inv: Invocation, _ path: Path, sample: Path) throws {
        let lines = JSONLines(fd: 0, what: "stdin", sample: sample)
        let db = try inv.database()
        if let streaming = inv.capability(StreamingPushes.self, of: db) {
            try inOneTransaction(inv, streaming, path, lines)
        } else {
            try inBatches(inv, db, path, lines)
        }
    }

    /// The line printed for each new child.
    static func record(_ path: Path, _ child: Node.Entry) -> [(String, Field)] {
        [("path", .string(path.appending(child.key).description)), ("key", .string(child.key)), ("value", .node(child.node))]
    }

    private static func inOneTransaction(_ inv: Invocation, _ db: StreamingPushes, _ path: Path, _ lines: JSONLines) throws {
        let out = inv.output(committed: path)
        let spool = out.quiet ? nil : try Spool()
        let progress = TerminalProgress.forCommand(quiet: inv.quiet)
        var text: [UInt8] = []
        do {
            progress.begin("push", total: lines.size, unit: .bytes)
            defer { progress.end() }
            _ = try db.push(path, from: {
                guard let line = try lines.next() else { return nil }
                if lines.lineNumber & 1023 == 0 { try progress.update(done: lines.bytesRead) }
                return line.value
            }, stored: { child in
                guard let spool else { return }
                text.removeAll(keepingCapacity: true)
                try out.render(record(path, child), into: &text)
                text.append(0x0A)
                try spool.append(text)
            })
        } catch let e as RTDBError {
            throw RTDBError(e.code, e.message + "; nothing was pushed")
        } catch let e as Interrupted {
            throw e.saying("nothing was pushed")
        }
        guard let spool else { return }
        try spool.replay { piece in
            try out.rawBytes(piece)
            try out.flushIfLarge()
        }
        try out.flush()
    }

    private static func inBatches(_ inv: Invocation, _ db: Database, _ path: Path, _ lines: JSONLines) throws {
        let progress = TerminalProgress.forCommand(quiet: inv.quiet)
        // Every line checked before anything is sent: held while small, else in a spool.
        var held: [[UInt8]] = []
        var heldBytes = 0
        var spool: Spool? = nil
        var count = 0
        do {
            progress.begin("check", total: lines.size, unit: .bytes)
            defer { progress.end() }
            while let line = try lines.next() {
                count += 1
                if count & 1023 == 0 { try progress.update(done: lines.bytesRead) }
                if spool == nil && heldBytes + line.text.count <= batchBytes {
                    held.append(Array(line.text))
                    heldBytes += line.text.count
                    continue
                }
                if spool == nil {
                    let s = try Spool()
                    for t in held { try s.append(t + [0x0A]) }
                    held = []
                    spool = s
                }
                try spool?.append(Array(line.text) + [0x0A])
            }
        } catch let e as RTDBError {
            throw RTDBError(e.code, e.message + "; nothing was pushed")
        } catch let e as Interrupted {
            throw e.saying("nothing was pushed")
        }
        // The checked values again, one at a time.
        let next: () throws -> (value: Node, bytes: Int)?
        if let spool {
            let again = JSONLines(fd: try spool.rewound(), what: "a temporary file", sample: lines.sample)
            next = { try again.next().map { ($0.value, $0.text.count) } }
        } else {
            var rest = held[...]
            next = { try rest.popFirst().map { (try JSONReader.parse($0), $0.count) } }
        }
        let out = inv.output(committed: path)
        var limit = batchBytes
        var pushed = 0
        progress.begin("push", total: Int64(count), unit: .items("values"))
        defer { progress.end() }
        func send(_ values: ArraySlice<(value: Node, bytes: Int)>) throws {
            do {
                let receipt = try db.commit(.push(path, values.map { $0.value }))
                try out.report(receipt, receipt.values.map { record(path, Node.Entry($0.path.last ?? "", $0.value)) })
                pushed += values.count
                try progress.update(done: Int64(pushed))
            } catch let e as RTDBError where e.code == .tooLarge && values.count > 1 {
                // Refused for its size: in halves, and later writes no larger than a half.
                limit = max(1, min(limit, values.reduce(0) { $0 + $1.bytes } / 2))
                let middle = values.startIndex + values.count / 2
                try send(values[..<middle])
                try send(values[middle...])
            }
        }
        do {
            var batch: [(value: Node, bytes: Int)] = []
            var batchBytes = 0
            while let (value, bytes) = try next() {
                if !batch.isEmpty && batchBytes + bytes > limit {
                    try send(batch[...])
                    batch.removeAll(keepingCapacity: true)
                    batchBytes = 0
                }
                batch.append((value, bytes))
                batchBytes += bytes
            }
            if !batch.isEmpty { try send(batch[...]) }
        } catch let e as RTDBError {
            throw RTDBError(e.code, e.message + "; " + left(pushed, count))
        } catch let e as Interrupted {
            throw e.saying(left(pushed, count))
        }
    }

    /// What a push stopped part way left.
    static func left(_ pushed: Int, _ count: Int) -> String {
        pushed == 0 ? "nothing was pushed" : "\(pushed) of \(Quantity.of(count, "value")) were pushed (those printed), the rest were not"
    }
}
