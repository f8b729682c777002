import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum TxCommand {
    static let maxRetries = Valued<Int>("--max-retries", value: "N", kind: .number,
        "attempts in all before giving up (default 25 on a remote database, no limit on the embedded one)") { text, source in
        try OptionValue.whole(text, source, atLeast: 1)
    }
    static let commandTimeout = Valued<Double>("--command-timeout", value: "SECONDS", kind: .number,
        "stop CMD when one run takes longer, and commit nothing (timeout, status 6; default: no limit)") { text, source in
        try OptionValue.seconds(text, source, needs: "a number of seconds > 0") { $0 > 0 }
    }
    static let wait = Valued<Double>("--wait", value: "SECONDS", kind: .number,
        "with an offline cache: wait up to this long for the server to be reachable (a transaction is never queued)") { text, source in
        try OptionValue.seconds(text, source, needs: "a number of seconds") { $0 >= 0 }
    }

    static let spec = CommandSpec(
        name: "tx", summary: "run a command as a compare-and-set transaction on a path",
        usage: "rtdb tx PATH [--max-retries N] [--command-timeout SECONDS] -- CMD [ARGS...]",
        arguments: [("PATH", .path, "database path"), ("CMD", .command, "command that reads the current value on stdin and prints the new one")],
        options: [maxRetries.spec, commandTimeout.spec, wait.spec],
        description: "Runs CMD (no shell) with the current value at PATH as one JSON line on stdin; its stdout, parsed as JSON, "
            + "is the new value (null deletes). A non-zero exit or empty output aborts. The write commits only if PATH still "
            + "holds the value CMD saw, otherwise CMD runs again with the fresh value; no lock is held while CMD runs. "
            + "On the embedded database, after 3 such attempts CMD runs once more holding the database's write lock "
            + "(waited for up to --timeout; other writers wait meanwhile, readers do not), which cannot be stale: "
            + "contention never makes tx give up. CMD must not write the same database itself then. "
            + "Prints {\"path\":P,\"committed\":B,\"value\":V,\"attempts\":N}; not committed exits with status 5. "
            + "CMD runs in a process group of its own, which a watchdog (rtdb __tether) stops when rtdb dies, kill -9 "
            + "included; output larger than the write limit stops it (too_large), and "
            + "SIGINT or SIGTERM stop it and end tx with status 130 or 143, nothing committed. "
            + "With an offline cache (--persist) a transaction is never queued: it sends the queued writes first, runs "
            + "against the server and stores the committed value in the cache; an unreachable server is unavailable (6) "
            + "at once, or after --wait SECONDS of retrying; with --offline it is unavailable at once.",
        examples: ["rtdb tx /posts/p1 -- jq '.starCount += 1'", "rtdb tx /counter -- sh -c 'read n; echo $((n * 2))'"],
        run: run)

    /// Stale attempts without the lock before CMD runs holding it (embedded database).
    static let optimisticAttempts = 3

    static func run(_ inv: Invocation) throws {
        // PATH comes before `--`, or first after it (then CMD follows, after an optional second `--`).
        var pathText: String
        var command: [String]
        if let cut = inv.beforeDashDash {
            if cut > 1 { throw inv.usageError("tx: unexpected argument \(Limits.quote(inv.positionals[1])) before --") }
            if cut == 1 {
                pathText = inv.positionals[0]
                command = Array(inv.positionals[1...])
            } else {
                guard let first = inv.positionals.first else { throw inv.usageError("tx: missing PATH") }
                pathText = first
                command = Array(inv.positionals.dropFirst())
                if command.first == "--" { command.removeFirst() }
            }
        } else {
            throw inv.usageError(inv.positionals.isEmpty ? "tx: missing PATH" : "tx: missing -- CMD")
        }
        if command.isEmpty { throw inv.usageError("tx: missing CMD after --") }
        let path = try inv.path(pathText)
        try WriteCheck.writable(path)
        let maxAttempts = try inv.value(maxRetries)
        let commandTimeout = try inv.value(TxCommand.commandTimeout)
        let waitSeconds = try inv.value(wait)
        // Through an offline cache a transaction is never queued: it runs on
        // the server once that can be reached (waiting up to --wait), its commit kept in the cache.
        let db = try inv.database().transactions(waitSeconds: waitSeconds)
        // A database with a write lock (the embedded one) needs no bound: after a few stale
        // attempts CMD runs holding the lock, and that attempt cannot be stale. Elsewhere
        // Firebase's rule applies: 25 attempts in all.
        let attemptBound = maxAttempts ?? (inv.capability(LockingDatabase.self, of: db) != nil ? Int.max : 25)
        // From here SIGINT and SIGTERM stop CMD and end the command before anything commits.
        Interruption.install()
        try Interruption.check()
        var aborted = false
        // After a stale attempt, wait a random moment that grows with the attempts and with what
        // one attempt costs (TransactionBackoff), so that processes retrying the same path do
        // not collide again in lockstep; the value is read afresh after the pause.
        let pauses = TransactionBackoff()
        var attemptStarted = TerminalProgress.monotonicSeconds()
        let backoff: (Int) -> Void = { attempt in
            let seconds = pauses.pause(before: attempt, lastAttemptSeconds: TerminalProgress.monotonicSeconds() - attemptStarted)
            usleep(UInt32(seconds * 1_000_000))
        }
        let outcome: TransactionRunner.Outcome
        do {
            outcome = try TransactionRunner.run(db, path: path, maxAttempts: attemptBound, lockAfter: TxCommand.optimisticAttempts,
                                                backoff: backoff) { current in
                attemptStarted = TerminalProgress.monotonicSeconds()
                var input: [UInt8] = []
                JSONWriter().write(current, into: &input)
                input.append(0x0A)
                try Interruption.check()
                let result: Subprocess.Result
                do {
                    result = try Subprocess.run(command, input: input, outputLimit: Limits.maxWriteBytes,
                                                timeoutSeconds: commandTimeout, interruptible: true, ownGroup: true, tethered: true)
                } catch let e as RTDBError where e.code == .tooLarge || e.code == .timeout {
                    throw RTDBError(e.code, "tx: \(e.message); nothing was committed")
                }
                if result.status != 0 || result.output.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                    aborted = true
                    return nil
                }
                let value: Node
                do {
                    var output = result.output
                    if output.starts(with: [0xEF, 0xBB, 0xBF]) { output.removeFirst(3) }   // a byte-order mark
                    value = try JSONReader.parse(output)
                } catch let e as RTDBError {
                    throw RTDBError(e.code, "tx: output of \(Limits.quote(command[0])) is not valid: \(e.message)")
                }
                // The last point at which a signal stops the transaction: the commit follows.
                try Interruption.check()
                return value
            }
        } catch let e as Interrupted {
            throw Interrupted(signal: e.signal, message: "tx: stopped by \(e.name); \(Limits.quote(command[0])) was stopped and nothing was committed")
        }
        let out = outcome.committed ? inv.output(committed: path) : inv.output()
        try out.record([("path", .string(path.description)), ("committed", .bool(outcome.committed)),
                        ("value", .node(outcome.value)), ("attempts", .int(outcome.attempts))])
        try out.flush()
        if !outcome.committed {
            let why = outcome.attempts >= attemptBound && !aborted
                ? "gave up after \(Quantity.of(outcome.attempts, "attempt")) (the value kept changing)"
                : "\(command[0]) aborted"
            throw RTDBError(.notCommitted, "transaction at \(path) not committed: \(why)")
        }
    }
}
