import CSQLite
import RTDBCore

extension EmbeddedDatabase: KeyWindowReads {
    public func windowKeys(_ path: Path, _ query: Query) throws -> [String]? {
        guard case .key = query.order, !path.isPriority else { return nil }
        return try reading([]) { c in try keyWindowKeys(c, path, query) }
    }
}

extension EmbeddedDatabase: StreamingReads {
    /// Writes the value at `path` as JSON straight from its rows, in storage order, without
    /// building it: memory stays bounded by the output buffer, one open object per level, and
    /// SQLite's page cache. The text is byte for byte what `JSONWriter` writes for the value
    /// `get` (or `export`) reads, in one read transaction (one snapshot).
    public func streamJSON(_ path: Path, export: Bool, pretty: Bool, progress: ProgressSink,
                           to write: ([UInt8]) throws -> Void) throws {
        var out: [UInt8] = []
        let wrote = try reading(false) { c -> Bool in
            let enc = EmbeddedDatabase.encode(path)
            if try path.isPriority || leaf(c, at: enc) != nil {
                let node = export ? try readExport(c, path) : try read(c, path)
                JSONWriter(pretty: pretty, export: export).write(node, into: &out)
                try write(out)
                return true
            }
            progress.begin("export", total: nil, unit: .bytes)
            defer { progress.end() }
            let own = export ? try priority(c, of: path) : .null
            return try withoutActuallyEscaping(write) { write in
                try RowJSONWriter(db: self, c: c, enc: enc, pretty: pretty, export: export, ownPriority: own,
                                  progress: progress, write: write).run()
            }
        }
        if !wrote { try write(Array("null".utf8)) }
    }
}

/// Writes the subtree below an encoded path as JSON from its leaf rows, which come in storage
/// order: each subtree's rows are contiguous and siblings come in key order, so the open
/// objects form a stack. What `JSONWriter` decides from a whole object is found out as each
/// one opens: whether it renders as an array (all keys array indices, the largest below twice
/// their number), by visiting its children's keys with one seek each; its priority (export
/// form), from a second cursor over the priorities in the same order.
final class RowJSONWriter {
    /// The output is handed on in pieces of about this size.
    static let chunk = 1 << 16
    /// The output buffer's first size.
    static let firstBuffer = 4096

    private struct Frame {
        /// The frame's key segment, as a range of `open`.
        var segment: Range<Int>
        var isArray: Bool
        /// Children written so far; for an array, the next index to write.
        var count = 0
        var next = 0
        var priority: Node? = nil
    }

    private let db: EmbeddedDatabase
    private let c: Connection
    private let enc: [UInt8]
    private let pretty: Bool
    private let export: Bool
    private let progress: ProgressSink
    private let write: ([UInt8]) throws -> Void
    private var out: [UInt8] = []
    private var written: Int64 = 0
    private var frames: [Frame] = []
    /// The segments of the open frames (beyond the root), concatenated.
    private var open: [UInt8] = []
    private var priorities: Statement? = nil
    private var pendingPriority: (rel: [UInt8], value: Node)? = nil
    private let ownPriority: Node?

    init(db: EmbeddedDatabase, c: Connection, enc: [UInt8], pretty: Bool, export: Bool, ownPriority: Node, progress: ProgressSink,
         write: @escaping ([UInt8]) throws -> Void) {
        self.db = db
        self.c = c
        self.enc = enc
        self.pretty = pretty
        self.export = export
        self.progress = progress
        self.write = write
        self.ownPriority = ownPriority.isNull ? nil : ownPriority
        // Small to start with: most reads are small, and a buffer of a chunk for each one made
        // the allocator give memory back to the system and take it again on every request.
        // A large export grows it to a chunk in a few steps.
        out.reserveCapacity(RowJSONWriter.firstBuffer)
    }

