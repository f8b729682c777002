import RTDBCore
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SyncCommand {
    static let writesOnly = Flag("--writes-only", "send the queued writes only; refresh nothing")
    static let follow = Flag("--follow", "keep running: send each new queued write and stream the kept locations, reconnecting when the server goes away, until SIGINT or SIGTERM")

    static let spec = CommandSpec(
        name: "sync", summary: "send an offline cache's queued writes, then refresh its kept locations",
        usage: "rtdb sync [--writes-only] [--follow]",
        options: [writesOnly.spec, follow.spec],
        description: "Sends every queued write of the --url database's offline cache, in order, one at a time, printing "
            + "{\"event\":\"acked\",\"id\":N,\"path\":P} (with \"resent\":true when the write may have been applied twice, as an "
            + "increment sent again after a crash) or {\"event\":\"rejected\",\"id\":N,\"path\":P,\"error\":C,\"message\":M} per "
            + "write; then reads each kept location again ({\"event\":\"refreshed\",\"path\":P,\"query\":Q}); last "
            + "{\"event\":\"synced\",\"acked\":A,\"rejected\":R,\"pending\":N}. Exits 4 (rejected) while the log holds rejected writes "
            + "that 'rtdb queue --rejected' has not listed, whichever process sent them (a write refused while its own command "
            + "waited does not count: that command failed); else 0 when "
            + "nothing is left, 4 when the credential stopped the queue (unauthenticated, principal_mismatch), 6 (unavailable) "
            + "when writes are left. One process sends at a time; another sync waits for it. "
            + "--follow sends each write queued while it runs, printing its acked or rejected line, prints "
            + "{\"event\":\"connected\"} and {\"event\":\"disconnected\",\"retry_ms\":N} as the server comes and "
            + "goes, and exits 0 on SIGINT or SIGTERM; meanwhile (unless --writes-only) it holds one stream per kept location "
            + "or query (rtdb keep; anything inside a kept location rides on that location's stream, a kept query streams its "
            + "window), so the kept data in the cache follows the server as it changes and reads of a kept location answer from "
            + "the cache without a request. Each stream is a child rtdb process that sends no write (sync does), ended with sync "
            + "(also when sync is killed) and started again when it fails.",
        examples: ["rtdb --url \"$RTDB_URL\" --persist sync", "rtdb --url \"$RTDB_URL\" --persist sync --follow &"],
        run: run)

    static func run(_ inv: Invocation) throws {
        if let extra = inv.positionals.first { throw inv.usageError("sync: unexpected argument \(Limits.quote(extra))") }
        let db = try QueueCommand.cache(inv, command: "sync")
        if db.cacheMode == .offline { throw inv.usageError("sync contacts the server; it cannot run with --offline") }
        let out = inv.output(streaming: true)
        if inv.has(SyncCommand.follow) {
            try follow(inv, db, out)
            return
        }
        var acked = 0, rejected = 0
        let progress = TerminalProgress.forCommand(quiet: inv.quiet, writesAsItGoes: true)
        progress.begin("sync", total: Int64(try db.queuedCount()), unit: .items("writes"))
        defer { progress.end() }
        let report: (FlushEvent) throws -> Void = { event in
            switch event {
            case .acked: acked += 1
            case .rejected: rejected += 1
            }
            // Printed before the progress line may stop the command: every write sent is told.
            try print(event, out)
            try progress.update(done: Int64(acked + rejected))
        }
        // A write queued meanwhile and sent by the refresh's reads is this command's to report too.
        db.onIncidentalFlushEvent = { try? report($0) }
        let stop = try Interruption.saying("\(Quantity.of(acked + rejected, "queued write")) were sent (each printed); the rest stay queued") {
            try db.flush(onEvent: report)
        }
        if stop == nil && !inv.has(writesOnly) {
            try refreshKept(db, out)
        }
        let pending = try db.queuedCount()
        try out.record([("event", .string("synced")), ("acked", .int(acked)), ("rejected", .int(rejected)), ("pending", .int(pending))])
        try out.flush()
        if let failure = try failure(db, stop) { throw failure }
    }

    /// Why `sync` fails, if it does: rejected writes not yet seen (rejected by this sync or by
    /// any process that sent the queue, and not the error of their own command) are `rejected`
    /// (4) until `queue --rejected` shows them; else a stop of the flush: a credential problem
    /// (4) or writes left (6).
    static func failure(_ db: CacheControl, _ stop: FlushStop?) throws -> RTDBError? {
        let unseen = try db.unseenRejections()
        if let first = unseen.first {
            let which = "id \(first.write.id), \(first.write.cmd) \(first.write.path) (\(first.error.code.rawValue))"
            let what = unseen.count == 1 ? "a queued write was rejected and not yet listed: \(which)"
                : "\(unseen.count) queued writes were rejected and not yet listed, the first \(which)"
            return RTDBError(.rejected, what + "; 'rtdb queue --rejected' lists them, and sync exits 0 again after that")
        }
        guard let stop else { return nil }
        return stop.error.code.exitStatus == 4 ? stop.error
            : RTDBError(stop.error.code == .timeout ? .timeout : .unavailable, "queued writes are left: \(stop.error.message)")
    }

    /// The line of one row's outcome (`FlushReports.fields`).
    static func print(_ event: FlushEvent, _ out: Output) throws {
        try out.record(FlushReports.fields(event))
    }

    /// Reads each kept location or query again (a plain read: an unchanged location costs a
    /// 304 thanks to its ETag).
    static func refreshKept(_ db: CacheControl, _ out: Output) throws {
        try db.refreshKept { kept in
            try out.record([("event", .string("refreshed")), ("path", .string(kept.path.description)),
                            ("query", .node((try? JSONReader.parse(kept.params)) ?? .null))])
        }
    }

    /// `--follow`: sends new rows as they appear; while the server cannot be reached, tries
    /// again after a growing pause (1 s, ×1.3, at most 30 s). Ends with 0 on SIGINT/SIGTERM.
    static func follow(_ inv: Invocation, _ db: CacheControl, _ out: Output) throws {
        Interruption.install()
        // One stream per kept location keeps it fresh in the cache while this runs.
        let streams = inv.has(writesOnly) ? nil
            : KeptStreams(inv, url: try inv.value(Global.url) ?? Invocation.env("RTDB_URL") ?? "", cacheFile: db.cacheFile)
        defer { streams?.stopAll() }
        // Writes sent by the reads of a refresh are reported like those of its own flushes.
        db.onIncidentalFlushEvent = { try? print($0, out) }
        var connected: Bool? = nil
        var retryMillis = 1000
        var nextTry: Int64 = 0
        var refreshedOnConnect = false
        var lastProbe: Int64 = 0
        /// The server answers: `connected` is said once, before the first line of what it answered.
        func markConnected() throws {
            guard connected != true else { return }
            try out.record([("event", .string("connected"))])
            connected = true
            retryMillis = 1000
            refreshedOnConnect = false
        }
        while Interruption.pending() == nil {
            let now = monotonicMillis()
            if now >= nextTry {
                let pending = try db.queuedCount()
                var reached = true
                if pending > 0 || connected != true || now - lastProbe >= 5000 {
                    lastProbe = now
                    let stop = try db.flush { event in
                        try markConnected()
                        try print(event, out)
                    }
                    if let stop, stop.reason == .offline || stop.reason == .timeout || stop.reason == .unavailable { reached = false }
                    if pending == 0 {
                        // Nothing to send: probe the server with a cheap read.
                        reached = db.probeServer()
                    }
                }
                if reached {
                    try markConnected()
                    if !refreshedOnConnect && !inv.has(writesOnly) {
                        refreshedOnConnect = true
                        try? refreshKept(db, out)
                    }
                    nextTry = now + 200
                } else {
                    let wait = Int(Double(retryMillis) * Double.random(in: 0.7...1.0))
                    if connected != false { try out.record([("event", .string("disconnected")), ("retry_ms", .int(wait))]) }
                    connected = false
                    nextTry = now + Int64(wait)
                    retryMillis = min(30_000, Int(Double(retryMillis) * 1.3))
                }
            }
            streams?.tick { try db.keptQueries() }
            usleep(50_000)
        }
    }
}
