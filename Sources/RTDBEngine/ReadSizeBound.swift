import CSQLite
import RTDBCore

/// The size bound of a read (`SizedReads`): a large node's is stored (`sizes`, StoredSizes.swift:
/// one lookup); any other's is counted from the leaf rows under the path in key order, less
/// than the stored threshold: no value is decoded or rendered, and the scan ends as soon as the
/// count passes the cap. (A file not yet upgraded to keep sizes is counted up to the cap.)
extension EmbeddedDatabase: SizedReads {
    public func jsonBytesAtLeast(_ path: Path, stoppingAbove cap: Int) throws -> Int {
        // A priority is one small leaf.
        if path.isPriority { return 0 }
        return try reading(0) { c in
            let enc = EmbeddedDatabase.encode(path)
            let s = try range(c, StorageKey.subtree(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
            defer { s.reset() }
            var count = ReadSizeBound(skip: enc.count)
            // Rows first: most reads are of small nodes, whose count ends below the threshold in
            // a few rows (exact, and no row of `sizes` is theirs), so they pay no lookup. Only a
            // count that reaches the threshold belongs to a stored node.
            let stored = try sizeTableExists(c)
            let first = stored ? min(cap, sizeThreshold - 1) : cap
            while count.total <= first, try s.step() {
                count.add(s)
            }
            guard count.total > first, stored, count.total <= cap else { return count.total }
            if let size = try storedSize(c, enc) { return size }
            while count.total <= cap, try s.step() {
                count.add(s)
            }
            return count.total
        }
    }

    /// One lookup when `cap` is at least the threshold: every node counting that much is in
    /// `sizes` (StoredSizes.swift), so a node that is not counts less than `cap`, and one that
    /// is counts what is stored. Below the threshold, or in a file without `sizes`, the rows
    /// are counted.
    public func jsonBytesExceed(_ path: Path, _ cap: Int) throws -> Bool {
        if path.isPriority { return false }
        if cap >= sizeThreshold {
            let enc = EmbeddedDatabase.encode(path)
            let known: Bool? = try reading(nil) { c in
                guard try sizeTableExists(c) else { return nil }
                return (try storedSize(c, enc) ?? 0) > cap
            }
            if let known { return known }
        }
        return try jsonBytesAtLeast(path, stoppingAbove: cap) > cap
    }
}

/// The count of one read, row by row. It is the compact JSON's size but for what it cannot
/// know without rendering, which it leaves out (so it never counts more than the JSON takes):
/// the keys of objects whose keys are all integers (they may render as arrays, which write no
/// keys), a decimal number's digits past the first, the escapes in strings, and the braces of
/// the value at the read path itself. Objects are found as rows enter them: a row whose key
/// leaves the previous row's key at some segment opens a new member there and an object for
/// every segment below it but the last.
struct ReadSizeBound {
    /// The length of the read path's key (rows below it continue it).
    let skip: Int
    private(set) var total = 0
    /// The previous row's key.
    private var previous: [UInt8] = []

    init(skip: Int) {
        self.skip = skip
    }

    mutating func add(_ s: Statement) {
        total += SizeRules.leafBytes(s, 1)
        let key = s.blob(0)
        // The value at the read path itself (a leaf): no key.
        guard key.count > skip else { return }
        // The first byte where this key leaves the previous one; a segment ending after it is
        // new (segments are never prefixes of one another, so equal bytes are the same key).
        let shared = min(key.count, previous.count)
        var diverge = skip
        while diverge < shared && key[diverge] == previous[diverge] { diverge += 1 }
        var start = skip
        while start < key.count {
            let end = StorageKey.segmentEnd(key, from: start)
            if end > diverge {
                // A new member of its object; not the last segment: an object.
                total += SizeRules.memberBytes(tag: key[start], segmentLength: end - start, isObject: end < key.count)
            }
            start = end
        }
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: key)
    }
}
