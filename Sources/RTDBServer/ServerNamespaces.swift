import RTDBCore
import RTDBEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where each namespace lives. Without a data folder every namespace is the one database file;
/// with one, namespace NS is the file `DIR/NS.db`, created by its first write (the emulator's
/// multi-database mode). Also runs group commit: between `beginBatch()` and `commitBatch()`
/// every database a write reaches joins one transaction per file.
///
/// Open files are bounded: past `maxOpenFiles`, the file used least recently is closed (its
/// SQLite connection, three descriptors and its page cache go) unless a batch or a stream
/// holds it; its next request opens it again. So a client that writes once to each of a
/// thousand namespaces leaves the server with a few dozen files open, not a thousand.
public final class ServerNamespaces: NamespaceProvider {
    public let file: String?
    public let folder: String?
    let timeoutSeconds: Double
    private var open: [String: EmbeddedDatabase] = [:]
    /// When each open file was last asked for (a counter, not a clock: only the order counts).
    private var lastUsed: [String: UInt64] = [:]
    /// The rules scopes of open files by their identity (rulesScope), forgotten when a file closes.
    private var identityScopes: [String: String] = [:]
    private var useCounter: UInt64 = 0
    /// Open files past which the least recently used one closes.
    public var maxOpenFiles = 64
    /// Files that must stay open (the server's: streams and listens follow them).
    var keepOpen: (String) -> Bool = { _ in false }
    private var batching = false
    /// Inside `sharingReads`.
    private var sharingReads = false
    private var batched: [String: EmbeddedDatabase] = [:]
    /// The files the current request reached (set by `database(_:)` while batching).
    private(set) var touched: [String] = []
    /// Called with each database file's handle as it is opened, before it is used (the CLI
    /// gives it the companion that keeps it from writing into an offline cache).
    public var prepare: ((EmbeddedDatabase) -> Void)? = nil
    /// The server folds a file's write-ahead log into it every 10,000 pages (40 MB at most)
    /// instead of SQLite's 1,000: the checkpoint runs inside the commit that crosses the
    /// mark, and every writer of that group commit waits for it (about a millisecond, ten
    /// times as often with the default, which made it the slowest 1% of durable writes). The
    /// pages a checkpoint copies are the distinct ones, so rarer checkpoints also copy less.
    static let checkpointPages = 10_000

    public init(file: String, timeoutSeconds: Double) {
        self.file = file
        self.folder = nil
        self.timeoutSeconds = timeoutSeconds
    }

    public init(folder: String, timeoutSeconds: Double) {
        self.file = nil
        self.folder = folder.hasSuffix("/") && folder.count > 1 ? String(folder.dropLast()) : folder
        self.timeoutSeconds = timeoutSeconds
    }

    /// A provider of the same files with handles of its own, for a write on another thread
    /// (DetachedWrites): it shares nothing with this one.
    func detachedCopy() -> ServerNamespaces {
        let copy = file.map { ServerNamespaces(file: $0, timeoutSeconds: timeoutSeconds) }
            ?? ServerNamespaces(folder: folder ?? ".", timeoutSeconds: timeoutSeconds)
        copy.prepare = prepare
        return copy
    }

    /// Namespace names usable as file names: letters, digits, `-` and `_`, 1 to 63 of them
    /// (Firebase database names are lowercase letters, digits and hyphens).
    public static func isValidName(_ ns: String) -> Bool {
        let b = Array(ns.utf8)
        if b.isEmpty || b.count > 63 { return false }
        return b.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
    }

    public func path(of ns: String) -> String {
        if let file { return file }
        return (folder ?? ".") + "/" + ns + ".db"
    }

    /// Rules belong to the file, known by its identity (device and inode) once it exists: every
    /// name that reaches one file answers one scope (without a data folder every name; with
    /// one, also a link, or another spelling of the name on a case-insensitive file system).
    /// A file that does not exist yet has no rules stored; its path stands for it meanwhile,
    /// and storing rules creates it (`storeRules`).
    public func rulesScope(of ns: String) -> String {
        let f = path(of: ns)
        if folder != nil && !ServerNamespaces.isValidName(ns) { return f }
        return identityScope(of: f) ?? f
    }

    /// The scope of the file at `path` by its identity; nil when there is no file. Remembered
    /// while the file is open (every request asks it, several times: then it costs no system
    /// call and makes no string), asked of the file system otherwise.
    private func identityScope(of path: String) -> String? {
        if let known = identityScopes[path] { return known }
        guard let found = FileIdentity(path: path)?.description else { return nil }
        if open[path] != nil { identityScopes[path] = found }
        return found
    }

    /// The identity of the file `ns` reaches and the rules text stored in it; nil while there
    /// is no such file (then nothing is opened or created).
    public func storedRules(of ns: String) throws -> (scope: String, text: String?)? {
        if folder != nil && !ServerNamespaces.isValidName(ns) { return nil }
        guard let scope = identityScope(of: path(of: ns)) else { return nil }
        return (scope, try StoredRules.read(embedded(ns)))
    }

