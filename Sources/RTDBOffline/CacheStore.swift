import RTDBCore
import RTDBEngine

/// The store of an offline cache: the queue of writes (this file), tracked
/// queries and the layered read (CacheQueries.swift), kept queries and the purge
/// (CachePolicy.swift), over the cache file's own handle, whose companion is its `CacheFile`.
/// Every method is one transaction; any number of processes may use one file at once.
public final class CacheStore {
    /// The cache file's handle: its tree is the server cache.
    public let db: EmbeddedDatabase
    let owner: CacheFile
    /// The size limit (`--cache-size`); when set, storing server data counts towards the
    /// automatic purge check (CachePolicy.swift).
    public var limit: Int?

    /// How many rejections `cache_rejections` keeps.
    static let rejectionsKept: Int64 = 100

    /// Makes `db` the cache of the database at `url` (shown without credentials). Nothing is
    /// opened: the file is checked on first use.
    public init(_ db: EmbeddedDatabase, url: String, namespace: String, limit: Int? = nil) {
        self.db = db
        self.owner = CacheFile(url: url, namespace: namespace)
        self.limit = limit
        db.companion = owner
    }

    public var file: String { db.file }
    public var url: String { owner.url }

    /// Runs `body` in a read transaction on the cache's tables, or answers `empty` while the
    /// file or its cache tables do not exist.
    func reading<T>(_ empty: T, _ body: (FileTransaction) throws -> T) throws -> T {
        try db.readTransaction(empty) { t in try owner.readable(t) ? try body(t) : empty }
    }

    // MARK: the queue

    /// Appends a write to the queue in one `BEGIN IMMEDIATE` transaction and returns its id.
    /// `data` is stored unresolved (server values and priorities kept); an update's data is
    /// `updateData(_:)` of its entries, so that deletions (nulls) are kept.
    public func appendWrite(cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node, principal: String) throws -> Int64 {
        try db.writeTransaction { t in try CacheStore.append(t, cmd: cmd, kind: kind, path: path, data: data, principal: principal) }
    }

    static func append(_ t: FileTransaction, cmd: String, kind: QueuedWrite.Kind, path: Path, data: Node, principal: String) throws -> Int64 {
        let s = try t.connection.statement("INSERT INTO cache_writes(cmd, kind, path, data, created_ms, principal) VALUES(?1, ?2, ?3, ?4, ?5, ?6)")
        s.bind(1, text: cmd)
        s.bind(2, text: kind.rawValue)
        s.bind(3, text: path.description)
        s.bind(4, text: JSONWriter.string(data, export: true))
        s.bind(5, int: t.now())
        s.bind(6, text: principal)
        try s.run()
        let id = t.connection.lastInsertRowID
        // A queue change changes what the cache shows at `path`: watchers wake.
        try t.touch(path)
        return id
    }

    /// The data of a queued update: an object of relative paths, nulls kept.
    public static func updateData(_ entries: [(path: Path, value: Node)]) -> Node {
        .object(entries.map { Node.Entry($0.path.unrooted, $0.value) })
    }

    static let writeColumns = "id, cmd, kind, path, data, state, attempts, created_ms, principal"

    static func queuedWrite(_ s: Statement) throws -> QueuedWrite {
        let kind = QueuedWrite.Kind(rawValue: s.string(2)) ?? .set
        // An update keeps its nulls (deletions) and its keys as written.
        let data: Node = kind == .update ? .object(try JSONReader.parseEntries(s.string(4)) ?? []) : try JSONReader.parse(s.string(4))
        return QueuedWrite(id: s.int(0), cmd: s.string(1), kind: kind,
                           path: try Path(s.string(3)), data: data,
                           state: QueuedWrite.State(rawValue: s.string(5)) ?? .pending, attempts: Int(s.int(6)),
                           createdMillis: s.int(7), principal: s.string(8))
    }

    /// The queued writes in id order (those with id ≤ `through` when given).
    public func queuedWrites(through: Int64? = nil) throws -> [QueuedWrite] {
        try reading([]) { t in try queued(t, through: through) }
    }

