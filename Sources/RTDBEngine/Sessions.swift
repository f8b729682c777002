import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sessions on the embedded file (`rtdb session`): writes registered to run when the session
/// ends, also when its process dies without ending it.
///
/// A session is a row of `rtdb_sessions(id, host, pid, started)` and its operations, in order,
/// in `rtdb_ondisconnect(session_id, seq, kind, path, data)` (kind `set`, `update` or `remove`;
/// data the JSON value, null for a remove). Its process holds an exclusive `flock` on
/// `<file>.sessions/<id>.lock` for its whole life; the kernel drops that lock when the process
/// dies, however it dies, so a lock that can be taken is proof that its holder is gone (a reused
/// process id cannot fool it). Nothing here locks through the SQLite file itself: opening and
/// closing another descriptor of it in this process would drop SQLite's own POSIX locks.
///
/// The tables are created when the first session starts (`CREATE TABLE IF NOT EXISTS`), not by a
/// schema version: files without sessions stay exactly as they were, an older rtdb still opens a
/// file that has them (it is marked as rtdb's, so `FileMark` accepts it whatever its tables),
/// and no version number is taken from the storage migrations.
///
/// Ending: the holder runs its operations as one multi-path update (Firebase's sparse-tree
/// semantics, `DisconnectWrites`; server values resolved then) and deletes its rows in the same
/// transaction, then removes its lock file. Reaping: any process that opens the file for writing,
/// and `watch` and `serve` on their beat, look in `<file>.sessions` for lock files they can lock;
/// for each, in one `BEGIN IMMEDIATE` transaction, the rows are read again and the operations
/// applied and deleted, then the lock file is removed. With no `<file>.sessions` folder, the
/// check is one failed `opendir`.
public final class EmbeddedSession {
    /// The session's id (a push ID: unique and time-ordered).
    public let id: String
    let lockPath: String
    var lockFD: Int32
    /// The disconnect operations, kept in memory only to report them.
    public let operations: [DisconnectOperation]

    init(id: String, lockPath: String, lockFD: Int32, operations: [DisconnectOperation]) {
        self.id = id
        self.lockPath = lockPath
        self.lockFD = lockFD
        self.operations = operations
    }

    deinit { if lockFD >= 0 { close(lockFD) } }
}

extension EmbeddedDatabase {
    /// The folder of the session lock files.
    public var sessionsFolder: String { file + ".sessions" }
    /// Whether any session has ever been opened on this file (its folder exists).
    var hasSessionsFolder: Bool { access(sessionsFolder, F_OK) == 0 }

    /// A new push key (for `--presence`: the key of this connection's child).
    public func newPushKey() -> String { pushIDs.next(now: clock()) }