    /// Stores `text` as the rules of the file `ns` reaches, creating the file if need be.
    public func storeRules(_ text: String, of ns: String) throws {
        try StoredRules.write(text, to: embedded(ns))
        identityScopes[path(of: ns)] = nil   // the file may have just been made
    }

    public func database(_ ns: String) throws -> Database {
        try embedded(ns)
    }

    func embedded(_ ns: String) throws -> EmbeddedDatabase {
        if folder != nil && !ServerNamespaces.isValidName(ns) {
            throw RTDBError(.invalidPath, "invalid namespace \(Limits.quote(ns)): use letters, digits, - and _")
        }
        let f = path(of: ns)
        let db: EmbeddedDatabase
        useCounter += 1
        if let existing = open[f] {
            db = existing
        } else {
            if open.count >= maxOpenFiles { closeLeastRecentlyUsed() }
            db = EmbeddedDatabase(file: f, timeoutSeconds: timeoutSeconds)
            db.checkpointPages = ServerNamespaces.checkpointPages
            prepare?(db)
            open[f] = db
            if sharingReads { db.beginSharedReads() }
        }
        lastUsed[f] = useCounter
        if batching {
            if batched[f] == nil {
                db.beginBatch(waitingForLock: false)
                batched[f] = db
            }
            if !touched.contains(f) { touched.append(f) }
        }
        return db
    }

    /// Whether this provider's handle of the file `ns` reaches is open or opens now (see
    /// `EmbeddedDatabase.connectForReading`); true for a name that reaches no file, whose error
    /// is the answer wherever it is read.
    func canRead(_ ns: String) -> Bool {
        guard let db = try? embedded(ns) else { return true }
        return db.connectForReading()
    }

    /// Closes the open file used least recently that nothing holds (a linear scan: there are
    /// at most `maxOpenFiles`). When every one is held, none closes: the bound gives way rather
    /// than a request failing.
    private func closeLeastRecentlyUsed() {
        var oldest: (file: String, used: UInt64)? = nil
        for (f, used) in lastUsed where batched[f] == nil && !keepOpen(f) {
            if used < (oldest?.used ?? .max) { oldest = (f, used) }
        }
        guard let victim = oldest?.file else { return }
        // Dropping the last reference closes the SQLite connection and its descriptors.
        open[victim] = nil
        lastUsed[victim] = nil
        identityScopes[victim] = nil
    }

    /// Runs `body` with the reads of every open file sharing one transaction per file
    /// (SharedReads.swift): one snapshot and one lock for all the reads of a turn.
    func sharingReads(_ body: () -> Void) {
        sharingReads = true
        for db in open.values { db.beginSharedReads() }
        body()
        sharingReads = false
        for db in open.values { db.endSharedReads() }
    }

    /// The number of database files open now.
    public var openCount: Int { open.count }

    /// Every database open now, by file (the streams' feeds read them).
    var openDatabases: [(file: String, db: EmbeddedDatabase)] { open.map { ($0.key, $0.value) } }

    /// The open database of `file`, if it is open.
    func openDatabase(_ file: String) -> EmbeddedDatabase? { open[file] }

    public func namespaces() throws -> [String] {
        guard let folder else { return [] }
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".db") else { continue }
            let ns = String(name.dropLast(3))
            if ServerNamespaces.isValidName(ns) { names.append(ns) }
        }
        return names.sorted { KeyOrder.compare($0, $1) < 0 }
    }

    // MARK: group commit

    /// Starts a batch that never waits for another process's write lock: a write that finds a
    /// file locked fails at once, and `lockWasBusy` says so (group commit then rolls the batch
    /// back and runs it again later, or, once its writes have waited past the timeout, lets
    /// them fail).
    func beginBatch() {
        batching = true
        batched = [:]
    }

    /// A write of this batch found a file's write lock held by another process.
    var lockWasBusy: Bool { batched.values.contains { $0.batchFoundLockBusy } }

    /// How long a write waits for another process's write lock before it fails.
    var lockTimeoutSeconds: Double { timeoutSeconds }

    /// Ends the batch with nothing of it stored, in any file.
    func rollbackBatch() {
        batching = false
        for db in batched.values { db.rollbackBatch() }
        batched = [:]
    }

    /// Marks the start of one request inside the batch.
    func startRequest() { touched = [] }

    /// Commits every file the batch reached; returns the files whose commit failed, with the error.
    func commitBatch() -> [String: RTDBError] {
        batching = false
        var failed: [String: RTDBError] = [:]
        for (f, db) in batched {
            do { try db.commitBatch() } catch let e as RTDBError {
                failed[f] = e
            } catch {
                failed[f] = RTDBError(.ioError, "\(error)")
            }
        }
        batched = [:]
        return failed
    }
}
