import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `SQLITE_TRANSIENT` is a macro Swift does not import: SQLite copies the bound bytes.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

private let emptyText: StaticString = ""

/// The bytes of a buffer as SQLite text input (never a null pointer, which SQLite reads as NULL).
@inline(__always)
func textPointer(_ buf: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar> {
    UnsafeRawPointer(buf.baseAddress ?? emptyText.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// A failed SQLite call, with the facts needed to explain it. Raw result codes stop here:
/// `rtdbError` turns them into the contract's codes.
struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var systemErrno: Int32
    var message: String
    var sql: String?

    var description: String { "SQLite error \(code): \(message)" + (sql.map { " in \($0)" } ?? "") }

    init(code: Int32, systemErrno: Int32, message: String, sql: String?) {
        self.code = code
        self.systemErrno = systemErrno
        self.message = message
        self.sql = sql
    }

    /// The failure `rc` of a call on `database`, with what SQLite says of it.
    init(_ rc: Int32, on database: OpaquePointer, sql: String?) {
        self.init(code: rc, systemErrno: sqlite3_system_errno(database),
                  message: String(cString: sqlite3_errmsg(database)), sql: sql)
    }

    func rtdbError(file: String) -> RTDBError {
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return RTDBError(.timeout, "database \(file) is locked by another process (gave up waiting)")
        case SQLITE_CANTOPEN:
            if systemErrno == EACCES || systemErrno == EPERM {
                return RTDBError(.permissionDenied, "cannot open database \(file): permission denied")
            }
            return RTDBError(.unavailable, "cannot open database \(file)" + (systemErrno != 0 ? ": \(String(cString: strerror(systemErrno)))" : ""))
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            return RTDBError(.permissionDenied, FileAccess.readOnlyReason(file))
        case SQLITE_FULL:
            return RTDBError(.ioError, "disk full while writing \(file); nothing was written")
        case SQLITE_NOTADB:
            return RTDBError(.invalidDatabase, "\(file) is not an rtdb database (it is not an SQLite file); it was left unchanged")
        case SQLITE_CORRUPT:
            return RTDBError(.ioError, "database \(file) is corrupt")
        case SQLITE_IOERR where systemErrno == ENOSPC:
            return RTDBError(.ioError, "disk full while using \(file); nothing was written. Free some space on its disk and try again")
        case SQLITE_IOERR:
            return RTDBError(.ioError, "I/O error on \(file): \(message)")
        case SQLITE_NOMEM:
            return RTDBError(.internal, "out of memory")
        default:
            return RTDBError(.internal, "database error on \(file): \(message)")
        }
    }
}

/// Deadline for the busy handler, owned by the connection.
final class BusyState {
    var deadlineNanos: UInt64 = 0
    var timeoutNanos: UInt64
    /// The handler gives up at once: a statement that finds the file locked fails with
    /// SQLITE_BUSY instead of waiting (a caller that must not block, such as rtdb serve's loop).
    var declines = false
    init(timeoutNanos: UInt64) { self.timeoutNanos = timeoutNanos }
}

func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Retries a locked database with short randomised sleeps until the deadline, so contending
/// processes take turns quickly instead of backing off for tens of milliseconds.
private let busyHandler: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32 = { ctx, attempt in
    guard let ctx else { return 0 }
    let state = Unmanaged<BusyState>.fromOpaque(ctx).takeUnretainedValue()
    if state.declines { return 0 }
    let now = monotonicNanos()
    if attempt == 0 { state.deadlineNanos = now + state.timeoutNanos }
    if now >= state.deadlineNanos { return 0 }
    let micros = UInt32(attempt < 10 ? 100 + Int.random(in: 0..<400) : 500 + Int.random(in: 0..<2000))
    usleep(micros)
    return 1
}

/// One SQLite connection; closed by its owner's deinit. Other modules get it only inside a
/// transaction the database runs (`FileTransaction`), never to keep.
public final class Connection {
    let handle: OpaquePointer
    public let file: String
    private let busy: BusyState
    private var statements: [String: Statement] = [:]
    /// In front of `statements`: slots chosen by the address of the SQL text's bytes. The
    /// statements a write runs every time are string literals, whose bytes never move, so a
    /// hit costs one comparison of the text with itself instead of hashing it (a slot whose
    /// text differs, e.g. memory reused by another string, is a miss).
    private var recent = [RecentStatement](repeating: RecentStatement(), count: 64)
    /// What the open write transaction knows already (TransactionFacts.swift).
    var facts = TransactionFacts()
    /// The facts this connection's last write transaction committed, and the file's data
    /// version right after (TransactionFacts.swift); nil once anything else may have happened.
    var carriedFacts: (facts: TransactionFacts, version: UInt32)? = nil
    /// A transaction begun with BEGIN IMMEDIATE is open (its COMMIT carries its facts).
    var writeTransactionOpen = false
    /// The thread that may use the connection and its statements (shared with them: a
    /// statement may outlive this object, as SQLite keeps a closed connection's handle until
    /// its last statement is finalized).
    let ownership = Ownership()

    /// The thread that may use the connection: the one that opened it, or the one it is lent
    /// to (`RowStatements.moveOwner`). Debug builds check it where statements run.
    var owner: pthread_t {
        get { ownership.thread }
        set { ownership.thread = newValue }
    }

    /// True on the thread that owns the connection (what the debug checks ask).
    var isOwnedByCurrentThread: Bool { ownership.isCurrentThread }

    private struct RecentStatement {
        var address: UInt = 0
        var sql = ""
        var statement: Statement? = nil
    }

    /// Set before the first connection opens: SQLite keeps no memory statistics (nothing here
    /// reads them), so its allocations take no global mutex. Too late (another part of the
    /// process opened SQLite first) only costs the mutex.
    private static let configured: Void = { _ = rtdb_sqlite3_config_no_memstatus() }()

    /// `immutable`: read the file alone, read-only, without locks or WAL files (see `FileAccess`).
    init(file: String, create: Bool, timeoutSeconds: Double, immutable: Bool = false) throws {
        Connection.configured
        var db: OpaquePointer?
        let flags = immutable
            ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(immutable ? FileAccess.immutableURI(file) : file, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let err = SQLiteError(code: rc, systemErrno: db.map { sqlite3_system_errno($0) } ?? errno,
                                  message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open", sql: nil)
            if let db { sqlite3_close_v2(db) }
            throw err.rtdbError(file: file)
        }
        handle = db
        self.file = file
        busy = BusyState(timeoutNanos: UInt64(max(0, timeoutSeconds) * 1e9))
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_handler(db, busyHandler, Unmanaged.passUnretained(busy).toOpaque())
    }

    /// While true, a statement that finds the file locked by another connection fails at once
    /// (SQLITE_BUSY, the `timeout` error) instead of waiting up to the timeout.
    var declinesLockWaits: Bool {
        get { busy.declines }
        set { busy.declines = newValue }
    }

    deinit {
        recent.removeAll()
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String? = nil) -> RTDBError {
        SQLiteError(rc, on: handle, sql: sql).rtdbError(file: file)
    }

    /// Runs statements that return no rows of interest.
    public func exec(_ sql: String) throws {
        assert(isOwnedByCurrentThread, "connection to \(file) used off the thread that owns it")
        try crossingBoundary(sql) {
            let rc = sqlite3_exec(handle, sql, nil, nil, nil)
            if rc != SQLITE_OK { throw error(rc, sql: sql) }
        }
    }

    /// Runs one short statement kept prepared: for what a hot path repeats on every request
    /// (`SAVEPOINT`, `RELEASE`, `BEGIN`, `COMMIT`), which `exec` would parse each time.
    public func run(_ sql: String) throws {
        try crossingBoundary(sql) { try statement(sql).run() }
    }

    /// A cached prepared statement, reset and with bindings cleared.
    public func statement(_ sql: String) throws -> Statement {
        // (Texts of up to 15 bytes live inside the String value: their address is not theirs.)
        let address = sql.utf8.count > 15 ? sql.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0 : 0
        let slot = Int(truncatingIfNeeded: address >> 4) & (recent.count - 1)
        if address != 0, recent[slot].address == address, recent[slot].sql == sql, let s = recent[slot].statement {
            s.reset()
            return s
        }
        let s: Statement
        if let cached = statements[sql] {
            cached.reset()
            s = cached
        } else {
            var stmt: OpaquePointer?
            let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
            guard rc == SQLITE_OK, let stmt else { throw error(rc, sql: sql) }
            s = Statement(stmt, connection: self)
            statements[sql] = s
        }
        if address != 0 { recent[slot] = RecentStatement(address: address, sql: sql, statement: s) }
        return s
    }

    /// A single integer from a one-row query (e.g. a pragma).
    public func integer(_ sql: String) throws -> Int64? {
        let s = try statement(sql)
        defer { s.reset() }
        return try s.step() ? s.int(0) : nil
    }

    public func text(_ sql: String) throws -> String? {
        let s = try statement(sql)
        defer { s.reset() }
        return try s.step() ? s.string(0) : nil
    }

    /// Set when a statement failed because the disk is full (see `noteFullDisk`).
    var diskWasFull = false

    /// Records whether the last failure on this connection was a full disk; call it before a
    /// rollback, which resets SQLite's error code.
    func noteFullDisk() {
        diskWasFull = sqlite3_errcode(handle) & 0xFF == SQLITE_FULL
    }

    /// False while a transaction is open on this connection.
    public var autocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// The rowid of the last row this connection inserted.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// How many rows the last statement changed.
    public var changes: Int { Int(sqlite3_changes(handle)) }
}

/// The thread a connection belongs to, shared by the connection and its statements.
final class Ownership {
    var thread: pthread_t = pthread_self()
    var isCurrentThread: Bool { pthread_equal(thread, pthread_self()) != 0 }
}

/// A prepared statement, finalized by deinit. It keeps no reference to its `Connection`
/// (whose cache holds it): what it needs to explain a failure is the database handle, which
/// SQLite keeps alive until the last statement is finalized (`sqlite3_close_v2`), and the
/// file's name.
public final class Statement {
    let handle: OpaquePointer
    private let database: OpaquePointer
    private let file: String
    private let ownership: Ownership

    init(_ handle: OpaquePointer, connection: Connection) {
        self.handle = handle
        database = connection.handle
        file = connection.file
        ownership = connection.ownership
    }

    deinit { sqlite3_finalize(handle) }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Steps once: true when a row is available, false when done.
    @inline(__always)
    public func step() throws -> Bool {
        assert(ownership.isCurrentThread, "a statement used off the thread that owns its connection")
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let err = SQLiteError(rc, on: database, sql: sqlite3_sql(handle).map { String(cString: $0) }).rtdbError(file: file)
        sqlite3_reset(handle)
        throw err
    }

    /// Runs to completion.
    public func run() throws {
        while try step() {}
        sqlite3_reset(handle)
    }

    public func bind(_ i: Int32, text: String) {
        var t = text
        t.withUTF8 { buf in
            _ = sqlite3_bind_text(handle, i, textPointer(buf),
                                  Int32(buf.count), sqliteTransient)
        }
    }

    func bind(_ i: Int32, bytes: UnsafeBufferPointer<UInt8>) {
        _ = sqlite3_bind_text(handle, i, textPointer(bytes),
                              Int32(bytes.count), sqliteTransient)
    }

    /// Binds bytes as a blob (an empty buffer is an empty blob, not NULL).
    func bind(_ i: Int32, blob: UnsafeBufferPointer<UInt8>) {
        _ = sqlite3_bind_blob(handle, i, UnsafeRawPointer(textPointer(blob)),
                              Int32(blob.count), sqliteTransient)
    }

    func bind(_ i: Int32, blob: [UInt8]) {
        blob.withUnsafeBufferPointer { bind(i, blob: $0) }
    }

    public func bind(_ i: Int32, int: Int64) { sqlite3_bind_int64(handle, i, int) }

    public func bindNull(_ i: Int32) { sqlite3_bind_null(handle, i) }

    public func int(_ col: Int32) -> Int64 { sqlite3_column_int64(handle, col) }

    /// True when the column holds NULL.
    public func isNull(_ col: Int32) -> Bool { sqlite3_column_type(handle, col) == SQLITE_NULL }

    /// The column as text, nil when it holds NULL.
    public func optionalString(_ col: Int32) -> String? { isNull(col) ? nil : string(col) }

    public func string(_ col: Int32) -> String {
        let n = Int(sqlite3_column_bytes(handle, col))
        guard let p = sqlite3_column_text(handle, col) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The raw bytes of a text column, valid until the next step or reset.
    @inline(__always)
    func bytes(_ col: Int32) -> UnsafeBufferPointer<UInt8> {
        let p = sqlite3_column_text(handle, col)
        let n = Int(sqlite3_column_bytes(handle, col))
        return UnsafeBufferPointer(start: p, count: p == nil ? 0 : n)
    }

    /// The raw bytes of a blob column, valid until the next step or reset.
    @inline(__always)
    func blob(_ col: Int32) -> UnsafeBufferPointer<UInt8> {
        let p = sqlite3_column_blob(handle, col)
        let n = Int(sqlite3_column_bytes(handle, col))
        return UnsafeBufferPointer(start: p?.assumingMemoryBound(to: UInt8.self), count: p == nil ? 0 : n)
    }
}
