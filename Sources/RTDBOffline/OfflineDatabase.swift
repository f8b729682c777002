import RTDBCore
import RTDBEngine
import RTDBRemote
import RTDBWire

/// A remote database with an offline cache (offline.md Part 2): every write is queued in the
/// cache file first and then sent in order by whichever process holds the flush lock; reads
/// ask the server and keep its answer, or fall back to the cache.
///
/// Invariants: a queued row leaves the queue only in the transaction that stores its
/// acknowledged value (or logs its rejection), so a crash loses nothing and sends a row at
/// most once more (`resent`); rows are sent in id order, one request in flight, and a row is
/// never skipped: a failure stops the flush.
public final class OfflineDatabase {
    public enum Mode: Sendable { case auto, offline, online }

    public let cache: EmbeddedDatabase
    public let remote: RemoteDatabase
    public let mode: Mode
    /// How long a write waits for another process's flush to reach its row.
    let lockWaitSeconds: Double
    /// Fetches a fresh credential (`--auth-command`), or nil when there is no way to.
    let refreshCredential: (() throws -> Credential)?
    /// The principal queued writes are made as, from the current credential.
    public private(set) var principal: String
    private var refreshed = false

    public init(cache: EmbeddedDatabase, remote: RemoteDatabase, mode: Mode, lockWaitSeconds: Double,
                refreshCredential: (() throws -> Credential)?) {
        self.cache = cache
        self.remote = remote
        self.mode = mode
        self.lockWaitSeconds = lockWaitSeconds
        self.refreshCredential = refreshCredential
        self.principal = Principal.of(remote.credential)
    }

    /// The local clock plus the last known server offset: the estimate of server time.
    public func estimatedServerTime() -> Int64 {
        OfflineClock.wallMillis() + ((try? cache.serverTimeOffset()) ?? nil ?? 0)
    }

    // MARK: flushing

    /// Why a flush stopped before its last row.
    public struct Stop: Error, Sendable {
        /// `offline`, `timeout`, `busy`, `unauthenticated`, `principal_mismatch` or `unavailable`.
        public var reason: String
        public var error: RTDBError
    }

    /// What happened to one row.
    public enum Event {
        /// Applied by the server: `answered` holds each set's value as the server stored it.
        case acked(QueuedWrite, answered: [(path: Path, value: Node)], resent: Bool)
        case rejected(QueuedWrite, RTDBError)
    }