    /// True while the session `id` is alive: its lock file exists and another descriptor
    /// cannot lock it (the holder, possibly this process, still does).
    public func isLiveSession(_ id: String) -> Bool {
        guard !id.contains("/") else { return false }
        let fd = open(sessionsFolder + "/" + id + ".lock", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return true
    }

    /// Starts a session: takes its lock, then records it and its operations in one transaction,
    /// in which `recording` (given the session's id) may record more in a companion's tables.
    /// What happens to the operations when the session ends is the companion's to decide, if
    /// the handle has one (`FileCompanion.sessionEnding`); otherwise they are applied. `id` is
    /// the session's id when the caller chose it already (`newPushKey()`), else a new one.
    public func beginSession(_ operations: [DisconnectOperation], id chosen: String? = nil,
                             recording: ((FileTransaction, String) throws -> Void)? = nil) throws -> EmbeddedSession {
        // Creates the file (and its folder) first; a new file's switch to WAL can meet another
        // process doing the same, which SQLite reports as busy without waiting: retried.
        _ = try retryingWhileBusy { try writeConnection() }
        let id = chosen ?? pushIDs.next(now: clock())
        let folder = sessionsFolder
        if mkdir(folder, 0o755) != 0 && errno != EEXIST {
            let e = errno
            throw RTDBError(e == EACCES || e == EPERM ? .permissionDenied : .ioError,
                            "cannot create the session folder \(folder): \(String(cString: strerror(e)))")
        }
        // Locked under a temporary name, then renamed: a reaper only looks at `*.lock`, so it
        // never finds this session's file before the lock is held.
        let temporary = folder + "/" + id + ".new"
        let lockPath = folder + "/" + id + ".lock"
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 {
            let e = errno
            throw RTDBError(e == EACCES ? .permissionDenied : .ioError, "cannot create the session lock \(temporary): \(String(cString: strerror(e)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, rename(temporary, lockPath) == 0 else {
            let e = errno
            unlink(temporary)
            close(fd)
            throw RTDBError(.ioError, "cannot take the session lock \(lockPath): \(String(cString: strerror(e)))")
        }
        let session = EmbeddedSession(id: id, lockPath: lockPath, lockFD: fd, operations: operations)
        do {
            try writing { c in
                try EmbeddedDatabase.createSessionTables(c)
                let row = try c.statement("INSERT INTO rtdb_sessions(id, host, pid, started) VALUES(?1, ?2, ?3, ?4)")
                row.bind(1, text: id)
                row.bind(2, text: EmbeddedDatabase.hostName())
                row.bind(3, int: Int64(getpid()))
                row.bind(4, int: clock())
                try row.run()
                try recording?(FileTransaction(db: self, connection: c), id)
                try insertOperations(c, id, operations, from: 0)
            }
        } catch {
            unlink(lockPath)
            throw error
        }
        return session
    }

    /// Inside a write transaction: adds `operations` as the rows of session `id` numbered from `seq`.
    func insertOperations(_ c: Connection, _ id: String, _ operations: [DisconnectOperation], from seq: Int64) throws {
        let op = try c.statement("INSERT INTO rtdb_ondisconnect(session_id, seq, kind, path, data) VALUES(?1, ?2, ?3, ?4, ?5)")
        for (i, o) in operations.enumerated() {
            op.reset()
            op.bind(1, text: id)
            op.bind(2, int: seq + Int64(i))
            op.bind(3, text: o.kind)
            op.bind(4, text: o.path.description)
            switch o {
            case .set(_, let v): op.bind(5, text: JSONWriter.string(v, export: true))
            case .update(_, let entries):
                var out: [UInt8] = [UInt8(ascii: "{")]
                for (j, e) in entries.enumerated() {
                    if j > 0 { out.append(UInt8(ascii: ",")) }
                    JSONWriter.appendString(e.path.unrooted, to: &out)
                    out.append(UInt8(ascii: ":"))
                    JSONWriter(export: true).write(e.value, into: &out)
                }
                out.append(UInt8(ascii: "}"))
                op.bind(5, text: String(decoding: out, as: UTF8.self))
            case .remove: sqlite3_bind_null(op.handle, 5)
            }
            try op.run()
        }
    }

    /// Ends a session normally: runs its operations and deletes its rows in one transaction,
    /// then removes its lock file. Returns the paths written (empty when nothing ran).
    @discardableResult
    public func endSession(_ session: EmbeddedSession) throws -> [Path] {
        let written = try writing { c in try runSession(c, id: session.id, host: nil) ?? [] }
        release(session)
        return written
    }

    /// Ends a session without running its operations (nothing it registered them for was
    /// written): deletes its rows, then removes its lock file.
    public func abandonSession(_ session: EmbeddedSession) throws {
        try writing { c in try deleteSessionRows(c, id: session.id) }
        release(session)
    }

    /// Removes the lock file of an ended session and lets go of its lock.
    private func release(_ session: EmbeddedSession) {
        unlink(session.lockPath)
        close(session.lockFD)
        session.lockFD = -1
    }

    /// Inside a write transaction: deletes the rows of session `id`, and tells the companion.
    func deleteSessionRows(_ c: Connection, id: String) throws {
        for sql in ["DELETE FROM rtdb_ondisconnect WHERE session_id = ?1", "DELETE FROM rtdb_sessions WHERE id = ?1"] {
            let d = try c.statement(sql)
            d.bind(1, text: id)
            try d.run()
        }
        try companion?.sessionEnded(FileTransaction(db: self, connection: c), session: id)
    }

    static func createSessionTables(_ c: Connection) throws {
        try c.exec("""
            CREATE TABLE IF NOT EXISTS rtdb_sessions(id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL,
                                                     started INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS rtdb_ondisconnect(session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
                                                         path TEXT NOT NULL, data TEXT,
                                                         PRIMARY KEY(session_id, seq)) WITHOUT ROWID;
            """)
    }

    /// Inside a write transaction: applies the operations of session `id` and deletes its rows.
    /// nil when the session has no row (already ended or reaped), or, given `host`, when it was
    /// started on another machine (its lock there is not ours to judge).
    func runSession(_ c: Connection, id: String, host: String?) throws -> [Path]? {
        guard try c.integer("SELECT count(*) FROM sqlite_master WHERE name = 'rtdb_sessions'") == 1 else { return nil }
        let find = try c.statement("SELECT host FROM rtdb_sessions WHERE id = ?1")
        find.bind(1, text: id)
        let found = try find.step()
        let rowHost = found ? find.string(0) : ""
        find.reset()
        guard found, host == nil || host == rowHost else { return nil }
        let writes = try storedOperations(c, id: id)
        let entries = writes.update
        let applied: [(path: Path, value: Node)]
        if let companion, try companion.sessionEnding(FileTransaction(db: self, connection: c), session: id, writes: entries) {
            applied = entries
        } else {
            applied = entries.isEmpty ? [] : try applyUpdate(c, .root, entries)
        }
        try deleteSessionRows(c, id: id)
        return applied.map { $0.path }
    }

    /// Inside a transaction: the operations of session `id`, its rows read in order into
    /// Firebase's set of non-overlapping writes.
    func storedOperations(_ c: Connection, id: String) throws -> DisconnectWrites {
        var writes = DisconnectWrites()
        let ops = try c.statement("SELECT kind, path, data FROM rtdb_ondisconnect WHERE session_id = ?1 ORDER BY seq")
        ops.bind(1, text: id)
        defer { ops.reset() }
        while try ops.step() {
            let kind = ops.string(0)
            let path = try Path(ops.string(1))
            let data = ops.string(2)
            switch kind {
            case "set": writes.set(path, try JSONReader.parse(data))
            case "update":
                guard let raw = try JSONReader.parseEntries(data) else { continue }
                writes.update(path, try WriteCheck.update(raw, at: path))
            case "remove": writes.set(path, .null)
            default: continue   // a kind this version does not know: skipped, not guessed at
            }
        }
        return writes
    }

    /// Runs the operations of every session on this machine whose process has died. Returns how
    /// many were reaped. Cheap when there are none: no folder, or no lock file that can be locked,
    /// means no SQLite work at all. `waitingForLock: false`: while another process holds the
    /// file's write lock it fails at once (the `timeout` error), leaving the dead sessions for
    /// a later call, instead of waiting (rtdb serve's loop, which must keep answering).
    @discardableResult
    public func reapDeadSessions(waitingForLock: Bool = true) throws -> Int {
        if !waitingForLock { return try withoutLockWaits { try reapDeadSessions() } }
        guard let dir = opendir(sessionsFolder) else { return 0 }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name.hasSuffix(".lock") { names.append(name) }
        }
        closedir(dir)
        var reaped = 0
        for name in names {
            let lockPath = sessionsFolder + "/" + name
            let fd = open(lockPath, O_RDWR | O_CLOEXEC)
            if fd < 0 { continue }
            defer { close(fd) }
            // Held: the session is alive (or another process is reaping it right now).
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            // The file may have been removed (ended) between the listing and the lock.
            var st = stat(), named = stat()
            guard fstat(fd, &st) == 0, stat(lockPath, &named) == 0, st.st_ino == named.st_ino else { continue }
            let id = String(name.dropLast(".lock".count))
            reaping = true
            defer { reaping = false }
            let ran = try writing { c in try runSession(c, id: id, host: EmbeddedDatabase.hostName()) }
            unlink(lockPath)
            if ran != nil { reaped += 1 }
        }
        return reaped
    }

    /// Reaps dead sessions when a connection starts writing; a failure there is not the
    /// writer's: it is left for the next process.
    func reapOnOpen() {
        if reaping || transaction.batch != nil { return }
        _ = try? reapDeadSessions()
    }

    static func hostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count - 1) == 0 else { return "" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
