import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum WatchCommand {
    static let childEvents = Flag("--child-events", "print child_added/removed/changed/moved events instead of value events")
    static let changesOnly = Flag("--changes-only", short: "-n", "skip the current value (or the child_added of existing children): print only later changes")
    static let count = Valued<Int>("--count", value: "N", kind: .number, "exit after N event lines") { text, source in
        try OptionValue.whole(text, source, atLeast: 1)
    }
    static let exec = Flag("--exec", "run CMD (after --) once per event with the event line on its stdin, instead of printing")
    /// What a handler that exits non-zero does to the stream.
    enum ExecFail: String, CaseIterable, Sendable {
        case `continue`, stop
    }
    static let execFail = Valued<ExecFail>("--exec-fail", value: "WHAT",
        "when CMD exits non-zero: report it on stderr and go on (continue, the default), or end with its status (stop)")

    static let spec = CommandSpec(
        name: "watch", summary: "stream value or child events at a path as JSON lines",
        usage: "rtdb watch PATH [--child-events] [--changes-only] [ORDER] [RANGE] [LIMIT] [--count N] [--exec -- CMD [ARGS...]]",
        arguments: [("PATH", .path, "database path to watch")],
        options: [childEvents.spec, changesOnly.spec, count.spec, exec.spec, execFail.spec, Registry.rawOption.spec]
            + Registry.queryOptions,
        exclusions: { QueryOptions.exclusions },
        description: "Prints the current value (or one child_added per child), then one line per change made by any process "
            + "using the same database file, until interrupted. --changes-only skips that first part. Changes print in the "
            + "order removed, added, moved, changed. With a limit, children entering and leaving the window are added and removed. "
            + "With an order other than by key, a value line lists its members in that order (an array keeps its own). "
            + "With --raw, each line is the event's value alone, strings as bare text. --exec gives CMD the line that would print; "
            + "a CMD that exits non-zero is reported on stderr as one line with the event and the status. --count ends it with "
            + "status 0, SIGINT with 130 and SIGTERM with 143. "
            + "With --url a lost stream is reconnected, and stderr says so once when it is lost and once when it is back "
            + "({\"disconnected\":{\"url\":U,\"reason\":R}} and {\"reconnected\":{\"url\":U,\"after_ms\":N}}, or "
            + "'rtdb: watch: …' sentences on a terminal). "
            + "/.info/connected and /.info/serverTimeOffset follow the connection: true on the database file; with --url "
            + "false at once, true after a realtime handshake, false when it drops, true after reconnecting (the offset: "
            + "null, then each handshake's server time minus the local time, in ms). "
            + "With an offline cache (--persist, --cache, --offline; not "
            + "--online) the events are the changes of what the cache shows (the server's data as last seen plus the queued "
            + "writes of every process): known children at once, a value line only while the data is whole (with "
            + "--child-events, one value line when it becomes whole); the location is streamed into the cache while the "
            + "server can be reached, and followed in the cache file while it cannot (tried again after 1 s, x1.3, at most "
            + "30 s); back online, it prints what changed meanwhile and sends the queued writes.",
        examples: ["rtdb watch /posts --child-events | jq -c .",
                   "rtdb watch /config --count 2",
                   "rtdb watch /scores --order-by-value --limit-to-last 3 --child-events",
                   "rtdb watch /jobs --child-events --changes-only --exec -- ./handle-job.sh",
                   "rtdb watch /status -n -r --exec-fail stop --exec -- ./on-status.sh"],
        run: run)

    static func run(_ inv: Invocation) throws {
        var command: [String] = []
        var args = inv.positionals
        if inv.has(exec) {
            guard let cut = inv.beforeDashDash else { throw inv.usageError("watch: --exec needs -- CMD [ARGS...]") }
            command = Array(inv.positionals[cut...])
            args = Array(inv.positionals[..<cut])
            if command.isEmpty { throw inv.usageError("watch: missing CMD after --") }
        }
        guard args.count == 1 else {
            throw inv.usageError(args.isEmpty ? "watch: missing PATH" : "watch: unexpected argument \(Limits.quote(args[1]))")
        }
        let path = try inv.path(args[0])
        let query = try QueryOptions.parse(inv)
        let childEvents = inv.has(WatchCommand.childEvents)
        let changesOnly = inv.has(WatchCommand.changesOnly)
        let raw = inv.has(Registry.rawOption)
        let remaining = try inv.value(count) ?? Int.max
        var stopOnFailure = false
        if inv.has(execFail) {
            guard inv.has(exec) else { throw inv.usageError("--exec-fail needs --exec") }
            stopOnFailure = try inv.value(execFail) == .stop
        }
        let sink = WatchSink(inv, path: path, query: query, command: command, raw: raw, count: remaining, stopOnFailure: stopOnFailure)
        // `/.info` is the connection's state, never cached: the server itself answers it.
        let db = try inv.database(reading: true, watching: true, cache: path.isInfo ? .never : .asked)
        WatchNotices.attach(to: db)
        installExitOnSignal()
        var events = WatchEvents(query: query, childEvents: childEvents, changesOnly: changesOnly)
        try InfoWatch.observe(db, inv.capability(ConnectionInfo.self, of: db), path, query: query, idle: stdoutIsOpen) { view in
            try sink.deliver(events.next(view))
        }
        try sink.finish()
    }

    /// One stderr line for a handler that exited non-zero: JSON with the command, its status and
    /// the event when stderr is not a terminal, a sentence when it is.
    static func reportFailure(command: [String], status: Int32, fields: [(String, Field)]) throws {
        var event: [UInt8] = []
        try Output(pretty: false, quiet: false).render(fields, into: &event)
        var line: [UInt8]
        if Diagnostics.stderrIsTerminal {
            line = Array("rtdb: --exec: \(command[0]) exited with status \(status) for ".utf8) + event
        } else {
            line = Array("{\"exec_failed\":{\"command\":".utf8)
            JSONWriter.appendString(command[0], to: &line)
            line.append(contentsOf: ",\"status\":\(status),\"event\":".utf8)
            line.append(contentsOf: event)
            line.append(contentsOf: "}}".utf8)
        }
        line.append(0x0A)
        Diagnostics.writeAll(2, line)
    }

    /// An event's value as it prints: a value event of a query that is not key-ordered lists
    /// the members in the query's order, so `jq 'to_entries[]'` walks them as the SDKs'
    /// `snapshot.children` does (an object prints in key order otherwise).
    static func shown(_ e: Event, _ query: Query) -> Field {
        guard e.type == .value, let members = query.orderedMembers(of: e.value) else { return .node(e.value) }
        return .members(members)
    }

    static func record(_ e: Event, path: Path, query: Query = Query()) -> [(String, Field)] {
        var fields: [(String, Field)] = [("event", .string(e.type.rawValue)), ("path", .string(path.description))]
        if let key = e.key {
            fields.append(("key", .string(key)))
            if e.type != .childRemoved { fields.append(("prev", e.prevKey.map { .string($0) } ?? .null)) }
        }
        fields.append(("value", shown(e, query)))
        return fields
    }

    /// False once the reader of stdout has gone (`rtdb watch … | head -1`), so a quiet
    /// stream ends too instead of waiting for its next event.
    static func stdoutIsOpen() -> Bool {
        var p = pollfd(fd: 1, events: 0, revents: 0)
        guard poll(&p, 1, 0) > 0 else { return true }
        return p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0
    }

    /// SIGINT and SIGTERM end a stream with 128 + the signal (130, 143), the shell's convention,
    /// so `rtdb watch … && next` does not run `next` after Ctrl-C. Every printed line is
    /// already flushed. A signal that was ignored when rtdb started stays ignored, as with any
    /// well-behaved program (a non-interactive shell starts background jobs with SIGINT ignored).
    static func installExitOnSignal() {
        let handler: @convention(c) (Int32) -> Void = { signal in _exit(128 + signal) }
        let ignore = unsafeBitCast(SIG_IGN, to: Int.self)
        for s in [SIGINT, SIGTERM] where unsafeBitCast(signal(s, handler), to: Int.self) == ignore {
            signal(s, SIG_IGN)
        }
    }
}
