import RTDBCore

/// Writes through the cache: queued first, then (unless `--offline`) sent
/// up to and including their own row. The receipt holds the server's values once it
/// acknowledged the write, else the cache's estimate and why the write waits.
extension OfflineDatabase {
    /// The outcome of a queued write: acknowledged (with the server's values), or still queued.
    struct WriteOutcome {
        var id: Int64
        /// Set when the server applied it: each set's value as stored.
        var answered: [(path: Path, value: Node)]?
        var resent: Bool
        /// Why it is still queued.
        var reason: QueueReason?
    }

    /// Queues a write and (unless `--offline`) flushes up to and including it. A rejection
    /// throws its error (the row is reverted); with `--online`, a write not acknowledged throws
    /// `unavailable`/`timeout`, its row removed if it was never sent.
    func write(cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node) throws -> WriteOutcome {
        let id = try cache.appendWrite(cmd: cmd, kind: kind, path: path, data: data, principal: principal)
        if mode == .offline { return WriteOutcome(id: id, answered: nil, resent: false, reason: .offline) }
        var outcome = WriteOutcome(id: id, answered: nil, resent: false, reason: nil)
        var failure: RTDBError? = nil
        let stop = try flush(through: id, reportedByCaller: id) { event in
            switch event {
            case .acked(let row, let answered, let resent) where row.id == id:
                outcome.answered = answered
                outcome.resent = resent
            case .rejected(let row, let e) where row.id == id:
                // Its own rejection is the command's error.
                failure = e
            default:
                // Rows queued before it, by this or another process: sent on the way.
                onIncidentalFlushEvent?(event)
            }
        }
        if let failure { throw failure }
        if outcome.answered != nil { return outcome }
        guard let stop else {
            // Another process sent it: its outcome is in the cache now.
            if let rejected = try cache.rejections().last(where: { $0.write.id == id }) {
                // Reported here, as this command's error (the sender told of it too).
                try cache.markRejectionsSeen([rejected.seq])
                throw rejected.error
            }
            return WriteOutcome(id: id, answered: [], resent: false, reason: nil)
        }
        if mode == .online {
            if let row = try cache.queuedWrite(id: id), row.attempts == 0 { _ = try cache.dropWrite(id: id) }
            let e = stop.error
            throw RTDBError(e.code == .timeout ? .timeout : e.code.exitStatus == 4 ? e.code : .unavailable,
                            "--online: the write to \(path) was not acknowledged: \(e.message)")
        }
        outcome.reason = stop.reason
        return outcome
    }

    public func commit(_ write: Write) throws -> WriteReceipt {
        switch write {
        case .set(let path, let value):
            return try queue(cmd: "set", kind: .set, path: path, data: value)
        case .remove(let path):
            return try queue(cmd: "remove", kind: .set, path: path, data: .null)
        case .increment(let path, let delta):
            let sv = Node.object([Node.Entry(".sv", .object([Node.Entry("increment", delta)]))])
            return try queue(cmd: "increment", kind: .set, path: path, data: sv)
        case .update(let path, let entries):
            // An empty update writes nothing: nothing is queued.
            if entries.isEmpty { return WriteReceipt(values: []) }
            return try queue(cmd: "update", kind: .update, path: path, data: CacheStore.updateData(entries))
        case .push(let path, let values):
            // Keys are made here, so a resent write never adds a second child.
            var ids = PushIDGenerator()
            let now = estimatedServerTime()
            let items = values.map { Node.Entry(ids.next(now: now), $0) }
            let receipt: WriteReceipt
            if items.count == 1, let only = items.first {
                receipt = try queue(cmd: "push", kind: .set, path: path.appending(only.key), data: only.node)
            } else if !items.isEmpty {
                receipt = try queue(cmd: "push", kind: .update, path: path, data: .object(items))
            } else {
                return WriteReceipt(values: [])
            }
            // One value per new child, in order: the server's (or the estimate), else the value given.
            var aligned = receipt
            aligned.values = items.map { item in
                let at = path.appending(item.key)
                return (at, receipt.values.first { $0.path.same(as: at) }?.value ?? item.node)
            }
            return aligned
        }
    }

    /// Queues one write and reports it: the values the server acknowledged (when another
    /// process sent it, the cache's view of them), or the cache's estimate while it waits.
    private func queue(cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node) throws -> WriteReceipt {
        let outcome = try write(cmd: cmd, kind: kind, path: path, data: data)
        if let answered = outcome.answered, outcome.reason == nil {
            let values = answered.isEmpty ? try estimates(kind, path, data).values : answered
            return WriteReceipt(values: values, resent: outcome.resent)
        }
        let estimate = try estimates(kind, path, data)
        return WriteReceipt(values: estimate.values, queued: WriteReceipt.Queued(id: outcome.id, reason: outcome.reason ?? .offline,
                                                                                 estimated: estimate.estimated,
                                                                                 baseUnknown: estimate.unknownBase))
    }

    /// The cache's view of each set of a write (server values estimated), whether it holds
    /// estimates, and whether one is an increment of a number the cache does not hold.
    func estimates(_ kind: QueuedWrite.Kind, _ path: Path, _ data: Node) throws
        -> (values: [(path: Path, value: Node)], estimated: Bool, unknownBase: Bool) {
        let now = estimatedServerTime()
        let sets: [Path]
        switch kind {
        case .set: sets = [path]
        case .update: sets = data.children.compactMap { e in (try? Path(e.key)).map { path.appending($0) } }
        }
        var estimated = false, unknownBase = false
        var values: [(path: Path, value: Node)] = []
        for p in sets {
            let r = try cache.cachedRead(p, now: now)
            estimated = estimated || r.estimated
            unknownBase = unknownBase || r.unknownBase
            values.append((p, r.value))
        }
        return (values, estimated, unknownBase)
    }
}
