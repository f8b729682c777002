import CSQLite
import RTDBCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension IndexDefinition {
    /// The value a child sorts by in this index.
    func sortValue(_ node: Node) -> Node {
        guard let child else { return node.unprioritized.isObject ? EmbeddedDatabase.someObject : node.unprioritized }
        let v = node.child(at: child).unprioritized
        return v.isObject ? EmbeddedDatabase.someObject : v
    }

    /// True when this index answers a query in `order`.
    func serves(_ order: Query.Order) -> Bool {
        switch order {
        case .value: return child == nil
        case .child(let p): return child.map { $0.keys == p.keys } ?? false
        case .key, .priority: return false
        }
    }
}

/// Index storage (schema version 3): `indexes(id, location, child)` defines them and
/// `index_entries(ix, parent, entry)` holds one row per child of every matching location,
/// `entry` being `IndexKey` of its sort value followed by its `StorageKey` segment. Every write
/// keeps the entries exact in its own transaction (`maintainIndexes`), and queries read a
/// window of entries instead of the location (`indexedQuery`).
extension EmbeddedDatabase {
    struct StoredIndex {
        var id: Int64
        var definition: IndexDefinition
    }

    /// The indexes of the file (none for a file that predates them).
    func storedIndexes(_ c: Connection) throws -> [StoredIndex] {
        if legacyLayout { return [] }
        if let known = c.openFacts?.indexes { return known }
        let s = try c.statement("SELECT id, location, child FROM indexes ORDER BY id")
        defer { s.reset() }
        var out: [StoredIndex] = []
        while try s.step() {
            if let d = try? IndexDefinition(location: s.string(1), child: s.string(2)) {
                out.append(StoredIndex(id: s.int(0), definition: d))
            }
        }
        if !c.autocommit { c.facts.indexes = out }
        return out
    }

    // MARK: public operations

    /// Creates an index and fills it from the data; false when it existed already.
    public func addIndex(_ d: IndexDefinition) throws -> Bool {
        try addIndex(d, progress: Progress.none)
    }

    /// As `addIndex(_:)`; `progress` counts the rows read to build it.
    public func addIndex(_ d: IndexDefinition, progress: ProgressSink) throws -> Bool {
        progress.begin("index", total: nil, unit: .items("rows"))
        defer { progress.end() }
        return try writing { c in
            if try storedIndexes(c).contains(where: { $0.definition == d }) { return false }
            let ins = try c.statement("INSERT INTO indexes(location, child) VALUES(?1, ?2)")
            ins.bind(1, text: d.location)
            ins.bind(2, text: d.childText)
            try ins.run()
            c.facts.indexes = nil
            let index = StoredIndex(id: Int64(sqlite3_last_insert_rowid(c.handle)), definition: d)
            try fillEntries(c, index, index.definition.pattern[...], below: Path.root, progress: progress)
            return true
        }
    }

    /// Adds the entries of every location below `at` that matches the rest of the pattern,
    /// from the data as stored.
    func fillEntries(_ c: Connection, _ index: StoredIndex, _ rest: ArraySlice<String>, below at: Path,
                     progress: ProgressSink = Progress.none) throws {
        let d = index.definition
        var rows: Int64 = 0
        try forEachLocation(c, rest, at) { location in
            let entries = try sortValues(c, EmbeddedDatabase.encode(location), child: d.child, valueOrder: d.child == nil) {
                rows += 1
                if rows & 4095 == 0 { try progress.update(done: rows) }
            }
            let rows = try EntryRows(c)
            let parent = EmbeddedDatabase.encode(location)
            for e in entries { try rows.add(index.id, parent, sortValue: e.node, key: e.key) }
            try rows.flush()
        }
    }

    /// Drops an index; false when there was none.
    public func removeIndex(_ d: IndexDefinition) throws -> Bool {
        try writing { c in
            guard let index = try storedIndexes(c).first(where: { $0.definition == d }) else { return false }
            let del = try c.statement("DELETE FROM index_entries WHERE ix = ?1")
            del.bind(1, int: index.id)
            try del.run()
            let drop = try c.statement("DELETE FROM indexes WHERE id = ?1")
            drop.bind(1, int: index.id)
            try drop.run()
            c.facts.indexes = nil
            return true
        }
    }

    public func indexes() throws -> [IndexDefinition] {
        try reading([]) { c in try storedIndexes(c).map(\.definition) }
    }

    // MARK: building

