/// A value in the database tree, always in normal form:
/// * `.object` holds at least one child, children sorted by `KeyOrder`, keys unique byte for byte,
///   and no child is `.null` (empty objects, empty arrays and nulls are "no data");
/// * arrays do not exist here: they are objects with keys "0", "1", … (rendered back as arrays
///   by `JSONWriter` under Firebase's array rule);
/// * integers and doubles are kept apart (`.int` is exact to 64 bits);
/// * a priority is a `.prioritized` wrapper around a leaf or an
///   object, never around `.null` (an empty node has no priority) nor around another wrapper; the
///   priority is a string or a finite number (or, in a value not yet written, a server-value
///   placeholder). Build wrappers with `withPriority(_:)`, which keeps these rules. Data without
///   priorities never contains a wrapper, so it costs nothing.
public enum Node: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case object([Entry])
    indirect case prioritized(Node, priority: Node)

    public struct Entry: Sendable {
        public var key: String
        public var node: Node
        public init(_ key: String, _ node: Node) {
            self.key = key
            self.node = node
        }
    }

    public var isNull: Bool { if case .null = self { return true } else { return false } }
    /// True for an object, with or without a priority.
    public var isObject: Bool {
        switch self {
        case .object: return true
        case .prioritized(let base, _): return base.isObject
        default: return false
        }
    }

    /// Children of an object (empty for anything else).
    public var children: [Entry] {
        switch self {
        case .object(let c): return c
        case .prioritized(let base, _): return base.children
        default: return []
        }
    }

    // MARK: priorities

    /// This node's own priority (`.null` when it has none).
    public var priority: Node {
        if case .prioritized(_, let p) = self { return p }
        return .null
    }

    /// This node without its own priority (its children keep theirs).
    public var unprioritized: Node {
        if case .prioritized(let base, _) = self { return base }
        return self
    }

    /// This node with its own priority replaced by `priority` (`.null` clears it). An empty node
    /// stays empty: it cannot carry a priority.
    public func withPriority(_ priority: Node) -> Node {
        let base = unprioritized
        if base.isNull || priority.isNull { return base }
        return .prioritized(base, priority: priority)
    }

    /// True when this node or any node below it has a priority.
    public var hasPriorities: Bool {
        switch self {
        case .prioritized: return true
        case .object(let list): return list.contains { $0.node.hasPriorities }
        default: return false
        }
    }

    /// This tree without any priority, as normal reads show data.
    public var withoutPriorities: Node {
        switch self {
        case .prioritized(let base, _): return base.withoutPriorities
        case .object(let list):
            guard list.contains(where: { $0.node.hasPriorities }) else { return self }
            return .object(list.map { Entry($0.key, $0.node.withoutPriorities) })
        default: return self
        }
    }

    /// Builds an object from entries in any order: drops null children, keeps the last of
    /// byte-identical duplicate keys, sorts by key order; `.null` when nothing is left.
    public static func object(normalizing entries: [Entry]) -> Node {
        var list = entries
        if list.isEmpty { return .null }
        // Duplicates are resolved before nulls are dropped, so a later null removes an
        // earlier value (`{"a":1,"a":null}` is no data, as `JSON.parse` keeps the last).
        if !isStrictlySorted(list) {
            // Stable sort by key, then keep the last of each run of equal keys.
            let sk = list.map { SortableKey($0.key) }
            var idx = Array(list.indices)
            idx.sort { a, b in
                let c = SortableKey.compare(sk[a], sk[b])
                return c != 0 ? c < 0 : a < b
            }
            var out: [Entry] = []
            out.reserveCapacity(idx.count)
            for (n, i) in idx.enumerated() {
                if n + 1 < idx.count && SortableKey.compare(sk[i], sk[idx[n + 1]]) == 0 { continue }
                out.append(list[i])
            }
            list = out
        }
        if list.contains(where: { $0.node.isNull }) { list.removeAll { $0.node.isNull } }
        return list.isEmpty ? .null : .object(list)
    }

    static func isStrictlySorted(_ list: [Entry]) -> Bool {
        if list.count < 2 { return true }
        var prev = SortableKey(list[0].key)
        for i in 1..<list.count {
            let cur = SortableKey(list[i].key)
            if SortableKey.compare(prev, cur) >= 0 { return false }
            prev = cur
        }
        return true
    }

    /// Index of `key` among sorted children, or the insertion point (negative: -(i+1)).
    static func search(_ list: [Entry], _ key: String) -> Int {
        let target = SortableKey(key)
        var lo = 0, hi = list.count - 1
        while lo <= hi {
            let mid = (lo + hi) >> 1
            let c = SortableKey.compare(SortableKey(list[mid].key), target)
            if c == 0 { return mid }
            if c < 0 { lo = mid + 1 } else { hi = mid - 1 }
        }
        return -(lo + 1)
    }

    /// The immediate child named `key` (`.null` when absent or when this is not an object).
    public func child(_ key: String) -> Node {
        guard case .object(let list) = self else {
            if case .prioritized(let base, _) = self { return base.child(key) }
            return .null
        }
        // A few children: comparing bytes for equality is cheaper than ordering keys (two keys
        // are the same child only when byte for byte the same).
        if list.count <= 8 {
            for e in list where KeyOrder.same(e.key, key) { return e.node }
            return .null
        }
        let i = Node.search(list, key)
        return i >= 0 ? list[i].node : .null
    }

    /// The descendant at `path` (relative), `.null` when absent.
    public func child(at path: Path) -> Node {
        var node = self
        for key in path.keys {
            node = node.child(key)
            if node.isNull { return .null }
        }
        return node
    }

    /// A copy with the immediate child `key` replaced (`.null` removes it). This node keeps its
    /// priority unless it ends up empty (a leaf that gains a child keeps it too, as in Firebase).
    public func setting(child key: String, to value: Node) -> Node {
        if case .prioritized(let base, let p) = self {
            return base.setting(child: key, to: value).withPriority(p)
        }
        var list = children
        let i = Node.search(list, key)
        if value.isNull {
            guard i >= 0 else { return self }
            list.remove(at: i)
            return list.isEmpty ? .null : .object(list)
        }
        if i >= 0 { list[i].node = value } else { list.insert(Entry(key, value), at: -(i + 1)) }
        return .object(list)
    }

    /// A copy with the descendant at `path` replaced (`.null` removes it and prunes empty parents).
    /// A path ending in `.priority` replaces that node's priority instead (`.null` clears it).
    public func setting(_ path: Path, to value: Node) -> Node {
        setting(path.keys[...], to: value)
    }

    private func setting(_ keys: ArraySlice<String>, to value: Node) -> Node {
        guard let first = keys.first else { return value }
        // A last `.priority` names this node's priority, not a child (see `Path`).
        if keys.count == 1 && KeyOrder.same(first, Path.priorityKey) { return withPriority(value) }
        let sub = child(first).setting(keys.dropFirst(), to: value)
        return setting(child: first, to: sub)
    }

    /// Number of leaves (primitive values) in this tree.
    public var leafCount: Int {
        switch self {
        case .null: return 0
        case .object(let list): return list.reduce(0) { $0 + $1.node.leafCount }
        case .prioritized(let base, _): return base.leafCount
        default: return 1
        }
    }

    /// Deep equality as Firebase sees data: strings and keys byte for byte, numbers by value
    /// (an integer and a double that are numerically equal are the same number), priorities
    /// included (compare `withoutPriorities` to ignore them).
    public func same(as other: Node) -> Bool {
        switch (self, other) {
        case let (.prioritized(a, p), .prioritized(b, q)): return p.same(as: q) && a.same(as: b)
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.string(a), .string(b)): return KeyOrder.same(a, b)
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double):
            return NumberOrder.compare(self, other) == 0
        case let (.object(a), .object(b)):
            if a.count != b.count { return false }
            for i in 0..<a.count {
                if !KeyOrder.same(a[i].key, b[i].key) || !a[i].node.same(as: b[i].node) { return false }
            }
            return true
        default: return false
        }
    }
}

/// Numeric comparison across `.int` and `.double` without losing 64-bit precision.
public enum NumberOrder {
    public static func compare(_ a: Node, _ b: Node) -> Int {
        switch (a, b) {
        case let (.int(x), .int(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.double(x), .double(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.int(x), .double(y)): return -compareDouble(y, x)
        case let (.double(x), .int(y)): return compareDouble(x, y)
        default: return 0
        }
    }

    /// Compares a double with an integer exactly.
    static func compareDouble(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return 1 }
        if d < -9.3e18 { return -1 }
        if d > 9.3e18 { return 1 }
        // 9223372036854775807.0 rounds to 2^63, just past Int64.max.
        if d >= 9223372036854775807.0 { return 1 }
        if d < -9223372036854775808.0 { return -1 }
        let ti = Int64(d)   // truncates toward zero, exactly
        if ti != i { return ti < i ? -1 : 1 }
        let frac = d - Double(ti)
        return frac == 0 ? 0 : (frac < 0 ? -1 : 1)
    }
}
