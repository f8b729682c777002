/// Exact counts (`SizeRules`) of nodes below the size threshold, so not in `sizes`, that a
/// write transaction learned from their rows (a `TransactionFacts` fact).
///
/// Without them, a write that grows a node not stored counts that node's other rows, up to the
/// threshold's worth (`propagateSize`), and a push counts the list it adds to
/// (`beginSizeChange`): a list filling up towards the threshold (a chat room, a log, the keys
/// of a new prefix) would be counted again by every write into it. Known, its count moves by
/// each write's difference, as a stored size does.
///
/// A count is exact only while every change of the rows below the node goes through
/// `finishSizeChange` and `propagateSize`, which move it: a change of a node forgets the
/// counts in its subtree (its rows were replaced), and a write that leaves `sizes` alone
/// (`smallFileBound`) forgets them all. Only counts worth keeping are held (a small node
/// counts in a few rows), and at most `capacity` of them.
struct KnownCounts {
    struct Count {
        var bytes: Int
        /// The node has rows below it (it is an object), rather than a leaf or nothing.
        var isObject: Bool
    }

    private var counts: [[UInt8]: Count] = [:]
    static let capacity = 64

    var isEmpty: Bool { counts.isEmpty }

    subscript(key: [UInt8]) -> Count? { counts.isEmpty ? nil : counts[key] }

    /// Keeps the exact count of the node at `key`, when it is worth keeping: at least a
    /// sixteenth of the threshold (64 KiB: 4 KiB, about a hundred rows to count) and below it
    /// (a node at the threshold is in `sizes`). Otherwise forgets any count it had.
    mutating func remember(_ key: [UInt8], _ count: Count, threshold: Int) {
        guard count.bytes >= threshold / 16, count.bytes < threshold else {
            if !counts.isEmpty { counts[key] = nil }
            return
        }
        if counts.count >= KnownCounts.capacity && counts[key] == nil { counts.removeAll(keepingCapacity: true) }
        counts[key] = count
    }

    mutating func forget(_ key: [UInt8]) {
        if !counts.isEmpty { counts[key] = nil }
    }

    /// Forgets the counts of the node at `key` and of every node below it. (A segment is never
    /// a prefix of another, so a key that starts with `key` is in its subtree.)
    mutating func forgetSubtree(_ key: [UInt8]) {
        if counts.isEmpty { return }
        if key.isEmpty {
            counts.removeAll(keepingCapacity: true)
            return
        }
        for k in counts.keys where k.count >= key.count && k.starts(with: key) { counts[k] = nil }
    }

    mutating func forgetAll() {
        if !counts.isEmpty { counts.removeAll(keepingCapacity: true) }
    }
}
