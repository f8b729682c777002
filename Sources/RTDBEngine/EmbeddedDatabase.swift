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
    private var schemaReady = false

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

    /// The connection for reading, or nil when the file does not exist yet (nothing stored).
    private func readConnection() throws -> Connection? {
        if let conn { return conn }
        guard fileExists() else { return nil }
        let c = try Connection(file: file, create: false, timeoutSeconds: timeoutSeconds)
        conn = c
        return c
    }

    /// The connection for writing: creates parent folders and the file on first write.
    private func writeConnection() throws -> Connection {
        let c: Connection
        if let existing = conn {
            c = existing
        } else {
            try makeParentDirectories()
            c = try Connection(file: file, create: true, timeoutSeconds: timeoutSeconds)
            conn = c
        }
        if !schemaReady {
            if try c.text("PRAGMA journal_mode") != "wal" {
                _ = try c.text("PRAGMA journal_mode=WAL")
            }
            // A larger page cache keeps big writes from spilling pages before the commit.
            try c.exec("PRAGMA synchronous=FULL; PRAGMA cache_size=-65536")
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
            schemaReady = true
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

    /// Runs `body` in a read transaction (a consistent snapshot across statements).
    private func reading<T>(_ empty: T, _ body: (Connection) throws -> T) throws -> T {
        guard let c = try readConnection() else { return empty }
        try c.exec("BEGIN")
        defer { try? c.exec("COMMIT") }
        do {
            return try body(c)
        } catch let e as RTDBError where e.message.contains("no such table") {
            return empty   // a file that holds no data yet
        }
    }

    /// Runs `body` in a write transaction; commits when it returns, rolls back when it throws.
    private func writing<T>(_ body: (Connection) throws -> T) throws -> T {
        let c = try writeConnection()
        try c.exec("BEGIN IMMEDIATE")
        do {
            let result = try body(c)
            try c.exec("COMMIT")
            return result
        } catch {
            try? c.exec("ROLLBACK")
            throw error
        }
    }

    // MARK: path encoding

    static func encode(_ path: Path) -> [UInt8] {
        var out: [UInt8] = []
        for (i, k) in path.keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: "/")) }
            out.append(contentsOf: k.utf8)
        }
        return out
    }

    /// The key range [lo, hi) holding every strict descendant of `path`.
    static func descendantRange(_ enc: [UInt8]) -> (lo: [UInt8], hi: [UInt8])? {
        if enc.isEmpty { return nil }   // the root: every row but ""
        return (enc + [UInt8(ascii: "/")], enc + [UInt8(ascii: "0")])
    }

    // MARK: leaf values

    static func bind(_ s: Statement, _ col: Int32, _ node: Node) {
        switch node {
        case .int(let v): sqlite3_bind_int64(s.handle, col, v)
        case .double(let v): sqlite3_bind_double(s.handle, col, v)
        case .string(let v): s.bind(col, text: v)
        case .bool(let v):
            var b: UInt8 = v ? 1 : 0
            sqlite3_bind_blob(s.handle, col, &b, 1, sqliteTransient)
        case .null, .object:
            sqlite3_bind_null(s.handle, col)
        }
    }

    @inline(__always)
    static func leaf(_ s: Statement, _ col: Int32) -> Node {
        switch sqlite3_column_type(s.handle, col) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(s.handle, col))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(s.handle, col))
        case SQLITE_TEXT: return .string(s.string(col))
        case SQLITE_BLOB:
            let p = sqlite3_column_blob(s.handle, col)
            let n = sqlite3_column_bytes(s.handle, col)
            return .bool(n > 0 && p?.load(as: UInt8.self) != 0)
        default: return .null
        }
    }

    // MARK: reads (inside a transaction)

    /// The value at `path` as of the current transaction.
    func read(_ c: Connection, _ path: Path) throws -> Node {
        let enc = EmbeddedDatabase.encode(path)
        let one = try c.statement("SELECT v FROM data WHERE path = ?1")
        enc.withUnsafeBufferPointer { one.bind(1, bytes: $0) }
        if try one.step() {
            let v = EmbeddedDatabase.leaf(one, 0)
            one.reset()
            return v
        }
        one.reset()
        var builder = TreeBuilder()
        let skip = enc.isEmpty ? 0 : enc.count + 1
        try scanDescendants(c, enc) { s in
            let rel = s.bytes(0)
            builder.add(rel: UnsafeBufferPointer(rebasing: rel[skip...]), value: EmbeddedDatabase.leaf(s, 1))
        }
        return builder.finish()
    }

    /// Calls `row` for every leaf strictly below the encoded path, in storage order
    /// (column 0: path, column 1: value).
    func scanDescendants(_ c: Connection, _ enc: [UInt8], _ row: (Statement) throws -> Void) throws {
        let s: Statement
        if let (lo, hi) = EmbeddedDatabase.descendantRange(enc) {
            s = try c.statement("SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
            lo.withUnsafeBufferPointer { s.bind(1, bytes: $0) }
            hi.withUnsafeBufferPointer { s.bind(2, bytes: $0) }
        } else {
            s = try c.statement("SELECT path, v FROM data WHERE path > ''")
        }
        defer { s.reset() }
        while try s.step() { try row(s) }
    }

    /// Only what an increment needs: the leaf at `path`, or an object marker, or null.
    func readForIncrement(_ c: Connection, _ path: Path) throws -> Node {
        let enc = EmbeddedDatabase.encode(path)
        let one = try c.statement("SELECT v FROM data WHERE path = ?1")
        enc.withUnsafeBufferPointer { one.bind(1, bytes: $0) }
        defer { one.reset() }
        if try one.step() { return EmbeddedDatabase.leaf(one, 0) }
        return try hasDescendants(c, enc) ? .object([Node.Entry("_", .bool(true))]) : .null
    }

    func hasDescendants(_ c: Connection, _ enc: [UInt8]) throws -> Bool {
        let s: Statement
        if let (lo, hi) = EmbeddedDatabase.descendantRange(enc) {
            s = try c.statement("SELECT 1 FROM data WHERE path >= ?1 AND path < ?2 LIMIT 1")
            lo.withUnsafeBufferPointer { s.bind(1, bytes: $0) }
            hi.withUnsafeBufferPointer { s.bind(2, bytes: $0) }
        } else {
            s = try c.statement("SELECT 1 FROM data WHERE path > '' LIMIT 1")
        }
        defer { s.reset() }
        return try s.step()
    }

    // MARK: writes (inside a transaction)

    /// Replaces the value at `path` with `value` (already resolved).
    func write(_ c: Connection, _ path: Path, _ value: Node) throws {
        var enc = EmbeddedDatabase.encode(path)
        // A leaf at any ancestor would shadow the new value: remove it.
        if !path.isRoot {
            let del = try c.statement("DELETE FROM data WHERE path = ?1")
            var prefix: [UInt8] = []
            del.bind(1, text: "")
            try del.run()
            for key in path.keys.dropLast() {
                if !prefix.isEmpty { prefix.append(UInt8(ascii: "/")) }
                prefix.append(contentsOf: key.utf8)
                prefix.withUnsafeBufferPointer { del.bind(1, bytes: $0) }
                try del.run()
            }
        }
        try deleteSubtree(c, enc)
        let ins = try c.statement("INSERT INTO data(path, v) VALUES(?1, ?2)")
        try insert(ins, value, &enc)
    }

    private func deleteSubtree(_ c: Connection, _ enc: [UInt8]) throws {
        if let (lo, hi) = EmbeddedDatabase.descendantRange(enc) {
            let del = try c.statement("DELETE FROM data WHERE path = ?1")
            enc.withUnsafeBufferPointer { del.bind(1, bytes: $0) }
            try del.run()
            let range = try c.statement("DELETE FROM data WHERE path >= ?1 AND path < ?2")
            lo.withUnsafeBufferPointer { range.bind(1, bytes: $0) }
            hi.withUnsafeBufferPointer { range.bind(2, bytes: $0) }
            try range.run()
        } else {
            try c.exec("DELETE FROM data")
        }
    }

    private func insert(_ ins: Statement, _ node: Node, _ path: inout [UInt8]) throws {
        switch node {
        case .null:
            return
        case .object(let list):
            let mark = path.count
            for e in list {
                if mark > 0 { path.append(UInt8(ascii: "/")) }
                path.append(contentsOf: e.key.utf8)
                try insert(ins, e.node, &path)
                path.removeSubrange(mark...)
            }
        default:
            try path.withUnsafeBufferPointer { buf in
                _ = sqlite3_bind_text(ins.handle, 1, textPointer(buf),
                                      Int32(buf.count), nil)
                EmbeddedDatabase.bind(ins, 2, node)
                defer { sqlite3_reset(ins.handle) }
                _ = try ins.step()
            }
        }
    }

    /// Records the touched paths for watchers and trims old log entries.
    private func log(_ c: Connection, _ paths: [Path]) throws {
        let text = paths.map { EmbeddedDatabase.encodeString($0) }.joined(separator: "\n")
        let ins = try c.statement("INSERT INTO log(paths) VALUES(?1)")
        ins.bind(1, text: text)
        try ins.run()
        let seq = Int64(sqlite3_last_insert_rowid(c.handle))
        if seq % 100 == 0 {
            let trim = try c.statement("DELETE FROM log WHERE seq <= ?1")
            trim.bind(1, int: seq - EmbeddedDatabase.logKeep)
            try trim.run()
        }
    }

    static func encodeString(_ path: Path) -> String { path.keys.joined(separator: "/") }

    // MARK: Database

    public func get(_ path: Path) throws -> Node {
        try reading(.null) { c in try read(c, path) }
    }

    public func shallow(_ path: Path) throws -> Node {
        try reading(.null) { c in
            let enc = EmbeddedDatabase.encode(path)
            let one = try c.statement("SELECT v FROM data WHERE path = ?1")
            enc.withUnsafeBufferPointer { one.bind(1, bytes: $0) }
            if try one.step() {
                let v = EmbeddedDatabase.leaf(one, 0)
                one.reset()
                return v
            }
            one.reset()
            return Node.object(normalizing: try childKeys(c, enc).map { Node.Entry($0, .bool(true)) })
        }
    }

    /// The keys of the immediate children of the encoded path, found by skipping from one
    /// child's rows to the next (cost grows with the number of children, not of leaves).
    func childKeys(_ c: Connection, _ enc: [UInt8]) throws -> [String] {
        let prefix = enc.isEmpty ? [] : enc + [UInt8(ascii: "/")]
        let hi = enc.isEmpty ? nil : enc + [UInt8(ascii: "0")]
        let bound = hi == nil ? "" : " AND path < ?2"
        let inclusive = try c.statement("SELECT path FROM data WHERE path >= ?1" + bound + " LIMIT 1")
        let exclusive = try c.statement("SELECT path FROM data WHERE path > ?1" + bound + " LIMIT 1")
        var cursor = prefix
        var strict = false
        var keys: [String] = []
        while true {
            let s = strict ? exclusive : inclusive
            s.reset()
            cursor.withUnsafeBufferPointer { s.bind(1, bytes: $0) }
            if let hi { hi.withUnsafeBufferPointer { s.bind(2, bytes: $0) } }
            guard try s.step() else { break }
            let row = Array(s.bytes(0))
            s.reset()
            let rest = row[prefix.count...]
            if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
                // An object child: its rows are [key/, key0); continue at key0.
                keys.append(String(decoding: row[prefix.count..<slash], as: UTF8.self))
                cursor = Array(row[..<slash]) + [UInt8(ascii: "0")]
                strict = false
            } else {
                // A leaf child: continue strictly after it.
                keys.append(String(decoding: rest, as: UTF8.self))
                cursor = row
                strict = true
            }
        }
        return keys
    }

    public func query(_ path: Path, _ query: Query) throws -> [Node.Entry] {
        try reading([]) { c in
            if case .key = query.order {
                return query.window(of: try read(c, path))
            }
            if query.limit != nil {
                return try indexedWindow(c, path, query)
            }
            return query.window(of: try read(c, path))
        }
    }

    /// A limited query ordered by value or child, without materialising every child: scan the
    /// subtree once, keeping only each child's sort value, pick the window, then read just the
    /// children in it.
    private func indexedWindow(_ c: Connection, _ path: Path, _ query: Query) throws -> [Node.Entry] {
        let enc = EmbeddedDatabase.encode(path)
        let one = try c.statement("SELECT v FROM data WHERE path = ?1")
        enc.withUnsafeBufferPointer { one.bind(1, bytes: $0) }
        let isLeaf = try one.step()
        one.reset()
        if isLeaf { return [] }
        let skip = enc.isEmpty ? 0 : enc.count + 1
        var childPath: [UInt8] = []
        if case .child(let p) = query.order { childPath = Array(EmbeddedDatabase.encodeString(p).utf8) }
        var entries: [Node.Entry] = []
        var currentKey: [UInt8] = []
        var currentIsObject = false
        try scanDescendants(c, enc) { s in
            let full = s.bytes(0)
            let rel = UnsafeBufferPointer(rebasing: full[skip...])
            var end = 0
            while end < rel.count, rel[end] != UInt8(ascii: "/") { end += 1 }
            let key = UnsafeBufferPointer(rebasing: rel[0..<end])
            let isNew = !key.elementsEqual(currentKey)
            if isNew {
                currentKey = Array(key)
                currentIsObject = end < rel.count
                entries.append(Node.Entry(String(decoding: key, as: UTF8.self), .null))
            }
            let sub = end < rel.count ? UnsafeBufferPointer(rebasing: rel[(end + 1)...]) : UnsafeBufferPointer(rebasing: rel[end...])
            switch query.order {
            case .value:
                // Sort value: the leaf itself; any object sorts as "an object".
                if isNew {
                    entries[entries.count - 1].node = currentIsObject ? .object([Node.Entry("_", .bool(true))]) : EmbeddedDatabase.leaf(s, 1)
                }
            case .child:
                if end < rel.count {
                    if sub.elementsEqual(childPath) {
                        entries[entries.count - 1].node = EmbeddedDatabase.leaf(s, 1)
                    } else if sub.count > childPath.count, sub[childPath.count] == UInt8(ascii: "/"),
                              UnsafeBufferPointer(rebasing: sub[0..<childPath.count]).elementsEqual(childPath) {
                        entries[entries.count - 1].node = .object([Node.Entry("_", .bool(true))])
                    }
                }
            case .key:
                break
            }
        }
        // Choose the window on sort values alone, then read only the chosen children.
        let scored = entries.filter { query.inRange($0.key, sortValue: $0.node) }
            .map { (key: SortableKey($0.key), value: $0.node) }
        let chosen = Query.ordered(scored, limit: query.limit) { a, b in
            let c = ValueOrder.compare(a.value, b.value)
            return c != 0 ? c < 0 : SortableKey.compare(a.key, b.key) < 0
        }
        return try chosen.map { Node.Entry($0.key.key, try read(c, path.appending($0.key.key))) }
    }

    public func set(_ path: Path, _ value: Node) throws -> Node {
        try writing { c in
            let now = clock()
            let resolved = try ServerValues.resolve(value, at: path, now: now) { try readForIncrement(c, $0) }
            try write(c, path, resolved)
            try log(c, [path])
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
                try log(c, resolved.count > EmbeddedDatabase.logMaxPaths ? [path] : resolved.map { path.appending($0.path) })
            }
            return resolved
        }
    }

    public func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] {
        try writing { c in
            let now = clock()
            var out: [Node.Entry] = []
            out.reserveCapacity(values.count)
            for v in values {
                let key = pushIDs.next(now: now)
                let child = path.appending(key)
                let resolved = try ServerValues.resolve(v, at: child, now: now) { try readForIncrement(c, $0) }
                if out.isEmpty {
                    try write(c, child, resolved)
                } else {
                    let ins = try c.statement("INSERT INTO data(path, v) VALUES(?1, ?2)")
                    var enc = EmbeddedDatabase.encode(child)
                    try insert(ins, resolved, &enc)
                }
                out.append(Node.Entry(key, resolved))
            }
            if !out.isEmpty {
                try log(c, out.count > EmbeddedDatabase.logMaxPaths ? [path] : out.map { path.appending($0.key) })
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
            try log(c, [path])
            return .committed(resolved)
        }
    }

    public func increment(_ path: Path, by delta: Node) throws -> Node {
        try writing { c in
            let new = ServerValues.increment(try readForIncrement(c, path), by: delta)
            try write(c, path, new)
            try log(c, [path])
            return new
        }
    }

    public func observe(_ path: Path, idle: () throws -> Bool,
                        onChange: (Node, [String]?) throws -> Bool) throws {
        try Observer(database: self, path: path).run(idle: idle, onChange)
    }

    // MARK: observation support

    /// Reads the log after `seq` and the data it touched at `path`, in one snapshot.
    /// Returns nil when nothing changed at or below `path`.
    func changes(at path: Path, after seq: Int64, current: Node) throws -> (seq: Int64, value: Node, keys: [String]?)? {
        guard let c = try readConnection() else { return nil }
        try c.exec("BEGIN")
        defer { try? c.exec("COMMIT") }
        let s: Statement
        do {
            s = try c.statement("SELECT seq, paths FROM log WHERE seq > ?1 ORDER BY seq")
        } catch let e as RTDBError where e.message.contains("no such table") {
            return nil
        }
        s.bind(1, int: seq)
        var last = seq
        var whole = false
        var keys: [String] = []
        var first = true
        while try s.step() {
            let n = s.int(0)
            // Entries were trimmed since `seq`, or the watcher started before there was a log.
            if first && (seq == 0 || n != seq + 1) { whole = true }
            first = false
            last = n
            if whole { continue }
            for line in s.string(1).split(separator: "\n", omittingEmptySubsequences: false) {
                let changed = Path(validatedKeys: line.isEmpty ? [] : line.split(separator: "/").map(String.init))
                if changed.contains(path) { whole = true; break }
                if path.contains(changed) { keys.append(changed.keys[path.count]) }
            }
        }
        s.reset()
        if last == seq { return nil }
        if whole { return (last, try read(c, path), nil) }
        if keys.isEmpty { return (last, current, []) }
        var value = current
        var seen: [String] = []
        for k in keys where !seen.contains(where: { KeyOrder.same($0, k) }) {
            seen.append(k)
            value = value.setting(child: k, to: try read(c, path.appending(k)))
        }
        return (last, value, seen)
    }

    /// The current value at `path` and the log position it reflects, in one snapshot.
    func snapshot(_ path: Path) throws -> (seq: Int64, value: Node)? {
        guard let c = try readConnection() else { return nil }
        try c.exec("BEGIN")
        defer { try? c.exec("COMMIT") }
        do {
            let seq = try c.integer("SELECT COALESCE(MAX(seq), 0) FROM log") ?? 0
            return (seq, try read(c, path))
        } catch let e as RTDBError where e.message.contains("no such table") {
            return (0, .null)
        }
    }

    /// A counter that changes when another connection commits (nil: no file yet).
    func dataVersion() throws -> Int64? {
        guard let c = try readConnection() else { return nil }
        return try c.integer("PRAGMA data_version")
    }
}
