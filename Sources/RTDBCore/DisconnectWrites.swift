
/// The writes a realtime session asked the server to make when it goes away,
/// kept as Firebase keeps them: a set of non-overlapping paths, each
/// with the value to write there.
/// * set at P: below a stored path it changes that stored value; otherwise it replaces every
///   stored path at or below P;
/// * an update stores each of its paths as its own set;
/// * cancel at P drops everything stored at or below P, and a stored ancestor is split into its
///   children so that just P is left alone (a stored primitive cannot be split: it stays; a
///   stored delete is dropped; an object's priority goes with the split, as the SDKs do).
public struct DisconnectWrites: Sendable {
    public private(set) var entries: [(path: Path, value: Node)] = []

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    public mutating func set(_ path: Path, _ value: Node) {
        if let i = entries.firstIndex(where: { $0.path.contains(path) }) {
            let rel = entries[i].path.relative(path) ?? .root
            entries[i].value = entries[i].value.setting(rel, to: value)
            return
        }
        entries.removeAll { path.contains($0.path) }
        entries.append((path, value))
    }

    public mutating func update(_ base: Path, _ list: [(path: Path, value: Node)]) {
        for e in list { set(base.appending(e.path), e.value) }
    }

    public mutating func cancel(_ path: Path) {
        entries.removeAll { path.contains($0.path) }
        guard let i = entries.firstIndex(where: { $0.path.contains(path) }) else { return }
        let stored = entries[i]
        // An object (with or without a priority, which the split drops as the SDKs do) is split
        // into its children; a stored delete has none; a primitive cannot be split.
        if stored.value.isNull {
            entries.remove(at: i)
        } else if stored.value.isObject {
            entries.remove(at: i)
            for c in stored.value.children { entries.append((stored.path.appending(c.key), c.node)) }
            cancel(path)
        }
    }

    /// The writes as one multi-path update at the root, in path order.
    public var update: [(path: Path, value: Node)] {
        entries.sorted { PathOrder.compare($0.path, $1.path) < 0 }
    }
}