    /// Calls `body` with every existing location that matches the rest of a pattern below `at`.
    func forEachLocation(_ c: Connection, _ rest: ArraySlice<String>, _ at: Path, _ body: (Path) throws -> Void) throws {
        guard let first = rest.first else { return try body(at) }
        if first.hasPrefix("$") {
            for k in try childKeys(c, EmbeddedDatabase.encode(at)) {
                try forEachLocation(c, rest.dropFirst(), at.appending(k), body)
            }
        } else {
            try forEachLocation(c, rest.dropFirst(), at.appending(first), body)
        }
    }

    static func entry(_ sortValue: Node, key: String) -> [UInt8] {
        var out = IndexKey.encode(sortValue)
        StorageKey.append(key, to: &out)
        return out
    }

    func entry(_ sortValue: Node, key: String) -> [UInt8] { EmbeddedDatabase.entry(sortValue, key: key) }

    // MARK: keeping indexes exact

    /// What a write at `path` will change in the indexes, computed before it changes the data
    /// (the old sort values of the children it touches are read then).
    struct IndexWork {
        /// Entries of one child to replace: (index, parent, key, old entry or nil).
        var children: [(ix: Int64, parent: Path, key: String, definition: IndexDefinition, old: [UInt8]?)] = []
        /// Subtrees the write replaces whole: (index, definition); entries below are rebuilt.
        var subtrees: [StoredIndex] = []
    }

    /// Reads what `prepareIndexes` needs before a write at `path` (not a `.priority` path).
    func prepareIndexes(_ c: Connection, _ indexes: [StoredIndex], _ path: Path) throws -> IndexWork {
        var work = IndexWork()
        for index in indexes {
            let n = index.definition.pattern.count
            if path.count > n {
                guard index.definition.matchesPrefix(path.keys[..<n]) else { continue }
                let parent = Path(validatedKeys: Array(path.keys[..<n]))
                let key = path.keys[n]
                let old = try currentSortValue(c, parent.appending(key), index.definition).map { entry($0, key: key) }
                work.children.append((index.id, parent, key, index.definition, old))
            } else if index.definition.matchesPrefix(path.keys[...]) {
                work.subtrees.append(index)
            }
        }
        return work
    }

    /// Brings the entries a write at `path` changed up to date, after the write (`written` is
    /// what it wrote there, resolved; nil: read what is stored now).
    func finishIndexes(_ c: Connection, _ work: IndexWork, _ path: Path, _ written: Node?) throws {
        for w in work.children {
            let new: [UInt8]?
            if path.count == w.parent.count + 1, let value = written {
                // A write of the child itself: its sort value is in the value written.
                new = value.isNull ? nil : entry(w.definition.sortValue(value), key: w.key)
            } else {
                new = try currentSortValue(c, w.parent.appending(w.key), w.definition).map { entry($0, key: w.key) }
            }
            if new == w.old { continue }
            let parent = EmbeddedDatabase.encode(w.parent)
            if let old = w.old { try deleteEntry(c, w.ix, parent, old) }
            if let new { try insertEntry(c, w.ix, parent, new) }
        }
        for index in work.subtrees {
            // Everything below `path` was replaced: drop its entries, then add those of the value.
            let enc = EmbeddedDatabase.encode(path)
            let (lo, hi) = StorageKey.descendants(enc)
            let exact = try c.statement("DELETE FROM index_entries WHERE ix = ?1 AND parent = ?2")
            exact.bind(1, int: index.id)
            exact.bind(2, blob: enc)
            try exact.run()
            let below = try c.statement("DELETE FROM index_entries WHERE ix = ?1 AND parent >= ?2 AND parent < ?3")
            below.bind(1, int: index.id)
            below.bind(2, blob: lo)
            below.bind(3, blob: hi)
            try below.run()
            if let written {
                let rows = try EntryRows(c)
                try addEntries(rows, index, index.definition.pattern[path.count...], path, written)
                try rows.flush()
            } else {
                try fillEntries(c, index, index.definition.pattern[path.count...], below: path)
            }
        }
    }

    /// Adds the entries of the locations in `node` (the value at `at`) that match the rest of
    /// the pattern.
    func addEntries(_ rows: EntryRows, _ index: StoredIndex, _ rest: ArraySlice<String>, _ at: Path, _ node: Node) throws {
        guard case .object(let list) = node.unprioritized else { return }
        guard let first = rest.first else {
            let parent = EmbeddedDatabase.encode(at)
            for e in list where !e.node.isNull {
                try rows.add(index.id, parent, sortValue: index.definition.sortValue(e.node), key: e.key)
            }
            return
        }
        for e in list where first.hasPrefix("$") || KeyOrder.same(first, e.key) {
            try addEntries(rows, index, rest.dropFirst(), at.appending(e.key), e.node)
        }
    }

