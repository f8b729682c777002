/// The client's unacknowledged writes layered over the server cache: a
/// view's value is the server's value with every pending write applied in write-id order, a
/// later write shadowing an earlier one. A write is a list of sets (a set is one, an update one
/// per relative path), so both kinds layer the same way.
///
/// Server values in pending writes are estimates: timestamps take `now` (the local clock plus
/// the last known server offset), increments add to the layered value they land on.
public enum WriteTree {
    /// One pending write: its sets, at absolute paths, values unresolved.
    public struct Write: Sendable {
        public var id: Int64
        public var sets: [(path: Path, value: Node)]
        public init(id: Int64, sets: [(path: Path, value: Node)]) {
            self.id = id
            self.sets = sets
        }
    }

    /// The layered value at `path`.
    public struct Layered: Sendable {
        /// The server value with the writes applied.
        public var value: Node
        /// A write set `path` or a location above it: the value is whole whatever the cache held.
        public var covered: Bool
        /// Keys of immediate children that a write set whole (they are known completely).
        public var setChildren: [String]
        /// A server value in a write that was applied was estimated.
        public var estimated: Bool
        /// At least one write touched the value.
        public var touched: Bool
        /// An increment in the value was added to a number neither the base nor an earlier
        /// write knew (the estimate took it as missing, so it is the increment alone).
        public var unknownBase = false
    }

    /// Applies `writes` (in the order given: ascending id) to `base`, the server cache's value
    /// at `path`. `baseKnows` says whether `base` holds the server's value at a path relative
    /// to `path` (the whole base, when the cache holds `path` completely).
    public static func layer(_ base: Node, at path: Path, writes: [Write], now: Int64,
                             baseKnows: (Path) -> Bool = { _ in true }) -> Layered {
        var out = Layered(value: base, covered: false, setChildren: [], estimated: false, touched: false)
        /// Locations earlier writes set whole: an increment below one adds to a known number.
        var written: [Path] = []
        /// The value an increment at `p` adds to, noting when nothing knows it. Only increments
        /// inside the value read count: one above `path` does not show in it.
        func existingValue(_ p: Path, _ value: Node) -> Node {
            guard let rel = path.relative(p) else { return .null }
            if !written.contains(where: { $0.contains(p) }) && !baseKnows(rel) { out.unknownBase = true }
            return value.child(at: rel)
        }
        for w in writes {
            for s in w.sets {
                defer { written.append(s.path) }
                if s.path.contains(path) {
                    // The write covers the path: the value at path comes from the write.
                    guard let rel = s.path.relative(path) else { continue }
                    let existing = out.value
                    let resolved = ServerValues.resolve(s.value, at: s.path, now: now) { p in
                        existingValue(p, existing)
                    }
                    if ServerValues.containsPlaceholder(s.value) { out.estimated = true }
                    out.value = rel.isPriority ? resolved.child(at: rel.node).priority : resolved.child(at: rel)
                    out.covered = true
                    out.touched = true
                } else if path.contains(s.path) {
                    guard let rel = path.relative(s.path), let first = rel.keys.first else { continue }
                    let existing = out.value
                    let resolved = ServerValues.resolve(s.value, at: s.path, now: now) { p in
                        existingValue(p, existing)
                    }
                    if ServerValues.containsPlaceholder(s.value) { out.estimated = true }
                    out.value = out.value.setting(rel, to: resolved)
                    if rel.count == 1 && !out.setChildren.contains(where: { KeyOrder.same($0, first) }) {
                        out.setChildren.append(first)
                    }
                    out.touched = true
                }
            }
        }
        return out
    }
}
