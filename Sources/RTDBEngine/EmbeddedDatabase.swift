import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded database: one SQLite file, safe for any number of processes at once.
///
/// Storage: one row per leaf in `data(path, v)`, `path` being the keys joined by `/` (the root
/// leaf is `""`), so a subtree is one contiguous key range and reading a small path touches only
/// its own rows. `v` holds integers, doubles and strings natively and booleans as a 1-byte blob.
/// Every write also appends the paths it touched to `log(seq, paths)`, which watchers read to
/// learn what other processes changed.
///
/// Concurrency: WAL journal, `synchronous=FULL`, writers in `BEGIN IMMEDIATE`, a busy handler
/// that waits up to the timeout. Each public call is one transaction.
public final class EmbeddedDatabase: Database {
    public let file: String
    let timeoutSeconds: Double
    let clock: @Sendable () -> Int64
    var pushIDs: PushIDGenerator
    /// Observation poll interval.
    public var pollMicros: UInt32 = 2_000

    private var conn: Connection?
    /// The tables exist (seen by a read or created by a write); they are never dropped.
    private var hasSchema = false
    /// The writer's pragmas are set and the tables exist.
    private var writerReady = false
    /// Inside `beginBatch()` … `commitBatch()`: writes share one transaction (see Batch.swift).
    var batching = false
    var batchOpen = false
    /// The `changes` table is known to exist (ChangeFeed.swift).
    var changesTableReady = false

    static let schemaVersion: Int64 = 1
    static let logKeep: Int64 = 10_000
    static let logMaxPaths = 256

    /// `clock` returns milliseconds since the Unix epoch (server timestamps and push IDs).
    public init(file: String, timeoutSeconds: Double = 10,
                clock: @escaping @Sendable () -> Int64 = EmbeddedDatabase.systemClock,
                pushIDs: PushIDGenerator = PushIDGenerator()) {
        self.file = file
        self.timeoutSeconds = timeoutSeconds
        self.clock = clock
        self.pushIDs = pushIDs
    }

    @Sendable public static func systemClock() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    // MARK: connection

    private func fileExists() -> Bool {
        var st = stat()
        return stat(file, &st) == 0
    }

    /// The connection for reading, or nil while nothing is stored: no file yet, or a file
    /// whose tables another process has not created yet.
    func readConnection() throws -> Connection? {
        if conn == nil {
            guard fileExists() else { return nil }
            conn = try Connection(file: file, create: false, timeoutSeconds: timeoutSeconds)
        }
        guard let c = conn else { return nil }
        if !hasSchema {
            guard try c.integer("PRAGMA user_version") == EmbeddedDatabase.schemaVersion else { return nil }
            hasSchema = true
        }
        return c
    }

    /// The connection for writing: creates parent folders and the file on first write.
    func writeConnection() throws -> Connection {
        let c: Connection
        if let existing = conn {
            c = existing
        } else {
            try makeParentDirectories()
            c = try Connection(file: file, create: true, timeoutSeconds: timeoutSeconds)
            conn = c
        }
        if !writerReady {
            if try c.text("PRAGMA journal_mode") != "wal" {
                _ = try c.text("PRAGMA journal_mode=WAL")
            }
            // A larger page cache keeps big writes from spilling pages before the commit.
            try c.exec("PRAGMA synchronous=FULL; PRAGMA cache_size=-65536; PRAGMA journal_size_limit=67108864")
            if try c.integer("PRAGMA user_version") != EmbeddedDatabase.schemaVersion {
                try c.exec("BEGIN IMMEDIATE")
                do {
                    try c.exec("""
                        CREATE TABLE IF NOT EXISTS data(path TEXT PRIMARY KEY, v) WITHOUT ROWID;
                        CREATE TABLE IF NOT EXISTS log(seq INTEGER PRIMARY KEY AUTOINCREMENT, paths TEXT NOT NULL);
                        PRAGMA user_version=\(EmbeddedDatabase.schemaVersion);
                        """)
                    try c.exec("COMMIT")
                } catch {
                    try? c.exec("ROLLBACK")
                    throw error
                }
            }
            hasSchema = true
            writerReady = true
        }
        return c
    }

    private func makeParentDirectories() throws {
        var dir = ""
        let parts = file.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        for (i, part) in parts.enumerated() {
            dir += (i == 0 ? "" : "/") + part
            if dir.isEmpty { continue }
            if mkdir(dir, 0o755) != 0 && errno != EEXIST {
                let e = errno
                if e == EACCES || e == EPERM {
                    throw RTDBError(.permissionDenied, "cannot create folder \(dir): permission denied")
                }
                throw RTDBError(.unavailable, "cannot create folder \(dir): \(String(cString: strerror(e)))")
            }
        }
    }

