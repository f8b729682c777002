import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded database: one SQLite file, safe for any number of processes at once.
///
/// Storage: one row per leaf in `data(path, v)`, `path` being the path's keys in an
/// order-preserving encoding (`StorageKey`; the root leaf is the empty blob), so a subtree is
/// one contiguous key range, reading a small path touches only its own rows, and the children
/// of a node are stored in Firebase's key order (a key-ordered window reads only its rows). `v` holds integers, doubles and strings natively and booleans as a 1-byte blob.
/// Priorities live apart, one row per node that has one in `priorities(path, p)` (same path
/// encoding), so data without priorities has exactly the rows it always had; every write keeps
/// that table exact (a row only for a node that holds data). Every write also appends one row to
/// `log(seq, paths, op, base, data)`: the paths it touched, which watchers read to learn what
/// other processes changed, and what it wrote, for the change feed (ChangeFeed.swift).
///
/// Schema versions (`PRAGMA user_version`): 1 = `data` and `log`, paths as `/`-joined text;
/// 2 adds `priorities`; 3 stores the paths of `data` and `priorities` as `StorageKey` blobs;
/// 4 folds the feed's `changes` table into `log`, which drops AUTOINCREMENT; 5 adds `sizes`, the
/// JSON size of every large node, kept by every write (StoredSizes.swift; Schema.swift).
/// An older file is upgraded by its first write; until then reads see a converted copy held in
/// temporary tables (`LegacyLayout.swift`), so that reads never change a file.
///
/// Concurrency: WAL journal, `synchronous=FULL`, writers in `BEGIN IMMEDIATE`, a busy handler
/// that waits up to the timeout. Each public call is one transaction.
public final class EmbeddedDatabase: Database {
    public let file: String
    public let timeoutSeconds: Double
    let clock: @Sendable () -> Int64
    var pushIDs: PushIDGenerator
    /// How often an observer polls for commits where the system delivers no file-change
    /// notifications (see `Observer`; on Linux it sleeps until the write-ahead log changes).
    public var pollMicros: UInt32 = 2_000
    /// A descriptor (e.g. stdout) whose other end going away wakes an observer at once, so its
    /// `idle` check runs without waiting for the next beat; -1 for none.
    public var hangupFD: Int32 = -1

    var conn: Connection? {
        didSet { conn?.declinesLockWaits = declinesLockWaits }
    }
    /// Calls on this handle fail at once where they would wait for another process's write
    /// lock (`withoutLockWaits`); the connection's busy handler follows it.
    private var declinesLockWaits = false {
        didSet { conn?.declinesLockWaits = declinesLockWaits }
    }
    /// The tables exist (seen by a read or created by a write); they are never dropped.
    private var hasSchema = false
    /// The writer's pragmas are set and the tables exist.
    private var writerReady = false
    /// The transaction open on `conn`, if any, inside which scopes: a group commit's batch
    /// (`beginBatch()` … `commitBatch()`, Batch.swift), reads sharing a transaction
    /// (`beginSharedReads()` … `endSharedReads()`, SharedReads.swift).
    var transaction = TransactionState.none
    /// A shared read transaction is open on `conn`.
    var sharedReadOpen: Bool { transaction.sharedReadOpen }
    /// Inside `reapDeadSessions` (Sessions.swift): its own writes do not reap again.
    var reaping = false
    /// The module that keeps tables of its own in this file, told when this handle starts
    /// writing and when its sessions end (Companion.swift).
    public var companion: FileCompanion? = nil
    /// Write-ahead log pages after which a commit folds the log into the file (SQLite's
    /// `wal_autocheckpoint`); nil keeps SQLite's 1,000. Set before the first write.
    public var checkpointPages: Int? = nil
    /// The file has the `priorities` table (schema version 2 or later).
    var hasPriorityTable = false
    /// The file has the `sizes` table (schema version 5 or later, StoredSizes.swift).
    var hasSizeTable = false
    /// The count from which `sizes` holds a node's size (lowered by tests, so that small trees
    /// have stored sizes; every writer of a file must use the same one for it to bound scans).
    var sizeThreshold = EmbeddedDatabase.defaultSizeThreshold
    /// The file has an older layout that this user may not upgrade: reads go to a converted
    /// copy in temporary tables (LegacyLayout.swift).
    var legacyLayout = false
    /// `data_version` when that copy was made.
    var legacyVersion: Int64? = nil
    /// The connection reads the file alone (`FileAccess.immutableURI`): this user may read the
    /// file but not create its WAL files. It sees no later commits.
    private(set) var immutable = false
    /// What the path named when the connection was opened (see `fileChanged`).
    private var openedSignature: FileAccess.Signature? = nil

