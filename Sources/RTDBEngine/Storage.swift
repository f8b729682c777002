import CSQLite
import RTDBCore

/// Storage layout of the embedded database: how paths become row keys, how leaves are stored,
/// and the reads and writes that every operation is built from (each runs inside a transaction
/// the caller opened).
extension EmbeddedDatabase {
    // MARK: path encoding

    /// The row key of `path` (see `StorageKey`).
    static func encode(_ path: Path) -> [UInt8] { StorageKey.encode(path) }

    // MARK: leaf values

    static func bind(_ s: Statement, _ col: Int32, _ node: Node) {
        switch node {
        case .int(let v): sqlite3_bind_int64(s.handle, col, v)
        case .double(let v): sqlite3_bind_double(s.handle, col, v)
        case .string(let v): s.bind(col, text: v)
        case .bool(let v):
            var b: UInt8 = v ? 1 : 0
            sqlite3_bind_blob(s.handle, col, &b, 1, sqliteTransient)
        case .prioritized(let base, _):
            bind(s, col, base)
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

    /// The value at `path` as of the current transaction, without priorities (a `.priority`
    /// path gives the priority).
    func read(_ c: Connection, _ path: Path) throws -> Node {
        if path.isPriority { return try priority(c, of: path.node) }
        var builder = TreeBuilder()
        return try readTree(c, EmbeddedDatabase.encode(path), &builder)
    }

    /// The value at `path` with its priorities (`Node.prioritized`), as an export shows it.
    /// Costs one more indexed lookup than `read`.
    func readExport(_ c: Connection, _ path: Path) throws -> Node {
        if path.isPriority { return try priority(c, of: path.node) }
        let enc = EmbeddedDatabase.encode(path)
        let (own, below) = try priorityRows(c, enc)
        var builder = TreeBuilder()
        builder.priorities = below
        let value = try readTree(c, enc, &builder)
        return own.map { value.withPriority($0) } ?? value
    }

    /// The value stored at the encoded path, from one scan of its rows: its own row when it is a
    /// leaf (a leaf has no rows below it), else its descendants' rows, built into a tree. The
    /// node's row and its descendants' are one contiguous range of keys, so one range scan
    /// reads either.
    private func readTree(_ c: Connection, _ enc: [UInt8], _ builder: inout TreeBuilder) throws -> Node {
        let s = try range(c, StorageKey.subtree(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        let skip = enc.count
        while try s.step() {
            let rel = s.blob(0)
            if rel.count == skip { return EmbeddedDatabase.leaf(s, 1) }
            builder.add(rel: UnsafeBufferPointer(rebasing: rel[skip...]), value: EmbeddedDatabase.leaf(s, 1))
        }
        return builder.finish()
    }

    /// The priority of the node at `path` (`.null` when it has none).
    func priority(_ c: Connection, of path: Path) throws -> Node {
        guard try priorityTableExists(c) else { return .null }
        let s = try c.statement("SELECT p FROM priorities WHERE path = ?1")
        s.bind(1, blob: EmbeddedDatabase.encode(path))
        defer { s.reset() }
        return try s.step() ? EmbeddedDatabase.leaf(s, 0) : .null
    }

    /// The priority stored for the encoded path itself and those below it (keyed by their path
    /// relative to it, as `TreeBuilder` sees rows).
    func priorityRows(_ c: Connection, _ enc: [UInt8]) throws -> (own: Node?, below: [[UInt8]: Node]) {
        guard try priorityTableExists(c) else { return (nil, [:]) }
        // The node's own row and its descendants' rows: one range of keys, one scan.
        var own: Node? = nil
        var below: [[UInt8]: Node] = [:]
        let skip = enc.count
        let s = try range(c, StorageKey.subtree(enc), "SELECT path, p FROM priorities WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        while try s.step() {
            let rel = s.blob(0)
            if rel.count == skip { own = EmbeddedDatabase.leaf(s, 1) } else { below[Array(rel[skip...])] = EmbeddedDatabase.leaf(s, 1) }
        }
        return (own, below)
    }

    /// Calls `row` for every leaf strictly below the encoded path, in storage order
    /// (column 0: path, column 1: value).
    func scanDescendants(_ c: Connection, _ enc: [UInt8], _ row: (Statement) throws -> Void) throws {
        let s = try range(c, StorageKey.descendants(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        while try s.step() { try row(s) }
    }

    /// `sql`, whose ?1 and ?2 bound a range of keys, bound to `keys` and ready to step. (The
    /// texts are whole literals: the statement cache finds them without hashing.)
    func range(_ c: Connection, _ keys: (lo: [UInt8], hi: [UInt8]), _ sql: String) throws -> Statement {
        let s = try c.statement(sql)
        s.bind(1, blob: keys.lo)
        s.bind(2, blob: keys.hi)
        return s
    }

    /// Only what an increment needs: the leaf at `path`, or an object marker, or null (a
    /// `.priority` path: the priority).
    func readForIncrement(_ c: Connection, _ path: Path) throws -> Node {
        if path.isPriority { return try priority(c, of: path.node) }
        let enc = EmbeddedDatabase.encode(path)
        if let v = try leaf(c, at: enc) { return v }
        return try hasDescendants(c, enc) ? EmbeddedDatabase.someObject : .null
    }

    /// Stands for "an object" where only that fact matters (all objects sort alike).
    static let someObject = Node.object([Node.Entry("_", .bool(true))])

    /// The leaf stored exactly at the encoded path, if there is one.
    func leaf(_ c: Connection, at enc: [UInt8]) throws -> Node? {
        let one = try c.statement("SELECT v FROM data WHERE path = ?1")
        one.bind(1, blob: enc)
        defer { one.reset() }
        return try one.step() ? EmbeddedDatabase.leaf(one, 0) : nil
    }

    func hasDescendants(_ c: Connection, _ enc: [UInt8]) throws -> Bool {
        let s = try range(c, StorageKey.descendants(enc), "SELECT 1 FROM data WHERE path >= ?1 AND path < ?2 LIMIT 1")
        defer { s.reset() }
        return try s.step()
    }

    // MARK: writes (inside a transaction)

    /// Replaces the value at `path` with `value` (already resolved), its priorities included: a
    /// node written without one loses the one it had. Writing a `.priority` path sets or clears
    /// that node's priority only. A node left empty by the write loses its priority too.
    /// `keepingSizes` false: the caller keeps `sizes` for a node above (`updateSizeChange`), or
    /// has found that its whole update leaves them alone (`smallFileBound`).
    func write(_ c: Connection, _ path: Path, _ value: Node, keepingSizes: Bool = true) throws {
        if path.isPriority {
            try writePriority(c, of: path.node, value)
            return
        }
        let indexes = try storedIndexes(c)
        let work = indexes.isEmpty ? nil : try prepareIndexes(c, indexes, path)
        var enc = EmbeddedDatabase.encode(path)
        var found: [(key: [UInt8], bytes: Int)] = []
        let written = keepingSizes ? SizeRules.measure(value, &enc, threshold: sizeThreshold, found: &found) : (bytes: 0, isObject: false)
        // In a file whose nodes all count less than the threshold, a write that keeps it so
        // has nothing to do in `sizes` (RootSize.swift).
        let small = keepingSizes ? try smallFileBound(c, growth: SizeRules.growthBound(enc, written)) : nil
        // (Removes a leaf above an empty node, as `removeAncestorLeaves` would.)
        let size = keepingSizes && small == nil ? try beginSizeChange(c, enc) : nil
        // A node that held a value has no leaf above it (a leaf has no rows below it): only a
        // write to an empty node can find a leaf above to replace.
        if try !deleteSubtree(c, enc), size == nil { try removeAncestorLeaves(c, of: path) }
        let rows = try LeafRows(c)
        try insert(rows, value, &enc)
        try rows.flush()
        if let size {
            try finishSizeChange(c, size, newBytes: written.bytes, newIsObject: written.isObject, found: found)
        }
        if let small { c.facts.rootSize = .below(small) }
        c.facts.writes += 1
        if value.isNull { try clearPrioritiesOfEmptiedAncestors(c, of: path) }
        if let work { try finishIndexes(c, work, path, value) }
    }

    /// Whether the node at the encoded path holds a value: a leaf there or rows below it.
    func hasData(_ c: Connection, _ enc: [UInt8]) throws -> Bool {
        try leaf(c, at: enc) != nil || hasDescendants(c, enc)
    }

    /// Removes a leaf at any proper ancestor of `path`: it would shadow a value written there.
    /// Such a leaf has no rows below it, so it is the last row before the path, and a row whose
    /// key is a prefix of the path's is an ancestor (segments are never prefixes of one
    /// another): one seek whatever the depth, and a delete only when there is one.
    func removeAncestorLeaves(_ c: Connection, of path: Path) throws {
        if path.isRoot { return }
        let enc = EmbeddedDatabase.encode(path)
        let before = try c.statement("SELECT path FROM data WHERE path < ?1 ORDER BY path DESC LIMIT 1")
        before.bind(1, blob: enc)
        var leaf: [UInt8]? = nil
        if try before.step() {
            let key = before.blob(0)
            if key.count < enc.count && key.elementsEqual(enc[..<key.count]) { leaf = Array(key) }
        }
        before.reset()
        guard let leaf else { return }
        let del = try c.statement("DELETE FROM data WHERE path = ?1")
        del.bind(1, blob: leaf)
        try del.run()
    }

    /// Deletes the rows of the encoded path and below it, in `data` and in `priorities`;
    /// whether the node held a value (rows of `data` were deleted).
    @discardableResult
    func deleteSubtree(_ c: Connection, _ enc: [UInt8]) throws -> Bool {
        if enc.isEmpty {
            try c.exec("DELETE FROM data")
            let held = c.changes > 0
            try c.exec("DELETE FROM priorities")
            return held
        }
        // One range per table: the node's own row and its descendants' are contiguous.
        let keys = StorageKey.subtree(enc)
        try range(c, keys, "DELETE FROM data WHERE path >= ?1 AND path < ?2").run()
        let held = c.changes > 0
        if try prioritiesMayExist(c) {
            try range(c, keys, "DELETE FROM priorities WHERE path >= ?1 AND path < ?2").run()
        }
        return held
    }

    /// Inserts every leaf of `node` and every priority in it, its path starting with `path`
    /// (restored on return).
    func insert(_ rows: LeafRows, _ node: Node, _ path: inout [UInt8]) throws {
        switch node {
        case .null:
            return
        case .prioritized(let base, let p):
            try rows.addPriority(path, p)
            try insert(rows, base, &path)
        case .object(let list):
            let mark = path.count
            for e in list {
                StorageKey.append(e.key, to: &path)
                try insert(rows, e.node, &path)
                path.removeSubrange(mark...)
            }
        default:
            try rows.add(path, node)
        }
    }

    /// Inserts the leaves and priorities of a flat value, its path starting with `path`
    /// (restored on return): what `insert` does for the same value as a `Node`.
    func insert(_ rows: LeafRows, _ value: FlatValue, _ path: inout [UInt8]) throws {
        let base = path.count
        defer { path.removeSubrange(base...) }
        var marks: [Int] = []
        try value.bytes.withUnsafeBufferPointer { bytes in
            func slice(_ r: Range<Int32>) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: bytes[Int(r.lowerBound)..<Int(r.upperBound)])
            }
            for t in value.tokens {
                switch t {
                case .enter(let key):
                    marks.append(path.count)
                    StorageKey.append(bytes: slice(key), to: &path)
                case .leave:
                    path.removeSubrange((marks.popLast() ?? base)...)
                case .leaf(let scalar):
                    try rows.add(path, scalar, bytes)
                case .child(let key, let scalar):
                    let mark = path.count
                    StorageKey.append(bytes: slice(key), to: &path)
                    try rows.add(path, scalar, bytes)
                    path.removeSubrange(mark...)
                case .priority(let scalar):
                    try rows.addPriority(path, scalar, bytes)
                }
            }
        }
    }

    /// Records the touched paths for watchers and what was written for the change feed
    /// (ChangeFeed.swift) in one `log` row, then trims old rows. A priority write is recorded as
    /// a change of its node. Without `copyData` (a streamed import, whose value was never held
    /// whole) the feed keeps only the operation, and readers read the paths' values.
    func log(_ c: Connection, _ paths: [Path], _ change: LoggedChange, copyData: Bool = true) throws {
        let text = paths.count == 1 ? EmbeddedDatabase.encodeString(paths[0].node)
            : paths.map { EmbeddedDatabase.encodeString($0.node) }.joined(separator: "\n")
        let feed = EmbeddedDatabase.feedColumns(change, copyData: copyData)
        let ins = try c.statement("INSERT INTO log(paths, op, base, data) VALUES(?1, ?2, ?3, ?4)")
        ins.bind(1, text: text)
        ins.bind(2, text: feed.op)
        ins.bind(3, text: feed.base)
        if let data = feed.data {
            data.withUnsafeBufferPointer { ins.bind(4, bytes: $0) }
        } else {
            sqlite3_bind_null(ins.handle, 4)
        }
        try ins.run()
        let seq = Int64(sqlite3_last_insert_rowid(c.handle))
        if seq % 100 == 0 {
            // The newest row always stays: the next write's seq follows it (no AUTOINCREMENT).
            let trim = try c.statement("DELETE FROM log WHERE seq <= ?1")
            trim.bind(1, int: seq - EmbeddedDatabase.logKeep)
            try trim.run()
        }
    }

    static func encodeString(_ path: Path) -> String { path.unrooted }

    /// The keys of the immediate children of the encoded path, in key order, found by skipping
    /// from one child's rows to the next (cost grows with the number of children, not leaves).
    func childKeys(_ c: Connection, _ enc: [UInt8]) throws -> [String] {
        var keys: [String] = []
        let (lo, hi) = StorageKey.descendants(enc)
        try eachChild(c, enc, from: lo, to: hi, descending: false) { key, _ in
            keys.append(key)
            return true
        }
        return keys
    }

    /// Calls `body` with the key (and the encoded segment) of each child of the encoded path
    /// whose rows lie in [lo, hi), one indexed seek per child, in key order or its reverse,
    /// until it returns false.
    func eachChild(_ c: Connection, _ enc: [UInt8], from lo: [UInt8], to hi: [UInt8], descending: Bool,
                   _ body: (String, [UInt8]) throws -> Bool) throws {
        let s = try c.statement(descending
            ? "SELECT path FROM data WHERE path >= ?1 AND path < ?2 ORDER BY path DESC LIMIT 1"
            : "SELECT path FROM data WHERE path >= ?1 AND path < ?2 ORDER BY path LIMIT 1")
        defer { s.reset() }
        var lo = lo, hi = hi
        while true {
            s.reset()
            s.bind(1, blob: lo)
            s.bind(2, blob: hi)
            guard try s.step() else { return }
            let row = s.blob(0)
            guard row.count > enc.count else { return }
            let end = StorageKey.segmentEnd(row, from: enc.count)
            let key = StorageKey.key(row, enc.count..<end)
            let child = Array(row[..<end])
            s.reset()
            if try !body(key, Array(child[enc.count...])) { return }
            if descending { hi = child } else { lo = StorageKey.successor(child) }
        }
    }

    /// A query in key order with bounds or a limit, reading only the children in its window:
    /// the bounds become a key range and each child is found by one seek. Nil when a bound
    /// cannot be expressed as a key range (the caller then filters the whole location).
    func keyWindow(_ c: Connection, _ path: Path, _ query: Query, export: Bool) throws -> [Node.Entry]? {
        guard let keys = try keyWindowKeys(c, path, query) else { return nil }
        return try keys.map { k in
            let child = path.appending(k)
            return Node.Entry(k, export ? try readExport(c, child) : try read(c, child))
        }
    }

    /// The keys of the children a key-ordered window selects, in key order, without reading
    /// their values (see `keyWindow`).
    func keyWindowKeys(_ c: Connection, _ path: Path, _ query: Query) throws -> [String]? {
        let enc = EmbeddedDatabase.encode(path)
        var (lo, hi) = StorageKey.descendants(enc)
        if let b = query.start {
            guard case .string(let k) = b.value, StorageKey.encodable(k) else { return nil }
            let at = enc + StorageKey.segment(k)
            let from = b.exclusive ? StorageKey.successor(at) : at
            if from.lexicographicallyPrecedes(lo) == false { lo = from }
        }
        if let b = query.end {
            guard case .string(let k) = b.value, StorageKey.encodable(k) else { return nil }
            let at = enc + StorageKey.segment(k)
            let to = b.exclusive ? at : StorageKey.successor(at)
            if to.lexicographicallyPrecedes(hi) { hi = to }
        }
        if try leaf(c, at: enc) != nil { return [] }
        var n = Int.max
        var descending = false
        switch query.limit {
        case .first(let k)?: n = k
        case .last(let k)?: n = k; descending = true
        case nil: break
        }
        if n <= 0 || !lo.lexicographicallyPrecedes(hi) { return [] }
        var keys: [String] = []
        try eachChild(c, enc, from: lo, to: hi, descending: descending) { key, _ in
            keys.append(key)
            return keys.count < n
        }
        if descending { keys.reverse() }
        return keys
    }

    /// A limited query ordered by value or child, without materialising every child: scan the
    /// subtree once, keeping only each child's sort value, pick the window, then read just the
    /// children in it.
    func indexedWindow(_ c: Connection, _ path: Path, _ query: Query) throws -> [Node.Entry] {
        let enc = EmbeddedDatabase.encode(path)
        if try leaf(c, at: enc) != nil { return [] }
        var child: Path? = nil
        if case .child(let p) = query.order { child = p }
        let entries = try sortValues(c, enc, child: child, valueOrder: { if case .value = query.order { return true }; return false }())
        // Choose the window on sort values alone, then read only the chosen children.
        // (`entries` holds each child's sort value in place of the child.)
        let ranked = entries.filter { query.inRange($0.key, sortValue: $0.node) }
            .map { Query.Ranked(key: SortableKey($0.key), sortValue: $0.node, entry: $0) }
        let chosen = Query.ordered(ranked, limit: query.limit, by: Query.Ranked.less)
        return try chosen.map { Node.Entry($0.entry.key, try readExport(c, path.appending($0.entry.key))) }
    }

    /// Each child of the encoded path with its sort value (in place of the child), in key
    /// order, from one scan of the subtree: by the value at `child` below it, or by its own
    /// value (`valueOrder`; any object sorts as "an object"), or `.null` for neither.
    func sortValues(_ c: Connection, _ enc: [UInt8], child: Path?, valueOrder: Bool, onRow: () throws -> Void = {}) throws -> [Node.Entry] {
        let skip = enc.count
        let childPath: [UInt8] = child.map { StorageKey.encode($0) } ?? []
        var entries: [Node.Entry] = []
        var currentKey: [UInt8] = []
        var currentIsObject = false
        try scanDescendants(c, enc) { s in
            try onRow()
            let full = s.blob(0)
            let rel = UnsafeBufferPointer(rebasing: full[skip...])
            let end = StorageKey.segmentEnd(rel, from: 0)
            let key = UnsafeBufferPointer(rebasing: rel[0..<end])
            let isNew = !key.elementsEqual(currentKey)
            if isNew {
                currentKey = Array(key)
                currentIsObject = end < rel.count
                entries.append(Node.Entry(StorageKey.key(rel, 0..<end), .null))
            }
            let sub = UnsafeBufferPointer(rebasing: rel[end...])
            if valueOrder {
                // Sort value: the leaf itself; any object sorts as "an object".
                if isNew {
                    entries[entries.count - 1].node = currentIsObject ? EmbeddedDatabase.someObject : EmbeddedDatabase.leaf(s, 1)
                }
            } else if child != nil, end < rel.count {
                if sub.elementsEqual(childPath) {
                    entries[entries.count - 1].node = EmbeddedDatabase.leaf(s, 1)
                } else if sub.count > childPath.count,
                          UnsafeBufferPointer(rebasing: sub[0..<childPath.count]).elementsEqual(childPath) {
                    entries[entries.count - 1].node = EmbeddedDatabase.someObject
                }
            }
        }
        return entries
    }
}