    /// Runs `body` in a read transaction (a consistent snapshot across statements), or answers
    /// `empty` while nothing is stored.
    func reading<T>(_ empty: T, _ body: (Connection) throws -> T) throws -> T {
        if batchOpen, let c = conn { return try body(c) }   // inside the batch's transaction
        return try retryingWhileBusy {
            guard let c = try readConnection() else { return empty }
            try c.exec("BEGIN")
            defer { try? c.exec("COMMIT") }
            return try body(c)
        }
    }

    /// Runs `body` again while SQLite reports the file busy without having waited for it (it
    /// does so, for example, when several processes switch a new file to WAL at once), until
    /// the timeout. `body` must be a whole transaction, so running it again is safe.
    func retryingWhileBusy<T>(_ body: () throws -> T) throws -> T {
        let deadline = monotonicNanos() + UInt64(max(0, timeoutSeconds) * 1e9)
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let e as RTDBError where e.code == .timeout && monotonicNanos() < deadline {
                attempt += 1
                usleep(UInt32(200 + Int.random(in: 0..<(min(attempt, 10) * 500))))
            }
        }
    }

    /// Runs `body` in a write transaction; commits when it returns, rolls back when it throws.
    func writing<T>(_ body: (Connection) throws -> T) throws -> T {
        if batching { return try writingInBatch(body) }
        return try retryingWhileBusy {
            let c = try writeConnection()
            try c.exec("BEGIN IMMEDIATE")
            do {
                let result = try body(c)
                try c.exec("COMMIT")
                return result
            } catch {
                if !c.autocommit { try? c.exec("ROLLBACK") }
                throw error
            }
        }
    }

    // MARK: Database

    public func get(_ path: Path) throws -> Node {
        try reading(.null) { c in try read(c, path) }
    }

    public func shallow(_ path: Path) throws -> Node {
        try reading(.null) { c in
            let enc = EmbeddedDatabase.encode(path)
            if let v = try leaf(c, at: enc) { return v }
            return Node.object(normalizing: try childKeys(c, enc).map { Node.Entry($0, .bool(true)) })
        }
    }

    public func query(_ path: Path, _ query: Query) throws -> [Node.Entry] {
        try reading([]) { c in
            // A limited value/child order needs only each child's sort value to pick the window.
            if case .key = query.order {} else if query.limit != nil {
                return try indexedWindow(c, path, query)
            }
            return query.window(of: try read(c, path))
        }
    }

    public func set(_ path: Path, _ value: Node) throws -> Node {
        try writing { c in
            let now = clock()
            let resolved = try ServerValues.resolve(value, at: path, now: now) { try readForIncrement(c, $0) }
            try write(c, path, resolved)
            try log(c, [path], .set(path, resolved))
            return resolved
        }
    }

    public func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        try writing { c in
            let now = clock()
            // Resolve every server value against the data as it was before this write.
            let resolved = try entries.map { e in
                (path: e.path, value: try ServerValues.resolve(e.value, at: path.appending(e.path), now: now) { try readForIncrement(c, $0) })
            }
            for e in resolved { try write(c, path.appending(e.path), e.value) }
            if !resolved.isEmpty {
                try log(c, resolved.count > EmbeddedDatabase.logMaxPaths ? [path] : resolved.map { path.appending($0.path) },
                        .update(path, resolved))
            }
            return resolved
        }
    }

    public func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] {
        try writing { c in
            let now = clock()
            var out: [Node.Entry] = []
            out.reserveCapacity(values.count)
            // New keys hold nothing yet: only a leaf at the list or above it is replaced.
            try removeAncestorLeaves(c, of: path.appending("_"))
            let rows = try LeafRows(c)
            for v in values {
                let key = pushIDs.next(now: now)
                let child = path.appending(key)
                let resolved = try ServerValues.resolve(v, at: child, now: now) { try readForIncrement(c, $0) }
                var enc = EmbeddedDatabase.encode(child)
                try insert(rows, resolved, &enc)
                out.append(Node.Entry(key, resolved))
            }
            try rows.flush()
            if !out.isEmpty {
                try log(c, out.count > EmbeddedDatabase.logMaxPaths ? [path] : out.map { path.appending($0.key) },
                        .update(path, out.map { (path: Path(validatedKeys: [$0.key]), value: $0.node) }))
            }
            return out
        }
    }

    public func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        try writing { c in
            let current = try read(c, path)
            guard current.same(as: expected) else { return .stale(current: current) }
            let resolved = try ServerValues.resolve(value, at: path, now: clock()) { try readForIncrement(c, $0) }
            try write(c, path, resolved)
            try log(c, [path], .set(path, resolved))
            return .committed(resolved)
        }
    }

    public func increment(_ path: Path, by delta: Node) throws -> Node {
        try writing { c in
            let new = ServerValues.increment(try readForIncrement(c, path), by: delta)
            try write(c, path, new)
            try log(c, [path], .set(path, new))
            return new
        }
    }

    public func observe(_ path: Path, idle: () throws -> Bool,
                        onChange: (Node, [String]?) throws -> Bool) throws {
        try Observer(database: self, path: path).run(idle: idle, onChange)
    }
}