    /// Sends the queued rows with id ≤ `through` (all when nil), in id order, calling `onEvent`
    /// after each row's outcome has committed. Returns nil when every such row is gone, else why
    /// it stopped. Waits for another flusher up to the lock wait (then `busy`), taking over if
    /// it stops first.
    public func flush(through: Int64? = nil, onEvent: (Event) throws -> Void = { _ in }) throws -> Stop? {
        if mode == .offline {
            return Stop(reason: "offline", error: RTDBError(.unavailable, "--offline: the server is not contacted"))
        }
        // Nothing queued (the common case of a read): no lock, no lock file.
        if try !cache.hasQueuedWrites(through: through) { return nil }
        let lock = try FlushLock.acquire(cacheFile: cache.file, seconds: lockWaitSeconds) {
            // Keep waiting while the rows this flush is for are still queued.
            try cache.hasQueuedWrites(through: through)
        }
        guard let lock else {
            if try !cache.hasQueuedWrites(through: through) { return nil }
            return Stop(reason: "busy", error: RTDBError(.timeout, "another rtdb process is sending the queued writes of \(cache.file)"))
        }
        defer { withExtendedLifetime(lock) {} }
        var rows = try cache.queuedWrites(through: through)
        let offset = (try? cache.serverTimeOffset()) ?? nil ?? 0
        func expired() -> Bool {
            guard let exp = Principal.expiryMillis(remote.credential) else { return false }
            return exp <= OfflineClock.wallMillis() + offset
        }
        /// The row already marked sending in the previous row's acknowledgement (its state before).
        var marked: QueuedWrite? = nil
        /// After a batch the server refused as a whole, its rows go one by one up to here.
        var soloUntil = 0
        var i = 0
        while i < rows.count {
            let row = rows[i]
            let before: QueuedWrite
            if let m = marked, m.id == row.id {
                before = m
            } else {
                if row.principal != principal {
                    return Stop(reason: "principal_mismatch", error: RTDBError(.principalMismatch,
                        "queued write \(row.id) was made as \(row.principal), but the credential now is \(principal); "
                        + "give that credential, or drop the write with 'rtdb queue drop \(row.id)'"))
                }
                if expired() {
                    if try refresh() { rows = try cache.queuedWrites(through: through); i = 0; continue }
                    return Stop(reason: "unauthenticated", error: RTDBError(.unauthenticated,
                        "the ID token has expired; queued writes wait for a fresh one (--auth or --auth-command)"))
                }
                // Connected first: a row is marked sending only when its request can leave, so a
                // server that is simply down never makes a row look resent.
                do {
                    try remote.connect()
                } catch let e as RTDBError {
                    return Stop(reason: e.code == .timeout ? "timeout" : "offline", error: e)
                }
                if i >= soloUntil {
                    let batch = OfflineDatabase.coalesce(rows, from: i, principal: principal)
                    if batch.count > 1 {
                        switch try sendBatch(batch, onEvent: onEvent) {
                        case .acked: i += batch.count; continue
                        case .split: soloUntil = i + batch.count
                        case .stop(let stop): return stop
                        }
                    }
                }
                guard let b = try cache.beginSending(id: row.id) else { i += 1; continue }
                before = b
            }
            marked = nil
            let answer: HTTPClientResponse
            do {
                answer = try send(row)
            } catch let e as RTDBError {
                return Stop(reason: e.code == .timeout ? "timeout" : "offline", error: e)
            }
            let resent = before.attempts > 0
            switch answer.status {
            case 200...299:
                let answered = OfflineDatabase.answered(row, answer)
                // The next row goes out at once on this open connection: it is marked sending
                // in the same transaction.
                var next: Int64? = nil
                if i + 1 < rows.count, rows[i + 1].principal == principal, !expired() { next = rows[i + 1].id }
                marked = try cache.acknowledge(id: row.id, store: answered.values, complete: answered.complete,
                                               incomplete: answered.incomplete, beginSending: next)
                try onEvent(.acked(row, answered: answered.values, resent: resent))
            case 400, 403, 413:
                let e = rejection(row, answer)
                try cache.reject(id: row.id, code: e.code.rawValue, message: e.message)
                try onEvent(.rejected(row, e))
            case 401:
                let said = RemoteTarget.ascii(lowercased: String(decoding: answer.body.prefix(400), as: UTF8.self))
                if said.contains("permission denied") {
                    let e = rejection(row, answer)
                    try cache.reject(id: row.id, code: e.code.rawValue, message: e.message)
                    try onEvent(.rejected(row, e))
                } else {
                    // Refused before it was applied: pending and unsent again.
                    try cache.unmarkSending(ids: [row.id])
                    if try refresh() { continue }
                    return Stop(reason: "unauthenticated", error: RTDBError(.unauthenticated,
                        "\(remote.target.display) refused the credential (\(said.prefix(120))); queued writes wait for a fresh one"))
                }
            default:
                return Stop(reason: "unavailable", error: remote.error(for: answer, what: "the queued write \(row.id) to \(row.path)"))
            }
            i += 1
        }
        return nil
    }

    /// Most rows one batch carries, and most bytes of its body.
    static let batchRows = 500
    static let batchBytes = 1 << 20

    /// The rows from `start` on that can go as one multi-path update: consecutive, made by
    /// `principal`, none at the root, and no path of one at, above or below a path of
    /// another. Applied together they leave what they would leave one after another, and the
    /// server applies an update whole or not at all, so order and atomicity hold.
    static func coalesce(_ rows: [QueuedWrite], from start: Int, principal: String) -> [QueuedWrite] {
        var batch: [QueuedWrite] = []
        var paths: [Path] = []
        var bytes = 0
        var j = start
        while j < rows.count && batch.count < batchRows {
            let r = rows[j]
            let sets = r.sets
            guard r.principal == principal, !sets.isEmpty, sets.allSatisfy({ !$0.path.isRoot }) else { break }
            if sets.contains(where: { s in paths.contains { $0.contains(s.path) || s.path.contains($0) } }) { break }
            // Within one row, an update's paths never overlap (checked when it was made).
            let size = sets.reduce(0) { $0 + $1.path.description.utf8.count + JSONWriter.string($1.value).utf8.count + 4 }
            if !batch.isEmpty && bytes + size > batchBytes { break }
            batch.append(r)
            paths += sets.map { $0.path }
            bytes += size
            j += 1
        }
        return batch
    }

    enum BatchOutcome {
        case acked
        /// Refused as a whole (nothing applied): send the rows one by one.
        case split
        case stop(Stop)
    }

