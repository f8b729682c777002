import RTDBCore

/// Rebuilds a `Node` from leaf rows that arrive in storage order (byte order of their encoded
/// paths, `StorageKey`). Each subtree's rows are contiguous in that order, so a stack of open
/// objects suffices; siblings arrive in key order already.
struct TreeBuilder {
    private struct Frame {
        var key: String
        var entries: [Node.Entry] = []
    }

    private var stack: [Frame] = [Frame(key: "")]
    /// Byte ranges of the open frames' keys within `previous`.
    private var previous: [UInt8] = []
    private var openRanges: [Range<Int>] = []
    private(set) var rows = 0
    /// Priorities to attach, keyed by node path relative to the subtree root (as `rel`).
    var priorities: [[UInt8]: Node] = [:]

    /// Adds the leaf at `rel` (path bytes relative to the subtree root, without a leading `/`).
    mutating func add(rel: UnsafeBufferPointer<UInt8>, value: Node) {
        rows += 1
        var segs: [Range<Int>] = []
        StorageKey.appendSegments(of: rel, to: &segs)
        // How many open frames (beyond the root) still match this row's leading segments?
        var common = 0
        let limit = min(openRanges.count, segs.count - 1)
        while common < limit {
            let a = openRanges[common], b = segs[common]
            if a.count != b.count { break }
            var equal = true
            for k in 0..<a.count where previous[a.lowerBound + k] != rel[b.lowerBound + k] { equal = false; break }
            if !equal { break }
            common += 1
        }
        while openRanges.count > common { closeTop() }
        if common < segs.count - 1 {
            for j in common..<(segs.count - 1) {
                stack.append(Frame(key: string(rel, segs[j])))
            }
        }
        var value = value
        if !priorities.isEmpty, let p = priorities[Array(rel)] { value = value.withPriority(p) }
        stack[stack.count - 1].entries.append(Node.Entry(string(rel, segs[segs.count - 1]), value))
        previous = Array(rel)
        openRanges = Array(segs.dropLast())
    }

    private func string(_ rel: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> String {
        StorageKey.key(rel, r)
    }

    private mutating func closeTop() {
        let frame = stack.removeLast()
        let range = openRanges.removeLast()
        var node = Node.object(normalizing: frame.entries)
        if !priorities.isEmpty, let p = priorities[Array(previous[..<range.upperBound])] { node = node.withPriority(p) }
        stack[stack.count - 1].entries.append(Node.Entry(frame.key, node))
    }

    /// The finished tree (`.null` when no rows were added).
    mutating func finish() -> Node {
        while openRanges.count > 0 { closeTop() }
        return Node.object(normalizing: stack[0].entries)
    }
}