    public static let schemaVersion: Int64 = 5
    /// The oldest schema this code reads: files made before priorities were stored.
    static let oldestReadableSchemaVersion: Int64 = 1
    static let logKeep: Int64 = 10_000
    static let logMaxPaths = 256
    /// The page cache of a connection, as SQLite's cache_size (negative: KiB): 64 MiB.
    static let cacheKiB = -65_536

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

    /// The connection for reading, or nil while nothing is stored: no file yet, or a file
    /// whose tables another process has not created yet.
    func readConnection() throws -> Connection? {
        closeSharedRead()   // whoever asks for the connection runs transactions of its own
        if conn == nil {
            guard try FileAccess.exists(file) else { return nil }
            conn = try openChecked(create: false)
        }
        guard let c = conn else { return nil }
        if !hasSchema {
            let version = try c.integer("PRAGMA user_version") ?? 0
            guard version >= EmbeddedDatabase.oldestReadableSchemaVersion,
                  version <= EmbeddedDatabase.schemaVersion else { return nil }
            hasSchema = true
            hasPriorityTable = version >= 2
            if version < 3 {
                // Reads never change a file: an older layout is read through a converted copy
                // until the first write upgrades the file.
                legacyLayout = true
                hasPriorityTable = true
            }
        }
        return c
    }

    /// Opens the connection reads use, unless it is open already or there is no file to read
    /// yet; false when the file is there and cannot be opened now (the process is out of
    /// descriptors, say). The server's front loops ask before they read: another handle of the
    /// same file may be open, and can answer instead.
    public func connectForReading() -> Bool {
        if conn != nil { return true }
        do { _ = try readConnection(); return true } catch { return false }
    }

    /// True when the file can hold priorities; a version-1 file is checked again each time, as
    /// another process may upgrade it meanwhile.
    func priorityTableExists(_ c: Connection) throws -> Bool {
        if hasPriorityTable { return true }
        hasPriorityTable = (try c.integer("PRAGMA user_version") ?? 0) >= 2
        return hasPriorityTable
    }

