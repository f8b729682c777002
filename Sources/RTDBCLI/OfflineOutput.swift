import RTDBCore
import RTDBEngine
import RTDBOffline

/// How the write and read commands print through an offline cache (offline.md §2.2, §2.4):
/// an acknowledged write prints the usual line (plus `"resent":true` when it may have been
/// applied twice); a write still queued adds `"queued":true,"id":N,"reason":R` with the local
/// estimate as its value (and `"estimated":true` when it holds server values).
enum OfflineOutput {
    /// One write through the cache: a set (also `remove`, `increment`, `push` of one value) at
    /// `path`, or an update. `lines` turns the answered values into the printed records.
    static func write(_ inv: Invocation, _ db: OfflineDatabase, cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node,
                      lines: ([(path: Path, value: Node)]) -> [[(String, Field)]]) throws {
        let outcome = try db.write(cmd: cmd, kind: kind, path: path, data: data)
        let out = inv.output(committed: path)
        if let answered = outcome.answered, outcome.reason == nil {
            let values = answered.isEmpty ? try estimates(db, kind, path, data).values : answered
            for var fields in lines(values) {
                if outcome.resent { fields.append(("resent", .bool(true))) }
                try out.record(fields)
            }
        } else {
            let (values, estimated) = try estimates(db, kind, path, data)
            for var fields in lines(values) {
                fields += [("queued", .bool(true)), ("id", .int(Int(outcome.id))), ("reason", .string(outcome.reason ?? "offline"))]
                if estimated { fields.append(("estimated", .bool(true))) }
                try out.record(fields)
            }
        }
        try out.flush()
    }

    /// The cache's view of each set of a write (server values estimated).
    static func estimates(_ db: OfflineDatabase, _ kind: QueuedWrite.Kind, _ path: Path, _ data: Node) throws -> (values: [(path: Path, value: Node)], estimated: Bool) {
        let now = db.estimatedServerTime()
        let sets: [Path]
        switch kind {
        case .set: sets = [path]
        case .update: sets = data.children.compactMap { e in (try? Path(e.key)).map { path.appending($0) } }
        }
        var estimated = false
        var values: [(path: Path, value: Node)] = []
        for p in sets {
            let r = try db.cache.cachedRead(p, now: now)
            estimated = estimated || r.estimated
            values.append((p, r.value))
        }
        return (values, estimated)
    }

    /// Reads through the cache for `get`/`query`: a complete answer returns; an incomplete
    /// one is `unavailable`, or with `--partial` printed by the caller and then `incomplete`.
    static func read(_ inv: Invocation, _ db: OfflineDatabase, _ path: Path, query: Query?) throws -> (value: Node, complete: Bool) {
        let r = try db.read(path, query: query)
        if !r.complete && !inv.has(Registry.partialOption) {
            throw RTDBError(.unavailable, "\(path) is not in the offline cache \(db.cache.file) in full"
                            + (db.mode == .offline ? "" : " and the server could not be reached")
                            + "; --partial prints what it holds")
        }
        return (r.value, r.complete)
    }

    /// `/.info` with an offline cache (offline.md §2.9): `--offline` is not connected and
    /// shows the last measured clock offset (null if none); otherwise the server is asked, and
    /// the offset it gives is kept in the cache for the estimates of server values.
    static func info(_ path: Path, _ db: OfflineDatabase) throws -> Node {
        var info: Node
        if db.mode == .offline {
            let offset = try db.cache.serverTimeOffset()
            info = Node.object([Node.Entry("connected", .bool(false)),
                                Node.Entry("serverTimeOffset", offset.map { Node.int($0) } ?? .null)])
        } else {
            info = try db.remote.realtimeInfo()
            if case .int(let offset) = info.child("serverTimeOffset") { try? db.cache.setServerTimeOffset(offset) }
        }
        return info.child(at: Path(validatedKeys: Array(path.keys.dropFirst())))
    }

    /// The error that ends a `--partial` read after its output.
    static func incomplete(_ path: Path) -> RTDBError {
        RTDBError(.incomplete, "\(path): the offline cache holds only part of it; what it holds was printed")
    }
}