    /// The sort value of the child at `child` as stored now, or nil when it holds nothing.
    func currentSortValue(_ c: Connection, _ child: Path, _ d: IndexDefinition) throws -> Node? {
        let enc = EmbeddedDatabase.encode(child)
        let own = try leaf(c, at: enc)
        if own == nil, try !hasDescendants(c, enc) { return nil }
        guard let sub = d.child else { return own ?? EmbeddedDatabase.someObject }
        if own != nil { return .null }   // a primitive has no children
        let at = enc + StorageKey.encode(sub)
        if let v = try leaf(c, at: at) { return v }
        return try hasDescendants(c, at) ? EmbeddedDatabase.someObject : .null
    }

    func deleteEntry(_ c: Connection, _ ix: Int64, _ parent: [UInt8], _ entry: [UInt8]) throws {
        try runOnEntry(c, "DELETE FROM index_entries WHERE ix = ?1 AND parent = ?2 AND entry = ?3", ix, parent, entry)
    }

    func insertEntry(_ c: Connection, _ ix: Int64, _ parent: [UInt8], _ entry: [UInt8]) throws {
        try runOnEntry(c, "INSERT OR REPLACE INTO index_entries(ix, parent, entry) VALUES(?1, ?2, ?3)", ix, parent, entry)
    }

    /// Runs `sql` with an index entry's columns bound as `?1` (index), `?2` (parent), `?3` (entry).
    private func runOnEntry(_ c: Connection, _ sql: String, _ ix: Int64, _ parent: [UInt8], _ entry: [UInt8]) throws {
        let s = try c.statement(sql)
        s.bind(1, int: ix)
        s.bind(2, blob: parent)
        s.bind(3, blob: entry)
        try s.run()
    }

    // MARK: answering queries

    /// A value- or child-ordered query answered from an index, reading only the entries in its
    /// window and then the children they name; nil when no index serves it.
    func indexedQuery(_ c: Connection, _ path: Path, _ query: Query, export: Bool) throws -> [Node.Entry]? {
        guard let index = try storedIndexes(c).first(where: { $0.definition.serves(query.order) && $0.definition.matches(path) }) else {
            return nil
        }
        var lo: [UInt8] = []
        var hi: [UInt8] = [0xFF]
        if let b = query.start {
            var at = IndexKey.encode(b.value)
            if let k = b.key {
                guard StorageKey.encodable(k) else { return nil }
                StorageKey.append(k, to: &at)
            }
            lo = b.exclusive ? StorageKey.successor(at) : at
        }
        if let b = query.end {
            var at = IndexKey.encode(b.value)
            if let k = b.key {
                guard StorageKey.encodable(k) else { return nil }
                StorageKey.append(k, to: &at)
            }
            hi = b.exclusive ? at : StorageKey.successor(at)
        }
        var n = -1
        var descending = false
        switch query.limit {
        case .first(let k)?: n = k
        case .last(let k)?: n = k; descending = true
        case nil: break
        }
        if query.limit != nil && n <= 0 { return [] }
        if !lo.lexicographicallyPrecedes(hi) { return [] }
        let s = try c.statement("SELECT entry FROM index_entries WHERE ix = ?1 AND parent = ?2 AND entry >= ?3 AND entry < ?4 ORDER BY entry "
                                + (descending ? "DESC" : "") + " LIMIT ?5")
        s.bind(1, int: index.id)
        s.bind(2, blob: EmbeddedDatabase.encode(path))
        s.bind(3, blob: lo)
        s.bind(4, blob: hi)
        s.bind(5, int: Int64(n))
        var keys: [String] = []
        while try s.step() { keys.append(IndexKey.key(ofEntry: s.blob(0))) }
        s.reset()
        if descending { keys.reverse() }
        return try keys.map { k in
            let child = path.appending(k)
            return Node.Entry(k, export ? try readExport(c, child) : try read(c, child))
        }
    }
}

/// Buffers index entries and inserts them many rows per statement (as `LeafRows` does leaves).
///
/// Entries are encoded straight into one byte buffer (no array per entry) and wait for `flush`,
/// which inserts them in index order: B-tree inserts in order touch each page once and fill it,
/// where the order of the children written would touch pages at random and leave them half
/// full. Rows of one location share its parent bytes, and one statement binds the index and
/// the parent once for up to `batch` entries. Entries are bound without a copy (the buffer
/// outlives each step).
final class EntryRows {
    static let batch = 128
    private struct Row {
        var ix: Int64
        var parent: Range<Int>
        var entry: Range<Int>
        /// The entry's first eight bytes, big-endian and zero-padded: most comparisons end here.
        var head: UInt64
    }
    private let connection: Connection
    private let full: Statement
    private var bytes: [UInt8] = []
    private var rows: [Row] = []

