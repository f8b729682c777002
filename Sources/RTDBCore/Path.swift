/// A normalised database path: a list of valid keys. Parsing drops leading, trailing and doubled
/// slashes (`/a//b/` is `/a/b`), so `Path` values never carry empty segments. Printed with a
/// leading `/`; the root prints as `/`.
///
/// Priorities: the last segment may be the pseudo-child `.priority` (`/a/b/.priority`), which
/// names the priority of the node at `/a/b`, as Firebase's REST paths and multi-path update keys
/// do. Every `Database` operation accepts such a path: reading it
/// gives the priority (null when there is none), writing it sets or clears the priority (an empty
/// node keeps none), and an update key `a/.priority` sets the priority of `a`. `.priority`
/// anywhere but last is an invalid path, and it does not count toward the depth limit.
public struct Path: Sendable, CustomStringConvertible {
    public private(set) var keys: [String]

    public static let root = Path(validatedKeys: [])

    /// The pseudo-child that names a node's priority.
    public static let priorityKey = ".priority"

    /// Keys that are already known to be valid (internal use and trusted callers).
    public init(validatedKeys keys: [String]) { self.keys = keys }

    /// Parses and validates a path written by a user: each segment must be a valid key.
    /// `invalid_path` otherwise.
    public init(_ text: String) throws {
        var keys: [String] = []
        for seg in text.split(separator: "/", omittingEmptySubsequences: true) {
            let key = String(seg)
            // `.info` names the read-only metadata tree; it may only start a path.
            if keys.isEmpty && key == ".info" { keys.append(key); continue }
            if let last = keys.last, KeyOrder.same(last, Path.priorityKey) {
                throw RTDBError(.invalidPath, "invalid path \(Limits.quote(text)): \".priority\" can only be the last segment")
            }
            if KeyOrder.same(key, Path.priorityKey) { keys.append(key); continue }
            if let problem = Limits.keyProblem(key) {
                throw RTDBError(.invalidPath, "invalid path \(Limits.quote(text)): \(problem)")
            }
            keys.append(key)
        }
        if keys.count - (keys.last.map { KeyOrder.same($0, Path.priorityKey) ? 1 : 0 } ?? 0) > Limits.maxDepth {
            throw RTDBError(.tooDeep, "path \(Limits.quote(text)) is more than \(Limits.maxDepth) levels deep")
        }
        self.keys = keys
    }

    public var isRoot: Bool { keys.isEmpty }

    /// True when the last segment is `.priority`: the path names the priority of `node`.
    public var isPriority: Bool { keys.last.map { KeyOrder.same($0, Path.priorityKey) } ?? false }

    /// The node whose priority this path names, or the path itself when it is not `isPriority`.
    public var node: Path { isPriority ? Path(validatedKeys: Array(keys.dropLast())) : self }

    /// The path naming this node's priority (`self` when it already names one).
    public var priority: Path { isPriority ? self : appending(Path.priorityKey) }
    public var count: Int { keys.count }
    /// The number of segments that count toward the depth limit (`.priority` does not).
    public var depth: Int { isPriority ? keys.count - 1 : keys.count }
    public var last: String? { keys.last }
    public var parent: Path? { isRoot ? nil : Path(validatedKeys: Array(keys.dropLast())) }

    /// True when this path is `/.info` or below it (read-only in Firebase).
    public var isInfo: Bool { keys.first.map { KeyOrder.same($0, ".info") } ?? false }

    public func appending(_ key: String) -> Path {
        // One array, sized once (`keys + [key]` builds a second one for the key).
        var k: [String] = []
        k.reserveCapacity(keys.count + 1)
        k.append(contentsOf: keys)
        k.append(key)
        return Path(validatedKeys: k)
    }
    public func appending(_ other: Path) -> Path { Path(validatedKeys: keys + other.keys) }

    /// `self` is `other` or an ancestor of it (segment-wise, byte-exact).
    public func contains(_ other: Path) -> Bool {
        guard keys.count <= other.keys.count else { return false }
        for i in 0..<keys.count where !KeyOrder.same(keys[i], other.keys[i]) { return false }
        return true
    }

    /// `other` relative to `self` when `self` contains it.
    public func relative(_ other: Path) -> Path? {
        contains(other) ? Path(validatedKeys: Array(other.keys[keys.count...])) : nil
    }

    public func same(as other: Path) -> Bool {
        keys.count == other.keys.count && contains(other)
    }

    /// The keys joined by `/` without a leading slash (`a/b`; the root is empty): how a
    /// relative path is written in an update key, a wire message or an index name.
    public var unrooted: String { keys.joined(separator: "/") }

    public var description: String { "/" + unrooted }
}
