import RTDBCore

/// The data rules read, before and after the operation: stored values are read lazily, once per
/// path; the writes overlay them to give the new tree, never copied.
///
/// A stored value comes in two forms: with its priorities (the export form: what `old` answers,
/// and what a rule's `getPriority()` reads) and, when the store reads it more cheaply, without
/// them. Every other rule method looks through priorities, so rules read the plain form unless
/// they ask for a priority; a value already read with priorities serves a plain read as well.
public final class RuleData {
    /// Reads the stored value at a path with its priorities.
    let read: (Path) throws -> Node
    /// Reads it without priorities; nil: `read` serves both forms.
    let readPlain: ((Path) throws -> Node)?

    private struct Stored {
        var path: Path
        var value: Node
        var priorities: Bool
    }
    /// Values read so far (a request reads a handful: a list beats hashing paths).
    private var cache: [Stored] = []

    /// The operation's writes: full paths and their new values (resolved, normal form).
    public private(set) var writes: [(path: Path, value: Node)] = []
    /// True when no write lies at or below another (a multi-path update refuses overlaps): the
    /// new value of every location inside a write is then part of that write's value, which a
    /// check hands down as it walks the value instead of looking each location up again.
    private(set) var writesDisjoint = true

    public init(read: @escaping (Path) throws -> Node, readPlain: ((Path) throws -> Node)? = nil) {
        self.read = read
        self.readPlain = readPlain
    }

    public func setWrites(_ writes: [(path: Path, value: Node)]) {
        self.writes = writes
        writesDisjoint = writes.count < 2 || RuleData.disjoint(writes.map(\.path))
    }

    /// The stored value at `path` before the operation, with its priorities.
    public func old(_ path: Path) throws -> Node { try before(path, priorities: true) }

    /// The value at `path` after the operation, with its priorities.
    public func new(_ path: Path) throws -> Node { try after(path, priorities: true) }

    /// The stored value at `path`; without `priorities` it may come without them.
    func before(_ path: Path, priorities: Bool) throws -> Node {
        // The deepest cached location at or above `path` that has the form asked for.
        var best: Stored?
        for entry in cache where (entry.priorities || !priorities) && entry.path.contains(path) {
            if best == nil || entry.path.count > (best?.path.count ?? 0) { best = entry }
        }
        if let best {
            if best.path.count == path.count { return best.value }
            return RuleData.descend(best.value, path.keys[best.path.count...])
        }
        let plain = priorities ? nil : readPlain
        let v = try plain.map { try $0(path) } ?? read(path)
        if cache.count >= 64 { cache.removeFirst() }
        cache.append(Stored(path: path, value: v, priorities: plain == nil))
        return v
    }

    /// The value at `path` after the operation; without `priorities` it may come without them
    /// where it is the stored value.
    func after(_ path: Path, priorities: Bool) throws -> Node {
        if writes.isEmpty { return try before(path, priorities: priorities) }
        // Inside a write: that write's value decides.
        for w in writes where w.path.contains(path) {
            return RuleData.descend(w.value, path.keys[w.path.count...])
        }
        var value = try before(path, priorities: priorities)
        for w in writes where path.contains(w.path) {
            value = value.setting(Path(validatedKeys: Array(w.path.keys[path.count...])), to: w.value)
        }
        return value
    }

    /// The value `keys` below `node`, walked in place (no path built for the rest).
    static func descend(_ node: Node, _ keys: ArraySlice<String>) -> Node {
        var value = node
        for key in keys {
            value = value.child(key)
            if value.isNull { break }
        }
        return value
    }

    /// True when no path is another's ancestor or equal to it. Sorted, a path's descendants
    /// follow it directly, so neighbours are enough to compare.
    static func disjoint(_ paths: [Path]) -> Bool {
        if paths.count < 2 { return true }
        let sorted = paths.sorted { PathOrder.compare($0, $1) < 0 }
        for i in sorted.indices.dropFirst() where sorted[i - 1].contains(sorted[i]) { return false }
        return true
    }
}