    /// Writes the subtree; false when it holds nothing.
    func run() throws -> Bool {
        let (lo, hi) = StorageKey.descendants(enc)
        let rows = try c.statement("SELECT path, v FROM data WHERE path >= ?1 AND path < ?2 ORDER BY path")
        rows.bind(1, blob: lo)
        rows.bind(2, blob: hi)
        defer { rows.reset() }
        if export, try db.priorityTableExists(c) {
            let p = try c.statement("SELECT path, p FROM priorities WHERE path >= ?1 AND path < ?2 ORDER BY path")
            p.bind(1, blob: lo)
            p.bind(2, blob: hi)
            priorities = p
            try stepPriority()
        }
        defer { priorities?.reset() }
        let skip = enc.count
        var segs: [Range<Int>] = []
        while try rows.step() {
            let full = rows.blob(0)
            let rel = UnsafeBufferPointer(rebasing: full[skip...])
            segs.removeAll(keepingCapacity: true)
            StorageKey.appendSegments(of: rel, to: &segs)
            if frames.isEmpty { try openRoot(firstChild: UnsafeBufferPointer(rebasing: rel[segs[0]])) }
            // How many open frames beyond the root this row is still inside.
            var common = 0
            while common < frames.count - 1 && common < segs.count - 1 {
                let f = frames[common + 1].segment
                let g = segs[common]
                if f.count != g.count || !open[f].elementsEqual(rel[g]) { break }
                common += 1
            }
            while frames.count - 1 > common { close() }
            for k in common..<(segs.count - 1) {
                try openChild(rel, segs, k)
            }
            let last = segs[segs.count - 1]
            childPrefix(UnsafeBufferPointer(rebasing: rel[last]))
            let level = frames.count
            if export, let p = try priority(of: rel) {
                let w = JSONWriter(pretty: pretty)
                out.append(UInt8(ascii: "{"))
                w.memberName("\".value\":", into: &out, level: level)
                value(rows)
                out.append(UInt8(ascii: ","))
                w.member("\".priority\":", p, into: &out, level: level)
                newline(level)
                out.append(UInt8(ascii: "}"))
            } else {
                value(rows)
            }
            if out.count >= RowJSONWriter.chunk { try flush() }
        }
        if frames.isEmpty { return false }
        while !frames.isEmpty { close() }
        try flush()
        return true
    }

    private func flush() throws {
        guard !out.isEmpty else { return }
        try write(out)
        written += Int64(out.count)
        out.removeAll(keepingCapacity: true)
        try progress.update(done: written)
    }

    // MARK: frames