    func queued(_ t: FileTransaction, through: Int64?) throws -> [QueuedWrite] {
        let s = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE id <= ?1 ORDER BY id")
        defer { s.reset() }
        s.bind(1, int: through ?? Int64.max)
        var out: [QueuedWrite] = []
        while try s.step() { out.append(try CacheStore.queuedWrite(s)) }
        return out
    }

    /// The queued writes made at `path`, at one of its `ancestors` or below `path`, in id
    /// order: the only ones that can change what `path` holds (an update's sets are below its path).
    func queued(_ t: FileTransaction, touching path: Path, ancestors: [Path]) throws -> [QueuedWrite] {
        var out: [QueuedWrite] = []
        let at = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE path = ?1")
        for p in ancestors {
            at.reset()
            at.bind(1, text: p.description)
            while try at.step() { out.append(try CacheStore.queuedWrite(at)) }
        }
        at.reset()
        let prefix = path.isRoot ? "/" : path.description + "/"
        let below = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE path > ?1 AND path < ?2")
        defer { below.reset() }
        below.bind(1, text: prefix)
        below.bind(2, text: String(prefix.dropLast()) + "0")   // "0" follows "/"
        while try below.step() { out.append(try CacheStore.queuedWrite(below)) }
        return out.sorted { $0.id < $1.id }
    }

    /// The queued write `id`, or nil when it is gone (acknowledged, rejected or dropped).
    public func queuedWrite(id: Int64) throws -> QueuedWrite? {
        try reading(nil) { t in
            let s = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE id = ?1")
            defer { s.reset() }
            s.bind(1, int: id)
            return try s.step() ? try CacheStore.queuedWrite(s) : nil
        }
    }

    /// True when a write with id ≤ `through` (any, when nil) is queued.
    public func hasQueuedWrites(through: Int64? = nil) throws -> Bool {
        try reading(false) { t in
            let s = try t.connection.statement("SELECT 1 FROM cache_writes WHERE id <= ?1 LIMIT 1")
            defer { s.reset() }
            s.bind(1, int: through ?? Int64.max)
            return try s.step()
        }
    }

    /// The number of queued writes.
    public func queuedCount() throws -> Int {
        try reading(0) { t in Int(try t.connection.integer("SELECT count(*) FROM cache_writes") ?? 0) }
    }

    /// Marks write `id` as being sent (`state = sending`, `attempts + 1`) and commits; returns
    /// the row as it was before, or nil when it is gone.
    public func beginSending(id: Int64) throws -> QueuedWrite? {
        try db.writeTransaction { t in try markSending(t, id) }
    }

    /// Marks the rows `ids` as being sent together in one transaction; returns those found, as
    /// they were before, in the order given.
    public func beginSending(ids: [Int64]) throws -> [QueuedWrite] {
        try db.writeTransaction { t in try ids.compactMap { try markSending(t, $0) } }
    }

    /// Undoes `beginSending(ids:)` for rows whose request was answered with a refusal of the
    /// whole: nothing of them was applied, so they are pending and unsent again.
    public func unmarkSending(ids: [Int64]) throws {
        try db.writeTransaction { t in
            let u = try t.connection.statement("UPDATE cache_writes SET state = 'pending', attempts = max(attempts - 1, 0) WHERE id = ?1")
            for id in ids {
                u.reset()
                u.bind(1, int: id)
                try u.run()
            }
        }
    }

    /// One row's acknowledgement in a batch: the values to store (as the server holds them),
    /// the paths to mark complete, and those whose value could not be known (they lose
    /// completeness).
    public struct Acknowledgement {
        public var id: Int64
        public var store: [(path: Path, value: Node)]
        public var complete: [Path]
        public var incomplete: [Path]

        public init(id: Int64, store: [(path: Path, value: Node)], complete: [Path], incomplete: [Path] = []) {
            self.id = id
            self.store = store
            self.complete = complete
            self.incomplete = incomplete
        }
    }

