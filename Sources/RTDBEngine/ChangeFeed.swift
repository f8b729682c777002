import CSQLite
import RTDBCore

/// What one committed write did, as a server needs it to tell its clients: a set replaces the
/// value at a path; an update replaces several paths relative to a base, all at once (a push is
/// an update of the new children).
public enum LoggedChange: Sendable {
    case set(Path, Node)
    case update(Path, [(path: Path, value: Node)])

    /// A push of `children` under `list`, as Firebase makes one: a single push is a set of the
    /// new child (its streams hear a `put` at the child, as when the key was chosen first and
    /// the child set); a batch of them (`push --lines`, one atomic write) is one update of the
    /// new children.
    static func push(_ list: Path, _ children: [Node.Entry]) -> LoggedChange {
        if children.count == 1 { return .set(list.appending(children[0].key), children[0].node) }
        return .update(list, children.map { (path: Path(validatedKeys: [$0.key]), value: $0.node) })
    }
}

/// One entry of the change feed, in commit order.
public struct FeedEntry: Sendable {
    public enum Content: Sendable {
        /// The write as it was made.
        case recorded(LoggedChange)
        /// Only the paths it touched: the write was too large to record (or was made by an
        /// older release). Readers read the values they need (`change(of:at:)`), which may
        /// include later writes.
        case touched(TouchedPaths)
    }

    public var seq: Int64
    public var content: Content

    /// True when the write itself was recorded.
    public var exact: Bool {
        if case .recorded = content { return true }
        return false
    }
}

/// The change feed: every write appends one `log` row holding the paths it touched (which the
/// `watch` observer reads) and, beside them, the operation and the resolved data it wrote (in
/// export form: priorities kept), so a reader in another process can replay writes one by one,
/// in commit order, as the writer made them (a set stays a set, a multi-path update stays one
/// update). Data over `changeDataLeaves` leaves or `changeDataBytes` bytes of JSON is not copied
/// (a large write would otherwise cost twice its size on disk): readers then read the current
/// value instead. Files of schema version 3 kept the operation in a `changes` table of its own,
/// which the upgrade to version 4 folds into `log` (Schema.swift); a reader of a version-3 file
/// still joins the two.
extension EmbeddedDatabase {
    static let changeDataLeaves = 2_000
    static let changeDataBytes = 65_536

    /// What the feed records of one change: its kind, its place and the data written (nil:
    /// readers read the value). Without `copyData` only the kind and the place are recorded.
    struct FeedColumns {
        var op: String
        var base: String
        var data: [UInt8]?
    }