    private func openRoot(firstChild: UnsafeBufferPointer<UInt8>) throws {
        let array = try isArray(enc, firstChild: firstChild)
        frames.append(Frame(segment: 0..<0, isArray: array, priority: ownPriority))
        out.append(array ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    }

    /// Opens the object for segment `k` of the row `rel`, inside the top frame.
    private func openChild(_ rel: UnsafeBufferPointer<UInt8>, _ segs: [Range<Int>], _ k: Int) throws {
        let seg = UnsafeBufferPointer(rebasing: rel[segs[k]])
        childPrefix(seg)
        let own: Node? = export ? try priority(of: UnsafeBufferPointer(rebasing: rel[..<segs[k].upperBound])) : nil
        let path = enc + Array(rel[..<segs[k].upperBound])
        let array = try isArray(path, firstChild: UnsafeBufferPointer(rebasing: rel[segs[k + 1]]))
        let start = open.count
        open.append(contentsOf: seg)
        frames.append(Frame(segment: start..<open.count, isArray: array, priority: own))
        out.append(array ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    }

    private func close() {
        let f = frames.removeLast()
        let level = frames.count
        if let p = f.priority {
            out.append(UInt8(ascii: ","))
            JSONWriter(pretty: pretty).member("\".priority\":", p, into: &out, level: level)
        }
        newline(level)
        out.append(f.isArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
        open.removeSubrange(f.segment)
    }

    /// What comes before a child in the top frame: the separator, the line break, and its key
    /// (or, in an array, nulls for the indices it skips).
    private func childPrefix(_ seg: UnsafeBufferPointer<UInt8>) {
        let top = frames.count - 1
        let level = frames.count
        if frames[top].isArray {
            let index = RowJSONWriter.intKey(seg)
            while frames[top].next < index {
                if frames[top].count > 0 { out.append(UInt8(ascii: ",")) }
                newline(level)
                JSONWriter.append("null" as StaticString, to: &out)
                frames[top].count += 1
                frames[top].next += 1
            }
            if frames[top].count > 0 { out.append(UInt8(ascii: ",")) }
            newline(level)
            frames[top].count += 1
            frames[top].next = index + 1
            return
        }
        if frames[top].count > 0 { out.append(UInt8(ascii: ",")) }
        frames[top].count += 1
        newline(level)
        key(seg)
        out.append(UInt8(ascii: ":"))
        if pretty { out.append(0x20) }
    }

    /// Whether the object at the encoded `path` renders as an array (never in the export
    /// form): its first child's key must be an index (integer keys sort first), and then every
    /// key, the largest below twice their number (`JSONWriter.arrayLength`).
    private func isArray(_ path: [UInt8], firstChild: UnsafeBufferPointer<UInt8>) throws -> Bool {
        if export || firstChild.first != StorageKey.intTag || !RowJSONWriter.isIndexSegment(firstChild) { return false }
        var count = 0
        var largest = -1
        var all = true
        let (lo, hi) = StorageKey.descendants(path)
        try db.eachChild(c, path, from: lo, to: hi, descending: false) { key, _ in
            guard JSONWriter.isIndex(key), let n = Int(key) else { all = false; return false }
            count += 1
            largest = n
            return true
        }
        return all && count > 0 && largest < 2 * count
    }

    // MARK: priorities

    private func stepPriority() throws {
        guard let p = priorities else { return }
        if try p.step() {
            pendingPriority = (Array(p.blob(0)[enc.count...]), EmbeddedDatabase.leaf(p, 1))
        } else {
            pendingPriority = nil
        }
    }

    /// The priority of the node at `rel` (relative to the root), if it has one. Nodes are asked
    /// for in storage order, so the cursor only moves forward.
    private func priority(of rel: UnsafeBufferPointer<UInt8>) throws -> Node? {
        while let pending = pendingPriority {
            if pending.rel.lexicographicallyPrecedes(rel) {
                try stepPriority()   // a priority of a node without data: never shown
                continue
            }
            if pending.rel.elementsEqual(rel) {
                try stepPriority()
                return pending.value
            }
            return nil
        }
        return nil
    }

    // MARK: text

    @inline(__always) private func newline(_ level: Int) {
        guard pretty else { return }
        out.append(0x0A)
        for _ in 0..<(level * 2) { out.append(0x20) }
    }

    /// The value in column 1 of the current row, as `JSONWriter` writes the same leaf.
    private func value(_ s: Statement) {
        switch sqlite3_column_type(s.handle, 1) {
        case SQLITE_INTEGER: JSONWriter.appendInt(sqlite3_column_int64(s.handle, 1), to: &out)
        case SQLITE_FLOAT: JSONWriter.append(JSONWriter.format(sqlite3_column_double(s.handle, 1)), to: &out)
        case SQLITE_TEXT: JSONWriter.appendString(bytes: s.bytes(1), to: &out)
        case SQLITE_BLOB:
            let p = sqlite3_column_blob(s.handle, 1)
            let n = sqlite3_column_bytes(s.handle, 1)
            JSONWriter.append(n > 0 && p?.load(as: UInt8.self) != 0 ? "true" as StaticString : "false", to: &out)
        default: JSONWriter.append("null" as StaticString, to: &out)
        }
    }

    /// A key segment as a JSON string (see `StorageKey`).
    private func key(_ seg: UnsafeBufferPointer<UInt8>) {
        if seg.first == StorageKey.intTag {
            out.append(0x22)
            if seg.count > 6 { out.append(contentsOf: UnsafeBufferPointer(rebasing: seg[6...])) }
            out.append(0x22)
            return
        }
        // The UTF-8 bytes between the tag and the end byte, with 0xF5/0xF6 back to 0xEE/0xEF.
        var bytes = Array(seg.dropFirst().dropLast())
        for i in bytes.indices where bytes[i] >= 0xF5 { bytes[i] = bytes[i] == 0xF5 ? 0xEE : 0xEF }
        bytes.withUnsafeBufferPointer { JSONWriter.appendString(bytes: $0, to: &out) }
    }

    /// The integer of an integer key segment.
    static func intKey(_ seg: UnsafeBufferPointer<UInt8>) -> Int {
        guard seg.count >= 5 else { return 0 }
        let biased = UInt32(seg[1]) << 24 | UInt32(seg[2]) << 16 | UInt32(seg[3]) << 8 | UInt32(seg[4])
        return Int(Int32(bitPattern: biased ^ 0x8000_0000))
    }

    /// True when an integer key segment spells an array index (no sign, no leading zero).
    static func isIndexSegment(_ seg: UnsafeBufferPointer<UInt8>) -> Bool {
        guard seg.count > 6 else { return false }
        let first = seg[6]
        if first == UInt8(ascii: "-") { return false }
        return first != UInt8(ascii: "0") || seg.count == 7
    }
}