    /// Acknowledges several rows at once (one request carried them all), in one transaction.
    public func acknowledge(batch: [Acknowledgement]) throws {
        try db.writeTransaction { t in
            let d = try t.connection.statement("DELETE FROM cache_writes WHERE id = ?1")
            var stored: [(path: Path, value: Node)] = []
            for row in batch {
                d.reset()
                d.bind(1, int: row.id)
                try d.run()
                for s in row.store { try t.write(s.path, s.value) }
                stored += row.store
            }
            if !stored.isEmpty {
                try t.log(stored.count > FileTransaction.logMaxPaths ? [.root] : stored.map { $0.path }, .update(.root, stored))
            }
            let now = t.now()
            for row in batch {
                for p in row.complete { try track(t, p, TrackedParams.defaultParams, complete: true, keys: nil, etag: nil, now: now) }
                for p in row.incomplete { try dropCompleteness(t, p) }
            }
            if !stored.isEmpty { try countCacheUpdate(t, bytes: stored.reduce(0) { $0 + CacheStore.approximateBytes($1.value) },
                                                     protect: stored.map { CachedQuery(path: $0.path, params: TrackedParams.defaultParams) }) }
        }
    }

    /// The server acknowledged write `id`: in one transaction, deletes the row, stores each of
    /// `store` (values as the server holds them) in the server cache and marks each of
    /// `complete` as a complete default query. `incomplete` paths lose completeness instead
    /// (a value that could not be read back). With `beginSending`, that row is marked as
    /// being sent in the same transaction (one commit per row for a flusher that goes on at
    /// once); its row as it was before is returned (nil when it is gone).
    @discardableResult
    public func acknowledge(id: Int64, store: [(path: Path, value: Node)], complete: [Path], incomplete: [Path] = [],
                            beginSending next: Int64? = nil) throws -> QueuedWrite? {
        try db.writeTransaction { t in
            let d = try t.connection.statement("DELETE FROM cache_writes WHERE id = ?1")
            d.bind(1, int: id)
            try d.run()
            for s in store {
                try t.write(s.path, s.value)
            }
            if !store.isEmpty {
                try t.log(store.map { $0.path }, store.count == 1 ? .set(store[0].path, store[0].value) : .update(.root, store))
            } else {
                try t.touch(.root)
            }
            let now = t.now()
            for p in complete { try track(t, p, TrackedParams.defaultParams, complete: true, keys: nil, etag: nil, now: now) }
            for p in incomplete { try dropCompleteness(t, p) }
            if !store.isEmpty { try countCacheUpdate(t, bytes: store.reduce(0) { $0 + CacheStore.approximateBytes($1.value) },
                                                    protect: store.map { CachedQuery(path: $0.path, params: TrackedParams.defaultParams) }) }
            guard let next else { return nil }
            return try markSending(t, next)
        }
    }

    private func markSending(_ t: FileTransaction, _ id: Int64) throws -> QueuedWrite? {
        let s = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE id = ?1")
        s.bind(1, int: id)
        guard try s.step() else { s.reset(); return nil }
        let row = try CacheStore.queuedWrite(s)
        s.reset()
        let u = try t.connection.statement("UPDATE cache_writes SET state = 'sending', attempts = attempts + 1 WHERE id = ?1")
        u.bind(1, int: id)
        try u.run()
        return row
    }

