import RTDBCore

/// Where `watch` puts its events: printed as JSON lines (or bare values with `--raw`), or
/// handed one by one to `--exec`'s command, counting towards `--count`. Every target and mode
/// of `watch` delivers through one sink, so they print alike.
final class WatchSink {
    let inv: Invocation
    let path: Path
    /// The watch's query: a value event prints its members in the query's order.
    let query: Query
    let command: [String]
    let raw: Bool
    let stopOnFailure: Bool
    let out: Output
    var remaining: Int
    /// The status of a command that failed with `--exec-fail stop`.
    private(set) var failure: Int32? = nil

    init(_ inv: Invocation, path: Path, query: Query, command: [String], raw: Bool, count: Int, stopOnFailure: Bool) {
        self.inv = inv
        self.path = path
        self.query = query
        self.command = command
        self.raw = raw
        self.remaining = count
        self.stopOnFailure = stopOnFailure
        self.out = inv.output(streaming: true)
    }

    /// Delivers `events` in order; false when the watch is to end (count reached, or a
    /// failed command with `--exec-fail stop`).
    func deliver(_ events: [Event]) throws -> Bool {
        for e in events {
            let fields = WatchCommand.record(e, path: path, query: query)
            if command.isEmpty {
                if raw { try out.rawValue(WatchCommand.shown(e, query)) } else { try out.record(fields) }
            } else {
                var line: [UInt8] = []
                if raw {
                    Output.appendRaw(WatchCommand.shown(e, query), pretty: inv.pretty, to: &line)
                } else {
                    try inv.output().render(fields, into: &line)
                }
                line.append(0x0A)
                let status = try Subprocess.run(command, input: line, captureOutput: false).status
                if status != 0 {
                    try WatchCommand.reportFailure(command: command, status: status, fields: fields)
                    if stopOnFailure {
                        failure = status
                        return false
                    }
                }
            }
            remaining -= 1
            if remaining == 0 { return false }
        }
        return true
    }

    /// Flushes the output; throws the failed command's status when there was one.
    func finish() throws {
        try out.flush()
        if let failure { throw ExitStatus(failure) }
    }
}
