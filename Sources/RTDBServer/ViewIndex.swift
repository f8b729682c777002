import RTDBCore

/// The stream views of one file, placed in a tree by the keys of their paths, so that a write
/// finds the views it concerns (those at, above or below a path it wrote) by walking its own
/// path: its cost follows the depth of what it wrote and the views it concerns, never the
/// number of views elsewhere (300,000 listens on other paths cost an unrelated write nothing).
///
/// Keys are compared as bytes, as `Path` compares them (`KeyOrder.same`): a `String` key would
/// merge canonically equal keys that the data keeps apart.
final class ViewIndex {
    final class Node {
        var children: [[UInt8]: Node] = [:]
        /// The whole-location view at this path (shared by every plain stream on it).
        var plain: ServerStreams.View?
        /// Views of one stream each at this path: query views, and plain views whose value was
        /// read away from the loop (`StreamOpener`).
        var own: [ObjectIdentifier: ServerStreams.View] = [:]
        /// Views here and below: a walk stops where there are none.
        var count = 0

        var views: [ServerStreams.View] {
            var out = Array(own.values)
            if let plain { out.append(plain) }
            return out
        }
    }

    private let root = Node()

    var isEmpty: Bool { root.count == 0 }
    var all: [ServerStreams.View] { var out: [ServerStreams.View] = []; collect(root, into: &out); return out }

    /// The plain view at `path`, if any.
    func plain(at path: Path) -> ServerStreams.View? {
        var node = root
        for key in path.keys {
            guard let next = node.children[Array(key.utf8)] else { return nil }
            node = next
        }
        return node.plain
    }

    func insert(_ view: ServerStreams.View) {
        var node = root
        node.count += 1
        for key in view.path.keys {
            let k = Array(key.utf8)
            let next = node.children[k] ?? Node()
            node.children[k] = next
            node = next
            node.count += 1
        }
        if view.shared { node.plain = view } else { node.own[ObjectIdentifier(view)] = view }
    }

    /// Takes `view` out (nothing happens if it is not in); empty branches are pruned.
    func remove(_ view: ServerStreams.View) {
        var trail: [(Node, [UInt8])] = []
        var node = root
        for key in view.path.keys {
            let k = Array(key.utf8)
            guard let next = node.children[k] else { return }
            trail.append((node, k))
            node = next
        }
        if view.shared {
            guard node.plain === view else { return }
            node.plain = nil
        } else {
            guard node.own.removeValue(forKey: ObjectIdentifier(view)) != nil else { return }
        }
        root.count -= 1
        for (parent, k) in trail {
            let child = parent.children[k]!
            child.count -= 1
            if child.count == 0 { parent.children[k] = nil; break }
        }
    }

    /// Adds to `found` (once each, in the order met) the views a write of `keys` concerns: at
    /// the path, above it and below it.
    func collect<Keys: Sequence>(touching keys: Keys, into found: inout Found) where Keys.Element: Collection, Keys.Element.Element == UInt8 {
        var node = root
        found.add(node.views)
        for key in keys {
            guard let next = node.children[Array(key)] else { return }
            node = next
            found.add(node.views)
        }
        for child in node.children.values { collect(child, into: &found.list, seen: &found.seen) }
    }

    /// What a walk found: views in the order first met, each once.
    struct Found {
        var list: [ServerStreams.View] = []
        var seen: Set<ObjectIdentifier> = []

        mutating func add(_ views: [ServerStreams.View]) {
            for v in views where seen.insert(ObjectIdentifier(v)).inserted { list.append(v) }
        }
    }

    private func collect(_ node: Node, into out: inout [ServerStreams.View]) {
        out.append(contentsOf: node.views)
        for child in node.children.values { collect(child, into: &out) }
    }

    private func collect(_ node: Node, into out: inout [ServerStreams.View], seen: inout Set<ObjectIdentifier>) {
        for v in node.views where seen.insert(ObjectIdentifier(v)).inserted { out.append(v) }
        for child in node.children.values { collect(child, into: &out, seen: &seen) }
    }
}