    static func feedColumns(_ change: LoggedChange, copyData: Bool) -> FeedColumns {
        // A priority write is a change of its node: readers read that node back.
        if case .set(let p, _) = change, p.isPriority {
            return FeedColumns(op: "set", base: encodeString(p.node), data: nil)
        }
        if case .update(let base, let list) = change, list.contains(where: { $0.path.isPriority }) {
            return FeedColumns(op: "update", base: encodeString(base), data: nil)
        }
        var columns: FeedColumns
        switch change {
        case .set(let path, let value):
            columns = FeedColumns(op: "set", base: encodeString(path), data: nil)
            if copyData && value.leafCount <= changeDataLeaves {
                var out: [UInt8] = []
                JSONWriter(export: true).write(value, into: &out)
                columns.data = out
            }
        case .update(let base, let entries):
            columns = FeedColumns(op: "update", base: encodeString(base), data: nil)
            if copyData && entries.reduce(0, { $0 + max(1, $1.value.leafCount) }) <= changeDataLeaves {
                // [[relative path, value], …]: keys of a JSON object would not keep `a/b` apart
                // from nesting, and nulls (deletes) must survive.
                var out: [UInt8] = [UInt8(ascii: "[")]
                for (i, e) in entries.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(UInt8(ascii: "["))
                    JSONWriter.appendString(encodeString(e.path), to: &out)
                    out.append(UInt8(ascii: ","))
                    JSONWriter(export: true).write(e.value, into: &out)
                    out.append(UInt8(ascii: "]"))
                }
                out.append(UInt8(ascii: "]"))
                columns.data = out
            }
        }
        if let data = columns.data, data.count > changeDataBytes { columns.data = nil }
        return columns
    }

    /// The newest log position (0 when nothing was ever written).
    public func latestSeq() throws -> Int64 {
        try reading(0) { c in try c.integer("SELECT COALESCE(MAX(seq), 0) FROM log") ?? 0 }
    }

    /// The value at `path` and the log position it reflects, in one snapshot.
    public func snapshot(at path: Path) throws -> (seq: Int64, value: Node) {
        try snapshot(path).map { ($0.seq, $0.value) } ?? (0, .null)
    }

    /// A query's window and the log position it reflects, in one snapshot.
    public func querySnapshot(_ path: Path, _ query: Query) throws -> (seq: Int64, entries: [Node.Entry]) {
        try reading((0, [])) { c in
            let seq = try c.integer("SELECT COALESCE(MAX(seq), 0) FROM log") ?? 0
            // With priorities: a priority-ordered window needs them, realtime pushes carry them.
            return (seq, try window(c, path, query, export: true))
        }
    }

    /// The writes committed after `seq`, at most `max` of them, in commit order. `gap` is true
    /// when entries after `seq` were already trimmed from the log: the reader has missed writes
    /// and must read its locations again.
    public func feed(after seq: Int64, max: Int = 1_000) throws -> (entries: [FeedEntry], gap: Bool) {
        try reading(([], false)) { c in
            let s = try c.statement(try feedQuery(c))
            s.bind(1, int: seq)
            s.bind(2, int: Int64(max))
            defer { s.reset() }
            var out: [FeedEntry] = []
            while try s.step() {
                let n = s.int(0)
                if out.isEmpty && n != seq + 1 && seq > 0 { return ([], true) }
                if sqlite3_column_type(s.handle, 4) != SQLITE_NULL,
                   let change = try EmbeddedDatabase.decodeChange(op: s.string(2), base: s.string(3), data: s.bytes(4)) {
                    out.append(FeedEntry(seq: n, content: .recorded(change)))
                } else {
                    let op = sqlite3_column_type(s.handle, 2) == SQLITE_NULL ? nil : s.string(2)
                    let write = EmbeddedDatabase.write(op: op, base: s.string(3))
                    out.append(FeedEntry(seq: n, content: .touched(TouchedPaths(text: Array(s.bytes(1)), write: write))))
                }
            }
            return (out, false)
        }
    }

    /// The feed's query for the file's layout, looked at inside the reading transaction: a
    /// writer in another process may have upgraded a version-3 file since the last read.
    private func feedQuery(_ c: Connection) throws -> String {
        if try c.integer("PRAGMA main.user_version") ?? 0 >= 4 {
            return "SELECT seq, paths, op, base, data FROM log WHERE seq > ?1 ORDER BY seq LIMIT ?2"
        }
        if try c.integer("SELECT count(*) FROM sqlite_master WHERE name = 'changes'") == 1 {
            return """
                SELECT log.seq, log.paths, changes.op, changes.base, changes.data
                FROM log LEFT JOIN changes ON changes.seq = log.seq
                WHERE log.seq > ?1 ORDER BY log.seq LIMIT ?2
                """
        }
        // Written only by releases before the feed kept operations: paths only.
        return "SELECT seq, paths, NULL, NULL, NULL FROM log WHERE seq > ?1 ORDER BY seq LIMIT ?2"
    }

    static func decodePath(_ text: String) -> Path {
        Path(validatedKeys: text.isEmpty ? [] : text.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
    }

    /// The kind of a write recorded without its data; nil when the file does not say.
    static func write(op: String?, base: String) -> TouchedPaths.Write? {
        switch op {
        case "set": return .set
        case "update": return .update(base: decodePath(base))
        default: return nil
        }
    }

    static func decodeChange(op: String, base: String, data: UnsafeBufferPointer<UInt8>) throws -> LoggedChange? {
        let basePath = decodePath(base)
        switch op {
        case "set":
            return .set(basePath, try JSONReader.parse(data))
        case "update":
            // Arrays parse as objects keyed "0", "1", …; each item is [path, value].
            let list = try JSONReader.parse(data)
            var entries: [(path: Path, value: Node)] = []
            for item in list.children {
                guard case .string(let rel) = item.node.child("0") else { return nil }
                entries.append((decodePath(rel), item.node.child("1")))
            }
            return .update(basePath, entries)
        default:
            return nil
        }
    }

    /// Whether reading `entry` back for a reader of `location` (`change(of:at:)`) would read more
    /// than `cap` bytes of JSON, counted from the rows and no further than the cap: a server
    /// reads a large one away from its loop, a small one (a priority change) at once.
    public func readsMore(_ entry: FeedEntry, at location: Path, than cap: Int) throws -> Bool {
        guard case .touched(let touched) = entry.content else { return false }
        let near = touched.near(location)
        var total = 0
        for p in near.covers ? [location] : near.below {
            total += try jsonBytesAtLeast(p, stoppingAbove: cap - total)
            if total > cap { return true }
        }
        return false
    }

    /// What `entry` changed, as far as a reader of `location` sees it (the root: all of it). A
    /// recorded write is returned as it was made. For a touched one, the current values of the
    /// touched paths near the location are read, and only those: nil when none is near; the
    /// location's whole value as a set when a touched path covers it; else the paths below it,
    /// as a set (one path) or an update (several), as the write was.
    public func change(of entry: FeedEntry, at location: Path = .root) throws -> LoggedChange? {
        switch entry.content {
        case .recorded(let change):
            return change
        case .touched(let touched):
            let near = touched.near(location)
            if !near.covers && near.below.isEmpty { return nil }
            return try reading(nil) { c -> LoggedChange? in
                if near.covers { return .set(location, try readExport(c, location)) }
                // An update stays one (its streams hear a `patch`, even of one path), from its own
                // base, or from the location when the base is above it. One whose paths were
                // too many to list touched only its base: that is read back as a set of it.
                if case .update(let base)? = touched.write, near.below.allSatisfy({ $0.count > base.count }) {
                    let from = location.contains(base) ? base : location
                    return .update(from, try near.below.map { p in
                        (path: Path(validatedKeys: Array(p.keys[from.count...])), value: try readExport(c, p))
                    })
                }
                if near.count == 1 { return .set(near.below[0], try readExport(c, near.below[0])) }
                // Entries relative to the write's base, or to the location when the base is above it.
                let base = location.contains(near.base) ? near.base : location
                return .update(base, try near.below.map { p in
                    (path: Path(validatedKeys: Array(p.keys[base.count...])), value: try readExport(c, p))
                })
            }
        }
    }
}