    /// The connection for writing: creates parent folders and the file on first write.
    func writeConnection() throws -> Connection {
        closeSharedRead()
        let c: Connection
        if let existing = conn, !immutable {
            c = existing
        } else {
            try makeParentDirectories()
            if try !FileAccess.exists(file) {
                try FileAccess.checkCreatable(file)
            } else if !FileAccess.writable(file) {
                // Refused before SQLite opens it, which would leave WAL files of this user's.
                throw RTDBError(.permissionDenied, FileAccess.readOnlyReason(file))
            }
            c = try openChecked(create: true)
            immutable = false
            conn = c
        }
        if !writerReady {
            if try c.text("PRAGMA journal_mode") != "wal" {
                _ = try c.text("PRAGMA journal_mode=WAL")
            }
            // A larger page cache keeps big writes from spilling pages before the commit.
            try c.exec("PRAGMA synchronous=FULL; PRAGMA cache_size=\(EmbeddedDatabase.cacheKiB); PRAGMA journal_size_limit=67108864")
            if let pages = checkpointPages { try c.exec("PRAGMA wal_autocheckpoint=\(pages)") }
            try dropLegacyCopy(c)   // this connection read the file before its upgrade
            if try c.integer("PRAGMA user_version") != EmbeddedDatabase.schemaVersion {
                try c.exec("BEGIN IMMEDIATE")
                do {
                    // Read again under the write lock: another process may have done it already.
                    let version = try c.integer("PRAGMA user_version") ?? 0
                    if version > EmbeddedDatabase.schemaVersion {
                        throw RTDBError(.unavailable, "\(file) has schema version \(version), newer than this rtdb writes (\(EmbeddedDatabase.schemaVersion))")
                    }
                    if version < 1 { try EmbeddedDatabase.createSchemaVersion1(c) }
                    if version < 2 { try EmbeddedDatabase.migrateToSchemaVersion2(c) }
                    if version < 3 { try EmbeddedDatabase.migrateToSchemaVersion3(c) }
                    if version < 4 { try EmbeddedDatabase.migrateToSchemaVersion4(c) }
                    if version < 5 { try migrateToSchemaVersion5(c) }
                    // Marked in the same transaction: another process opening the file must never
                    // see rtdb's tables without rtdb's mark (it would refuse the file as foreign).
                    try FileMark.mark(c)
                    try c.exec("COMMIT")
                } catch {
                    try? c.exec("ROLLBACK")
                    throw error
                }
            }
            try FileMark.mark(c)
            try openWriterForCompanion(c)
            hasSchema = true
            hasPriorityTable = true
            hasSizeTable = true
            writerReady = true
            // Every process that opens the file for writing runs what dead sessions left.
            reapOnOpen()
        }
        return c
    }

    /// Opens the file and accepts it only when it is one of rtdb's (see `FileMark`), before
    /// anything is read from it or changed in it.
    private func openChecked(create: Bool) throws -> Connection {
        if !create && !FileAccess.writable(file) && !FileAccess.logExists(file) {
            // A reader who may not write the file must not leave WAL files of its own beside it:
            // they would belong to this user and could keep the file's owner from writing.
            return try openImmutable(after: nil)
        }
        let c = try Connection(file: file, create: create, timeoutSeconds: timeoutSeconds)
        do {
            _ = try FileMark.check(c, newest: EmbeddedDatabase.schemaVersion)
        } catch let e as RTDBError where e.code == .permissionDenied && !create {
            FileMark.release(c)
            return try openImmutable(after: e)
        } catch {
            FileMark.release(c)
            throw error
        }
        openedSignature = FileAccess.signature(file, detailed: false)
        return c
    }

    /// True when the path no longer names the file the connection has open (it was removed or
    /// replaced by another file), or, for a connection that reads the file alone, when the file
    /// or its write-ahead log changed.
    func fileChanged() -> Bool {
        guard conn != nil else { return false }
        return FileAccess.signature(file, detailed: immutable) != openedSignature
    }

    /// Closes the connection after `fileChanged`, so that the next call opens whatever the path
    /// names now. No checkpoint on close: SQLite would then delete `FILE-wal` and `FILE-shm` by
    /// name, and those may now belong to the file that took this one's place.
    func closeConnection() {
        transaction.sharedReadClosed()
        if let c = conn { _ = rtdb_sqlite3_db_config_flag(c.handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1) }
        conn = nil
        legacyLayout = false
        legacyVersion = nil
        hasSchema = false
        hasSizeTable = false
        writerReady = false
        immutable = false
        openedSignature = nil
    }

