import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum WatchCommand {
    static let spec = CommandSpec(
        name: "watch", summary: "stream value or child events at a path as JSON lines",
        usage: "rtdb watch PATH [--child-events] [ORDER] [RANGE] [LIMIT] [--count N] [--exec -- CMD [ARGS...]]",
        arguments: [("PATH", .path, "database path to watch")],
        options: [
            OptionSpec("--child-events", "print child_added/removed/changed/moved events instead of value events"),
            OptionSpec("--count", value: "N", kind: .number, "exit after N event lines"),
            OptionSpec("--exec", "run CMD (after --) once per event with the event line on its stdin, instead of printing"),
        ] + Registry.queryOptions,
        description: "Prints the current value (or one child_added per child), then one line per change made by any process "
            + "using the same database file, until interrupted. Changes print in the order removed, added, moved, changed. "
            + "With a limit, children entering and leaving the window are added and removed. SIGINT and SIGTERM end it with status 0.",
        examples: ["rtdb watch /posts --child-events | jq -c .",
                   "rtdb watch /config --count 2",
                   "rtdb watch /scores --order-by-value --limit-to-last 3 --child-events",
                   "rtdb watch /jobs --child-events --exec -- ./handle-job.sh"],
        run: run)

    static func run(_ inv: Invocation) throws {
        var command: [String] = []
        var args = inv.positionals
        if inv.has("--exec") {
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
        let childEvents = inv.has("--child-events")
        var remaining = Int.max
        if let text = inv.value("--count") {
            guard let n = Int(text), n >= 1 else { throw inv.usageError("--count needs a whole number ≥ 1, not \(Limits.quote(text))") }
            remaining = n
        }
        let db = try inv.database()
        installExitOnSignal()
        let out = inv.output(streaming: true)
        var previous: Node? = nil
        try db.observe(path, idle: stdoutIsOpen) { value, keys in
            let events: [Event]
            if let old = previous {
                events = EventGenerator.changes(query: query, old: old, new: value, childEvents: childEvents, changedKeys: keys)
            } else {
                events = EventGenerator.initial(query: query, value: value, childEvents: childEvents)
            }
            previous = value
            for e in events {
                let fields = record(e, path: path)
                if command.isEmpty {
                    try out.record(fields)
                } else {
                    let line = Output(pretty: false, quiet: false)
                    var bytes: [UInt8] = []
                    try line.render(fields, into: &bytes)
                    bytes.append(0x0A)
                    _ = try Subprocess.run(command, input: bytes, captureOutput: false)
                }
                remaining -= 1
                if remaining == 0 { return false }
            }
            return true
        }
        try out.flush()
    }

    static func record(_ e: Event, path: Path) -> [(String, Field)] {
        var fields: [(String, Field)] = [("event", .string(e.type.rawValue)), ("path", .string(path.description))]
        if let key = e.key {
            fields.append(("key", .string(key)))
            if e.type != .childRemoved { fields.append(("prev", e.prevKey.map { .string($0) } ?? .null)) }
        }
        fields.append(("value", .node(e.value)))
        return fields
    }

    /// False once the reader of stdout has gone (`rtdb watch … | head -1`), so a quiet
    /// stream ends too instead of waiting for its next event.
    static func stdoutIsOpen() -> Bool {
        var p = pollfd(fd: 1, events: 0, revents: 0)
        guard poll(&p, 1, 0) > 0 else { return true }
        return p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0
    }

    /// SIGINT and SIGTERM end a stream normally: every printed line is already flushed.
    static func installExitOnSignal() {
        let handler: @convention(c) (Int32) -> Void = { _ in _exit(0) }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
    }
}