    /// Sends `batch` as one PATCH at the root.
    private func sendBatch(_ batch: [QueuedWrite], onEvent: (Event) throws -> Void) throws -> BatchOutcome {
        let befores = try cache.beginSending(ids: batch.map { $0.id })
        guard befores.count == batch.count else {
            try cache.unmarkSending(ids: befores.map { $0.id })
            return .split
        }
        var entries: [Node.Entry] = []
        for r in batch {
            for s in r.sets { entries.append(Node.Entry(s.path.unrooted, s.value)) }
        }
        let idempotent = entries.allSatisfy { !ServerValues.containsPlaceholder($0.node) }
        let answer: HTTPClientResponse
        do {
            answer = try remote.request("PATCH", .root, body: RemoteDatabase.updateBody(entries), idempotent: idempotent)
        } catch let e as RTDBError {
            return .stop(Stop(reason: e.code == .timeout ? "timeout" : "offline", error: e))
        }
        switch answer.status {
        case 200...299:
            let members = (try? answer.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }) ?? nil
            var acks: [(id: Int64, store: [(path: Path, value: Node)], complete: [Path], incomplete: [Path])] = []
            for r in batch {
                var store: [(path: Path, value: Node)] = []
                var complete: [Path] = []
                var incomplete: [Path] = []
                for s in r.sets {
                    let key = s.path.unrooted
                    if let m = members?.last(where: { $0.key == key }) {
                        store.append((s.path, m.node))
                        complete.append(s.path)
                    } else if !ServerValues.containsPlaceholder(s.value) {
                        store.append((s.path, s.value))
                        complete.append(s.path)
                    } else {
                        incomplete.append(s.path)
                    }
                }
                acks.append((r.id, store, complete, incomplete))
            }
            try cache.acknowledge(batch: acks)
            for (r, (b, a)) in zip(batch, zip(befores, acks)) {
                try onEvent(.acked(r, answered: a.store, resent: b.attempts > 0))
            }
            return .acked
        case 400, 401, 403, 413:
            try cache.unmarkSending(ids: batch.map { $0.id })
            return .split
        default:
            return .stop(Stop(reason: "unavailable", error: remote.error(for: answer, what: "the queued writes \(batch[0].id)…\(batch[batch.count - 1].id)")))
        }
    }

    /// Fetches a fresh credential once per process; true when it did.
    private func refresh() throws -> Bool {
        guard !refreshed, let refreshCredential else { return false }
        refreshed = true
        let fresh = try refreshCredential()
        remote.credential = fresh
        principal = Principal.of(fresh)
        return true
    }

    private func send(_ row: QueuedWrite) throws -> HTTPClientResponse {
        switch row.kind {
        case .set:
            let idempotent = !ServerValues.containsPlaceholder(row.data)
            if row.data.isNull { return try remote.request("DELETE", row.path, idempotent: true) }
            return try remote.request("PUT", row.path, body: RemoteDatabase.body(row.data), idempotent: idempotent)
        case .update:
            let idempotent = !ServerValues.containsPlaceholder(row.data)
            return try remote.request("PATCH", row.path, body: RemoteDatabase.updateBody(row.data.children), idempotent: idempotent)
        }
    }

    private func rejection(_ row: QueuedWrite, _ answer: HTTPClientResponse) -> RTDBError {
        var e = remote.error(for: answer, what: "the queued \(row.cmd) of \(row.path)")
        if answer.status == 413 { e.code = .tooLarge }
        return e
    }

    /// What an acknowledgement stores: the server's answer per set (server values resolved),
    /// each set's path complete; a value that cannot be known (an unreadable answer to a write
    /// with server values) makes its path incomplete instead.
    static func answered(_ row: QueuedWrite, _ answer: HTTPClientResponse) -> (values: [(path: Path, value: Node)], complete: [Path], incomplete: [Path]) {
        var values: [(path: Path, value: Node)] = []
        var complete: [Path] = []
        var incomplete: [Path] = []
        switch row.kind {
        case .set:
            if let v = try? JSONReader.parse(answer.body), !(v.isNull && !row.data.isNull) {
                values.append((row.path, v))
                complete.append(row.path)
            } else if !ServerValues.containsPlaceholder(row.data) {
                values.append((row.path, row.data))
                complete.append(row.path)
            } else {
                incomplete.append(row.path)
            }
        case .update:
            let members = (try? answer.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }) ?? nil
            for e in row.data.children {
                guard let rel = try? Path(e.key) else { continue }
                let full = row.path.appending(rel)
                if let m = members?.last(where: { $0.key == e.key }) {
                    values.append((full, m.node))
                    complete.append(full)
                } else if !ServerValues.containsPlaceholder(e.node) {
                    values.append((full, e.node))
                    complete.append(full)
                } else {
                    incomplete.append(full)
                }
            }
        }
        return (values, complete, incomplete)
    }

    // MARK: writes

    /// The outcome of a write: acknowledged (with the server's values), or still queued.
    public struct WriteOutcome {
        public var id: Int64
        /// Set when the server applied it: each set's value as stored.
        public var answered: [(path: Path, value: Node)]?
        public var resent: Bool
        /// Why it is still queued (`offline`, `timeout`, `busy`, `unauthenticated`, …).
        public var reason: String?
    }

    /// Queues a write and (unless `--offline`) flushes up to and including it. A rejection
    /// throws its error (the row is reverted); with `--online`, a write not acknowledged throws
    /// `unavailable`/`timeout`, its row removed if it was never sent.
    public func write(cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node) throws -> WriteOutcome {
        let id = try cache.appendWrite(cmd: cmd, kind: kind, path: path, data: data, principal: principal)
        if mode == .offline { return WriteOutcome(id: id, answered: nil, resent: false, reason: "offline") }
        var outcome = WriteOutcome(id: id, answered: nil, resent: false, reason: nil)
        var failure: RTDBError? = nil
        let stop = try flush(through: id) { event in
            switch event {
            case .acked(let row, let answered, let resent) where row.id == id:
                outcome.answered = answered
                outcome.resent = resent
            case .rejected(let row, let e) where row.id == id:
                failure = e
            default:
                break
            }
        }
        if let failure { throw failure }
        if outcome.answered != nil { return outcome }
        if stop == nil {
            // Another process sent it: its outcome is in the cache now.
            if let rejected = try cache.rejections().last(where: { $0.write.id == id }) {
                throw RTDBError(RTDBError.Code(rawValue: rejected.code) ?? .permissionDenied, rejected.message)
            }
            return WriteOutcome(id: id, answered: [], resent: false, reason: nil)
        }
        let reason = stop?.reason ?? "unavailable"
        if mode == .online {
            if let row = try cache.queuedWrite(id: id), row.attempts == 0 { _ = try cache.dropWrite(id: id) }
            let e = stop?.error ?? RTDBError(.unavailable, "the write was not acknowledged")
            throw RTDBError(e.code == .timeout ? .timeout : e.code.exitStatus == 4 ? e.code : .unavailable,
                            "--online: the write to \(path) was not acknowledged: \(e.message)")
        }
        outcome.reason = reason
        return outcome
    }

    // MARK: reads

    /// A read's answer.
    public struct ReadResult {
        /// With a filtered query, the children the cache knows (the caller applies the window).
        public var value: Node
        public var complete: Bool
        public var estimated: Bool
        /// Answered by the server (else from the cache).
        public var fromServer: Bool
    }

    /// Reads `path` (with `query` when filtered) by the mode's rule (offline.md §2.4): auto
    /// flushes, asks the server and stores its answer as a complete tracked query, falling back
    /// to the cache when the server cannot be reached; `--offline` reads the cache; `--online`
    /// requires the server. 401/403 are errors, never answered from the cache.
    public func read(_ path: Path, query: Query?) throws -> ReadResult {
        let params = TrackedParams.canonical(query)
        if mode == .auto, let r = try cache.streamedRead(path, params: params, now: estimatedServerTime()) {
            // A live watch streams this location into the cache: no request needed.
            return ReadResult(value: r.value, complete: true, estimated: false, fromServer: false)
        }
        if mode != .offline {
            _ = try? flush()
            do {
                try remote.connect()   // a server that is down answers at once, without retries
                try fetch(path, query: query, params: params)
            } catch let e as RTDBError where mode == .auto && (e.code == .unavailable || e.code == .timeout) {
                // The server cannot be reached: the cache answers.
            }
        }
        let r = try cache.cachedRead(path, params: params, now: estimatedServerTime())
        if mode == .offline {
            // Every read sets last_use_ms (a read from the server did when it stored the answer).
            try? cache.touchQueries(r.usedQueries)
        }
        return ReadResult(value: r.value, complete: r.complete, estimated: r.estimated, fromServer: mode != .offline)
    }

    /// Asks the server and stores the answer (a default query with its ETag, reused as
    /// `if-none-match`; a filtered query with its keys).
    func fetch(_ path: Path, query: Query?, params: String) throws {
        if params == EmbeddedDatabase.defaultParams {
            var headers: [(name: String, value: String)] = [("X-Firebase-ETag", "true")]
            let stored = try cache.storedETag(path)
            if let stored { headers.append(("if-none-match", stored)) }
            let r = try remote.request("GET", path, headers: headers, idempotent: true)
            if r.status == 304, stored != nil {
                try cache.touchQuery(path, params: params)
                return
            }
            guard r.status == 200 else { throw remote.error(for: r, what: "a read of \(path)") }
            let v = try parse(r, path)
            try cache.storeServerAnswer(path, params: params, value: v, etag: r.header("etag"))
        } else if let query {
            let r = try remote.request("GET", path, params: RESTQuery.parameters(query), idempotent: true)
            guard r.status == 200 else { throw remote.error(for: r, what: "a query of \(path)") }
            let v = try parse(r, path)
            try cache.storeServerAnswer(path, params: params, value: Node.object(normalizing: query.window(of: v)))
        }
    }

    private func parse(_ r: HTTPClientResponse, _ path: Path) throws -> Node {
        do { return try JSONReader.parse(r.body) } catch {
            throw RTDBError(.unavailable, "\(remote.target.display) answered a read of \(path) with a body that is not JSON")
        }
    }
}