    /// A reader that may not create `FILE-shm` reads the file itself, when no write-ahead log
    /// holds changes it would miss. The connection sees no later commits: `Observer` reopens
    /// it when the file or its log changes.
    private func openImmutable(after error: RTDBError?) throws -> Connection {
        if FileAccess.hasWriteAheadLog(file) {
            let dir = FileAccess.folder(of: file)
            throw RTDBError(.permissionDenied, "cannot read database \(file): its write-ahead log \(file)-wal holds changes that "
                            + "this user cannot read without creating \(file)-shm in \(dir); make the folder writable, or "
                            + "run rtdb once as a user who can (its next read or write folds the log into the file)")
        }
        let c = try Connection(file: file, create: false, timeoutSeconds: timeoutSeconds, immutable: true)
        do {
            _ = try FileMark.check(c, newest: EmbeddedDatabase.schemaVersion)
        } catch let e as RTDBError where e.code == .permissionDenied {
            throw error ?? e
        }
        immutable = true
        openedSignature = FileAccess.signature(file, detailed: true)
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
        if transaction.batchOpen, let c = conn { return try body(c) }   // inside the batch's transaction
        if transaction.sharingReads { return try readingShared(empty, body) }
        return try retryingWhileBusy {
            guard let c = try readConnection() else { return empty }
            try c.run("BEGIN")
            defer { try? c.run("COMMIT") }
            if legacyLayout { try refreshLegacyCopy(c) }
            return try body(c)
        }
    }

    /// Runs `body` again while SQLite reports the file busy without having waited for it (it
    /// does so, for example, when several processes switch a new file to WAL at once), until
    /// the timeout. `body` must be a whole transaction, so running it again is safe.
    func retryingWhileBusy<T>(_ body: () throws -> T) throws -> T {
        if declinesLockWaits { return try body() }
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

    /// Runs `body` with every wait for another process's write lock refused: a statement that
    /// finds the file locked fails at once with the error a wait that gave up throws (code
    /// `timeout`), and nothing retries it. For a caller that must not block (rtdb serve's loop).
    func withoutLockWaits<T>(_ body: () throws -> T) rethrows -> T {
        let before = declinesLockWaits
        declinesLockWaits = true
        defer { declinesLockWaits = before }
        return try body()
    }

    /// Runs `body` in a write transaction; commits when it returns, rolls back when it throws.
    func writing<T>(_ body: (Connection) throws -> T) throws -> T {
        if transaction.batch != nil { return try writingInBatch(body) }
        return try retryingAfterFullDisk { try retryingWhileBusy {
            let c = try writeConnection()
            // (Kept prepared: parsing the two texts cost a durable write some 5,000 instructions.)
            try c.run("BEGIN IMMEDIATE")
            do {
                let result = try body(c)
                try c.run("COMMIT")
                return result
            } catch {
                c.noteFullDisk()
                if !c.autocommit { try? c.exec("ROLLBACK") }
                throw error
            }
        } }
    }

    // MARK: Database

    public func get(_ path: Path) throws -> Node {
        try reading(.null) { c in try read(c, path) }
    }

    public func export(_ path: Path) throws -> Node {
        try reading(.null) { c in try readExport(c, path) }
    }

    public func shallow(_ path: Path) throws -> Node {
        try reading(.null) { c in
            if path.isPriority { return try read(c, path) }
            let enc = EmbeddedDatabase.encode(path)
            if let v = try leaf(c, at: enc) { return v }
            return Node.object(normalizing: try childKeys(c, enc).map { Node.Entry($0, .bool(true)) })
        }
    }

    /// `PresenceReads`: a leaf there or any row below it, without listing the children.
    public func holdsData(_ path: Path) throws -> Bool {
        if path.isPriority { return try !shallow(path).isNull }
        return try reading(false) { c in try hasData(c, EmbeddedDatabase.encode(path)) }
    }

    public func query(_ path: Path, _ query: Query) throws -> [Node.Entry] {
        try reading([]) { c in try window(c, path, query, export: true) }
    }

    /// The children a query selects, read as cheaply as its order allows: a key-ordered window
    /// seeks to its children, a limited value/child order needs only each child's sort value to
    /// pick the window, anything else filters the whole location.
    func window(_ c: Connection, _ path: Path, _ query: Query, export: Bool) throws -> [Node.Entry] {
        if path.isPriority { return [] }   // a priority is a primitive: no children
        switch query.order {
        case .value, .child:
            if let w = try indexedQuery(c, path, query, export: export) { return w }
            if query.limit != nil { return try indexedWindow(c, path, query) }
        case .key:
            if !query.isUnfiltered, let w = try keyWindow(c, path, query, export: export) { return w }
        case .priority:
            break
        }
        return query.window(of: export ? try readExport(c, path) : try read(c, path))
    }

    public func set(_ path: Path, _ value: Node) throws -> Node {
        try writing { c in
            let now = clock()
            let resolved = try ServerValues.resolve(value, at: path, now: now) { try readForIncrement(c, $0) }
            try write(c, path, resolved)
            let stored = try storedPriority(c, path) ?? resolved
            try log(c, [path], .set(path, stored))
            return stored
        }
    }

    /// What a write at a `.priority` path left stored (null when the node is empty); nil for
    /// other paths, whose written value is what is stored.
    func storedPriority(_ c: Connection, _ path: Path) throws -> Node? {
        path.isPriority ? try priority(c, of: path.node) : nil
    }

    public func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        try writing { c in try applyUpdate(c, path, entries) }
    }

