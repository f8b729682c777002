import RTDBCore
import RTDBRemote
import RTDBWire

/// Sending the queue: one process at a time (the flush lock), rows in id
/// order, one request in flight. Consecutive rows that cannot overlap travel as one multi-path
/// update; a batch the server refuses as a whole is sent again row by row, so that only the
/// refused row is rejected. A rejection reverts its row; a refused credential (not a rules
/// denial) pauses the queue until a fresh one; anything else stops it, the row kept.
extension OfflineDatabase {
    /// Sends the queued rows with id ≤ `through` (all when nil), in id order, calling `onEvent`
    /// after each row's outcome has committed. Returns nil when every such row is gone, else why
    /// it stopped. Waits for another flusher up to the lock wait (then `busy`), taking over if
    /// it stops first. A rejection of row `reportedByCaller` (a write's own, which its command
    /// reports as its error) is logged as seen.
    public func flush(through: Int64? = nil, reportedByCaller: Int64? = nil,
                      onEvent: (FlushEvent) throws -> Void = { _ in }) throws -> FlushStop? {
        if mode == .offline {
            return FlushStop(reason: .offline, error: RTDBError(.unavailable, "--offline: the server is not contacted"))
        }
        // Nothing queued (the common case of a read): no lock, no lock file.
        if try !cache.hasQueuedWrites(through: through) { return nil }
        let lock = try FlushLock.acquire(cacheFile: cache.file, seconds: lockWaitSeconds) {
            // Keep waiting while the rows this flush is for are still queued.
            try cache.hasQueuedWrites(through: through)
        }
        guard let lock else {
            if try !cache.hasQueuedWrites(through: through) { return nil }
            return FlushStop(reason: .busy, error: RTDBError(.timeout, "another rtdb process is sending the queued writes of \(cache.file)"))
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
                    return FlushStop(reason: .principalMismatch, error: RTDBError(.principalMismatch,
                        "queued write \(row.id) was made as \(row.principal), but the credential now is \(principal); "
                        + "give that credential, or drop the write with 'rtdb queue drop \(row.id)'"))
                }
                if expired() {
                    if try refresh() { rows = try cache.queuedWrites(through: through); i = 0; continue }
                    return FlushStop(reason: .unauthenticated, error: RTDBError(.unauthenticated,
                        "the ID token has expired; queued writes wait for a fresh one (--auth or --auth-command)"))
                }
                // Connected first: a row is marked sending only when its request can leave, so a
                // server that is simply down never makes a row look resent.
                do {
                    try remote.connect()
                } catch let e as RTDBError {
                    return OfflineDatabase.unreachable(e)
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
                return OfflineDatabase.unreachable(e)
            }
            let resent = before.attempts > 0
            if (200...299).contains(answer.status) {
                let answered = OfflineDatabase.answered(row, answer)
                // The next row goes out at once on this open connection: it is marked sending
                // in the same transaction.
                var next: Int64? = nil
                if i + 1 < rows.count, rows[i + 1].principal == principal, !expired() { next = rows[i + 1].id }
                marked = try cache.acknowledge(id: row.id, store: answered.values, complete: answered.complete,
                                               incomplete: answered.incomplete, beginSending: next)
                try onEvent(.acked(row, answered: answered.values, resent: resent))
                i += 1
                continue
            }
            let failure = remote.failure(for: answer, what: "the queued \(row.cmd) of \(row.path)")
            switch failure.kind {
            case .refused:
                try cache.reject(id: row.id, error: failure.error, seen: row.id == reportedByCaller)
                try onEvent(.rejected(row, failure.error))
            case .credentialRefused:
                // Refused before it was applied: pending and unsent again.
                try cache.unmarkSending(ids: [row.id])
                if try refresh() { continue }
                return FlushStop(reason: .unauthenticated, error: RTDBError(.unauthenticated,
                    "\(remote.display) refused the credential (\(failure.bodyStart.prefix(120))); queued writes wait for a fresh one"))
            case .stale, .unavailable:
                return FlushStop(reason: .unavailable, error: remote.failure(for: answer, what: "the queued write \(row.id) to \(row.path)").error)
            }
            i += 1
        }
        return nil
    }

    /// A flush on the way to other work (see `onIncidentalFlushEvent`, which hears of each
    /// outcome). Its stop is not the caller's failure: what was not sent stays queued.
    func flushIncidentally() {
        _ = try? flush { event in onIncidentalFlushEvent?(event) }
    }

    /// The stop of a flush whose request could not reach the server.
    static func unreachable(_ e: RTDBError) -> FlushStop {
        FlushStop(reason: e.code == .timeout ? .timeout : .offline, error: e)
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
        case stop(FlushStop)
    }

    /// Sends `batch` as one PATCH at the root.
    private func sendBatch(_ batch: [QueuedWrite], onEvent: (FlushEvent) throws -> Void) throws -> BatchOutcome {
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
            return .stop(OfflineDatabase.unreachable(e))
        }
        guard (200...299).contains(answer.status) else {
            let failure = remote.failure(for: answer, what: "the queued writes \(batch[0].id)…\(batch[batch.count - 1].id)")
            switch failure.kind {
            case .refused, .credentialRefused:
                try cache.unmarkSending(ids: batch.map { $0.id })
                return .split
            case .stale, .unavailable:
                return .stop(FlushStop(reason: .unavailable, error: failure.error))
            }
        }
        let members = (try? answer.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }) ?? nil
        var acks: [CacheStore.Acknowledgement] = []
        for r in batch {
            var ack = CacheStore.Acknowledgement(id: r.id, store: [], complete: [])
            for s in r.sets {
                let key = s.path.unrooted
                if let m = members?.last(where: { $0.key == key }) {
                    ack.store.append((s.path, OfflineDatabase.stored(s.value, answered: m.node)))
                    ack.complete.append(s.path)
                } else if !ServerValues.containsPlaceholder(s.value) {
                    ack.store.append((s.path, s.value))
                    ack.complete.append(s.path)
                } else {
                    ack.incomplete.append(s.path)
                }
            }
            acks.append(ack)
        }
        try cache.acknowledge(batch: acks)
        for (r, (b, a)) in zip(batch, zip(befores, acks)) {
            try onEvent(.acked(r, answered: a.store, resent: b.attempts > 0))
        }
        return .acked
    }

    /// What the server stored for a value it acknowledged: its answer, which leaves priorities
    /// out; so a value sent with priorities and without server values is stored as sent.
    static func stored(_ sent: Node, answered: Node) -> Node {
        sent.hasPriorities && !ServerValues.containsPlaceholder(sent) ? sent : answered
    }

    /// Fetches a fresh credential once per process; true when it did.
    func refresh() throws -> Bool {
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
                values.append((row.path, stored(row.data, answered: v)))
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
                    values.append((full, stored(e.node, answered: m.node)))
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
}