    init(_ c: Connection) throws {
        connection = c
        full = try c.statement(EntryRows.sql(EntryRows.batch))
        bytes.reserveCapacity(1 << 14)
    }

    /// `INSERT OR REPLACE` of `n` entries of one index and parent: ?1 the index, ?2 the
    /// parent, ?3… the entries.
    private static func sql(_ n: Int) -> String {
        var s = "INSERT OR REPLACE INTO index_entries(ix, parent, entry) VALUES "
        for i in 0..<n { s += (i == 0 ? "" : ",") + "(?1,?2,?\(i + 3))" }
        return s
    }

    /// The bytes of `parent`, shared with the previous row when it has the same one.
    private func parentRange(_ parent: [UInt8]) -> Range<Int> {
        if let last = rows.last, bytes[last.parent].elementsEqual(parent) { return last.parent }
        let start = bytes.count
        bytes.append(contentsOf: parent)
        return start..<bytes.count
    }

    func add(_ ix: Int64, _ parent: [UInt8], _ entry: [UInt8]) throws {
        let p = parentRange(parent)
        let start = bytes.count
        bytes.append(contentsOf: entry)
        rows.append(Row(ix: ix, parent: p, entry: start..<bytes.count, head: head(start)))
    }

    /// Adds the entry of the child `key` sorting by `sortValue`, encoded in place.
    func add(_ ix: Int64, _ parent: [UInt8], sortValue: Node, key: String) throws {
        let p = parentRange(parent)
        let start = bytes.count
        IndexKey.append(sortValue, to: &bytes)
        StorageKey.append(key, to: &bytes)
        rows.append(Row(ix: ix, parent: p, entry: start..<bytes.count, head: head(start)))
    }

    /// As `add(_:_:sortValue:key:)` with the key's `StorageKey` segment already encoded.
    func add(_ ix: Int64, _ parent: [UInt8], sortValue: Node, keySegment: ArraySlice<UInt8>) throws {
        let p = parentRange(parent)
        let start = bytes.count
        IndexKey.append(sortValue, to: &bytes)
        bytes.append(contentsOf: keySegment)
        rows.append(Row(ix: ix, parent: p, entry: start..<bytes.count, head: head(start)))
    }

    private func head(_ start: Int) -> UInt64 {
        var h: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(start + i < bytes.count ? bytes[start + i] : 0) }
        return h
    }

    func flush() throws {
        defer {
            rows.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
        }
        if rows.isEmpty { return }
        try bytes.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            func compare(_ a: Range<Int>, _ b: Range<Int>) -> Int32 {
                let n = min(a.count, b.count)
                let c = n == 0 ? 0 : memcmp(base + a.lowerBound, base + b.lowerBound, n)
                if c != 0 { return c }
                return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
            }
            rows.sort { a, b in
                if a.ix != b.ix { return a.ix < b.ix }
                if a.parent != b.parent {
                    let c = compare(a.parent, b.parent)
                    if c != 0 { return c < 0 }
                }
                if a.head != b.head { return a.head < b.head }
                return compare(a.entry, b.entry) < 0
            }
            var i = 0
            while i < rows.count {
                // One run of rows with the same index and parent.
                var end = i + 1
                while end < rows.count && rows[end].ix == rows[i].ix
                        && (rows[end].parent == rows[i].parent || compare(rows[end].parent, rows[i].parent) == 0) {
                    end += 1
                }
                while i < end {
                    let n = min(EntryRows.batch, end - i)
                    let s = n == EntryRows.batch ? full : try connection.statement(EntryRows.sql(n))
                    s.bind(1, int: rows[i].ix)
                    let p = rows[i].parent
                    sqlite3_bind_blob(s.handle, 2, UnsafeRawPointer(base + p.lowerBound), Int32(p.count), nil)
                    for j in 0..<n {
                        let e = rows[i + j].entry
                        sqlite3_bind_blob(s.handle, Int32(j + 3), UnsafeRawPointer(base + e.lowerBound), Int32(e.count), nil)
                    }
                    defer {
                        sqlite3_reset(s.handle)
                        sqlite3_clear_bindings(s.handle)
                    }
                    _ = try s.step()
                    i += n
                }
            }
        }
    }
}

extension EmbeddedDatabase: Indexable {}