    /// The body of `update`, inside a write transaction (also used to run a session's
    /// disconnect writes, Sessions.swift).
    func applyUpdate(_ c: Connection, _ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        let now = clock()
        // Resolve every server value against the data as it was before this write.
        let resolved = try entries.map { e in
            (path: e.path, value: try ServerValues.resolve(e.value, at: path.appending(e.path), now: now) { try readForIncrement(c, $0) })
        }
        // Priorities last: a node created by this same update takes its new priority.
        // In a file that stays below the threshold, nothing to keep in `sizes` (RootSize.swift).
        let small = try smallFileBound(c, growth: resolved.reduce(0) { total, e in
            if e.path.isPriority { return total }
            var key = EmbeddedDatabase.encode(path.appending(e.path))
            var found: [(key: [UInt8], bytes: Int)] = []
            return total + SizeRules.growthBound(key, SizeRules.measure(e.value, &key, threshold: sizeThreshold, found: &found))
        })
        let size = small == nil ? try updateSizeChange(c, path) : nil
        for e in resolved where !e.path.isPriority {
            try write(c, path.appending(e.path), e.value, keepingSizes: small == nil && size == nil)
        }
        if let size { try finishSizeChangeFromRows(c, size) }
        if let small { c.facts.rootSize = .below(small) }
        for e in resolved where e.path.isPriority { try write(c, path.appending(e.path), e.value) }
        if !resolved.isEmpty {
            try log(c, resolved.count > EmbeddedDatabase.logMaxPaths ? [path] : resolved.map { path.appending($0.path) },
                    .update(path, resolved))
        }
        return resolved
    }

    public func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        try writing { c in
            let current = try read(c, path)
            guard current.same(as: expected.withoutPriorities) else { return .stale(current: current) }
            var resolved = try ServerValues.resolve(value, at: path, now: clock()) { try readForIncrement(c, $0) }
            if !path.isPriority && resolved.priority.isNull {
                // As Firebase's transactions: the node keeps its priority unless the value sets one.
                resolved = resolved.withPriority(try priority(c, of: path))
            }
            try write(c, path, resolved)
            let stored = try storedPriority(c, path) ?? resolved
            try log(c, [path], .set(path, stored))
            return .committed(stored)
        }
    }

    public func increment(_ path: Path, by delta: Node) throws -> Node {
        try writing { c in
            let new = ServerValues.increment(try readForIncrement(c, path), by: delta)
            try write(c, path, new)
            let stored = try storedPriority(c, path) ?? new
            try log(c, [path], .set(path, stored))
            return stored
        }
    }
}

/// `holdsData(_:)` looks up one row.
extension EmbeddedDatabase: PresenceReads {}
