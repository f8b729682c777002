import RTDBCore

/// The count (`SizeRules`) of a node and of every node below it, from one scan of its rows in
/// key order: what fills and refreshes `sizes` (StoredSizes.swift) after a streamed import and
/// when an older file is upgraded. The nodes on the current row's path are open on a stack; a
/// row leaving one closes it, adding its count and its member bytes to its parent's.
struct SubtreeSizes {
    /// The length of the scanned node's key (rows below it continue it).
    let skip: Int
    let threshold: Int
    /// The scanned node's count, complete after `finish`.
    private(set) var total = 0
    /// Whether rows below the node were seen (it is an object), or its own row (a leaf).
    private(set) var isObject = false
    /// Nodes strictly below the scanned one whose count is at least `threshold`.
    private(set) var found: [(key: [UInt8], bytes: Int)] = []

    private struct Open {
        /// Where the node's segment ends in the row keys.
        var end: Int
        var bytes: Int
        var member: Int
    }
    private var open: [Open] = []
    private var previous: [UInt8] = []

    init(skip: Int, threshold: Int) {
        self.skip = skip
        self.threshold = threshold
    }

    mutating func add(key: UnsafeBufferPointer<UInt8>, leafBytes: Int) {
        // The first byte where this key leaves the previous one: an open node whose segment
        // ends after it is left (segments are never prefixes of one another).
        let shared = min(key.count, previous.count)
        var diverge = skip
        while diverge < shared && key[diverge] == previous[diverge] { diverge += 1 }
        while let last = open.last, last.end > diverge { close() }
        var start = open.last?.end ?? skip
        while start < key.count {
            let end = StorageKey.segmentEnd(key, from: start)
            open.append(Open(end: end, bytes: 0,
                             member: SizeRules.memberBytes(tag: key[start], segmentLength: end - start, isObject: end < key.count)))
            start = end
        }
        if open.isEmpty {
            total += leafBytes
        } else {
            open[open.count - 1].bytes += leafBytes
            isObject = true
        }
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: key)
    }

    /// Closes every node still open; `total` is then the scanned node's count.
    mutating func finish() {
        while !open.isEmpty { close() }
    }

    private mutating func close() {
        let node = open.removeLast()
        if node.bytes >= threshold { found.append((Array(previous[..<node.end]), node.bytes)) }
        if open.isEmpty { total += node.bytes + node.member } else { open[open.count - 1].bytes += node.bytes + node.member }
    }
}