    /// Removes write `id` and logs it as rejected with `error` (the last 100 are kept), marked
    /// seen when `seen` (its own command reports it as its error). Returns the row, or nil when
    /// it was already gone.
    @discardableResult
    public func reject(id: Int64, error: RTDBError, seen: Bool = false) throws -> QueuedWrite? {
        try db.writeTransaction { t in
            guard let row = try deleteRow(t, id) else { return nil }
            let ins = try t.connection.statement("""
                INSERT INTO cache_rejections(id, cmd, kind, path, data, principal, created_ms, attempts, code, error, at_ms)
                VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """)
            ins.bind(1, int: row.id)
            ins.bind(2, text: row.cmd)
            ins.bind(3, text: row.kind.rawValue)
            ins.bind(4, text: row.path.description)
            ins.bind(5, text: JSONWriter.string(row.data, export: true))
            ins.bind(6, text: row.principal)
            ins.bind(7, int: row.createdMillis)
            ins.bind(8, int: Int64(row.attempts))
            ins.bind(9, text: error.code.rawValue)
            ins.bind(10, text: error.message)
            ins.bind(11, int: t.now())
            try ins.run()
            let seq = t.connection.lastInsertRowID
            let trim = try t.connection.statement("DELETE FROM cache_rejections WHERE seq <= (SELECT max(seq) FROM cache_rejections) - ?1")
            trim.bind(1, int: CacheStore.rejectionsKept)
            try trim.run()
            if seen { try CacheStore.markSeen(t, [seq]) }
            try t.connection.exec("DELETE FROM cache_rejections_seen WHERE seq NOT IN (SELECT seq FROM cache_rejections)")
            return row
        }
    }

    private func deleteRow(_ t: FileTransaction, _ id: Int64) throws -> QueuedWrite? {
        let s = try t.connection.statement("SELECT \(CacheStore.writeColumns) FROM cache_writes WHERE id = ?1")
        s.bind(1, int: id)
        guard try s.step() else { s.reset(); return nil }
        let row = try CacheStore.queuedWrite(s)
        s.reset()
        let d = try t.connection.statement("DELETE FROM cache_writes WHERE id = ?1")
        d.bind(1, int: id)
        try d.run()
        try t.touch(row.path)
        return row
    }

    /// Drops write `id` unsent (`queue drop`); nil when there is no such row.
    public func dropWrite(id: Int64) throws -> QueuedWrite? {
        try db.writeTransaction { t in try deleteRow(t, id) }
    }

    /// Drops every queued write (`queue clear`), returning them in id order.
    public func clearWrites() throws -> [QueuedWrite] {
        try db.writeTransaction { t in
            let rows = try queued(t, through: nil)
            for r in rows { _ = try deleteRow(t, r.id) }
            return rows
        }
    }

    /// The logged rejections, oldest first; with `unseen`, only those not marked seen.
    public func rejections(unseen: Bool = false) throws -> [RejectedWrite] {
        try reading([]) { t in
            // A cache made before the marks existed has none: every rejection is unseen.
            let marks = try t.hasTable("cache_rejections_seen")
            let filter = unseen && marks ? "WHERE seq NOT IN (SELECT seq FROM cache_rejections_seen)" : ""
            let s = try t.connection.statement("""
                SELECT id, cmd, kind, path, data, 'rejected', attempts, created_ms, principal, code, error, at_ms, seq
                FROM cache_rejections \(filter) ORDER BY seq
                """)
            defer { s.reset() }
            var out: [RejectedWrite] = []
            while try s.step() {
                // A code this build does not know (a newer one wrote it) reads as internal.
                let error = RTDBError(RTDBError.Code(rawValue: s.string(9)) ?? .internal, s.string(10))
                out.append(RejectedWrite(write: try CacheStore.queuedWrite(s), error: error, atMillis: s.int(11), seq: s.int(12)))
            }
            return out
        }
    }

    /// Marks the rejections `seqs` as seen: listed by `queue --rejected`, or already the error
    /// of the command that made the write.
    public func markRejectionsSeen(_ seqs: [Int64]) throws {
        if seqs.isEmpty { return }
        try db.writeTransaction { t in try CacheStore.markSeen(t, seqs) }
    }

    static func markSeen(_ t: FileTransaction, _ seqs: [Int64]) throws {
        let ins = try t.connection.statement("INSERT OR IGNORE INTO cache_rejections_seen(seq) VALUES(?1)")
        for seq in seqs {
            ins.reset()
            ins.bind(1, int: seq)
            try ins.run()
        }
        ins.reset()
    }
}
