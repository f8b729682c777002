import CSQLite
import RTDBCore

/// The `sizes` table (schema version 5): for every node whose count (`SizeRules`, what
/// `ReadSizeBound` counts for a read of it) is at least `sizeThreshold`, exactly that count, so
/// that the size bound of any read is one lookup, or a scan of less than the threshold
/// (`jsonBytesAtLeast`). A parent counts more than any of its children, so the stored nodes are
/// the top of the tree: every ancestor of a stored node is stored.
///
/// Every write keeps it exact, in its own transaction, one change at a time
/// (`beginSizeChange` … `finishSizeChange`): a change at a node X knows X's count before (its
/// row, or a scan of less than the threshold) and after (from the value written, or from its
/// rows), replaces the rows of X's subtree, and walks up X's ancestors: a stored ancestor's
/// count moves by the difference; an ancestor not stored counted less than the threshold, so
/// it is scanned (less than the threshold, X's rows left out) only when the change grows it
/// and it may cross. Counts that fall below the threshold lose their row, so the table holds
/// exactly the nodes at or above it. Only exactness is needed for reads to be right (a node
/// missing from the table is scanned); the threshold bounds what a read or a write scans.
extension EmbeddedDatabase {
    /// The count at which a node's size is stored: a read of a smaller node scans less than
    /// this much, and so does a write that grows a node not stored. (64 KiB of JSON scans in
    /// about a millisecond; the table holds at most a row per 64 KiB per level of depth.)
    static let defaultSizeThreshold = 64 << 10

    /// The change of one node's rows inside a write: its key and its count before the write.
    struct SizeChange {
        let key: [UInt8]
        let oldBytes: Int
        let oldIsObject: Bool
        /// The row it had in `sizes` (the rows below it, if any, are replaced with its own).
        let wasStored: Bool
    }

    /// The stored count of the encoded path, if it has one.
    func storedSize(_ c: Connection, _ enc: [UInt8]) throws -> Int? {
        let s = try c.statement("SELECT bytes FROM sizes WHERE path = ?1")
        s.bind(1, blob: enc)
        defer { s.reset() }
        return try s.step() ? Int(s.int(0)) : nil
    }

    /// Whether the file has the `sizes` table (schema version 5): an older file not yet written
    /// by this version has none, and its reads scan.
    func sizeTableExists(_ c: Connection) throws -> Bool {
        if hasSizeTable { return true }
        if legacyLayout { return false }
        hasSizeTable = (try c.integer("PRAGMA main.user_version") ?? 0) >= 5
        return hasSizeTable
    }

    /// Call before the rows at the encoded path change. When the node holds nothing, a leaf above
    /// it (which the write would remove: it would shadow the value) is removed now, as a change
    /// of its own.
    func beginSizeChange(_ c: Connection, _ enc: [UInt8]) throws -> SizeChange {
        let change = try currentSize(c, enc)
        if change.oldBytes == 0 { try removeLeafAbove(c, enc, orAt: false) }
        return change
    }

    /// For an update of several paths below `path`: when the node there has no stored size (it
    /// counts less than the threshold), the update is one change of it, counted again from its
    /// rows at the end (`finishSizeChangeFromRows`), rather than a change per path, each of which
    /// would scan it again as it grows it. Nil when it has one: each path is a change of its own.
    func updateSizeChange(_ c: Connection, _ path: Path) throws -> SizeChange? {
        if path.isPriority { return nil }
        let enc = EmbeddedDatabase.encode(path)
        if try storedSize(c, enc) != nil { return nil }
        return try beginSizeChange(c, enc)
    }

    /// The count of the encoded path now, from its row or a scan (a node not stored counts
    /// less than the threshold).
    private func currentSize(_ c: Connection, _ enc: [UInt8]) throws -> SizeChange {
        if let stored = try storedSize(c, enc) {
            return SizeChange(key: enc, oldBytes: stored, oldIsObject: try leaf(c, at: enc) == nil, wasStored: true)
        }
        if let known = knownCount(c, enc) {
            return SizeChange(key: enc, oldBytes: known.bytes, oldIsObject: known.isObject, wasStored: false)
        }
        var count = ReadSizeBound(skip: enc.count)
        var below = false
        let s = try range(c, StorageKey.subtree(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        while try s.step() {
            count.add(s)
            if !below && s.blob(0).count > enc.count { below = true }
        }
        keepCount(c, enc, bytes: count.total, isObject: below)
        return SizeChange(key: enc, oldBytes: count.total, oldIsObject: below, wasStored: false)
    }

    /// Removes the leaf at a proper ancestor of the encoded path (or at the path itself, with
    /// `orAt`), if there is one, keeping `sizes` exact. A leaf has no rows below it, so such a
    /// leaf is the last row before the path.
    func removeLeafAbove(_ c: Connection, _ enc: [UInt8], orAt: Bool) throws {
        if enc.isEmpty && !orAt { return }
        let s = try c.statement("SELECT path, v FROM data WHERE path < ?1 ORDER BY path DESC LIMIT 1")
        s.bind(1, blob: orAt ? StorageKey.subtree(enc).hi : enc)
        var found: (key: [UInt8], bytes: Int)? = nil
        if try s.step() {
            let key = s.blob(0)
            if key.count <= enc.count && key.elementsEqual(enc[..<key.count]) {
                found = (Array(key), SizeRules.leafBytes(s, 1))
            }
        }
        s.reset()
        guard let (key, bytes) = found else { return }
        let change = SizeChange(key: key, oldBytes: bytes, oldIsObject: false, wasStored: try storedSize(c, key) != nil)
        let del = try c.statement("DELETE FROM data WHERE path = ?1")
        del.bind(1, blob: key)
        try del.run()
        try finishSizeChange(c, change, newBytes: 0, newIsObject: false, found: [])
    }

    /// Call once the rows of `change`'s node are written: `newBytes` is its count now and
    /// `found` the nodes below it counting at least the threshold (`SizeRules.measure`,
    /// `SubtreeSizes`). With `replacingBelow` false (new children added beside old ones, a
    /// push), the rows below it are kept and `found` adds to them.
    func finishSizeChange(_ c: Connection, _ change: SizeChange, newBytes: Int, newIsObject: Bool,
                          found: [(key: [UInt8], bytes: Int)], replacingBelow: Bool = true) throws {
        let threshold = sizeThreshold
        // The rows of the node changed: counts known below it are no longer sure, its own is
        // the new one.
        c.facts.counts.forgetSubtree(change.key)
        keepCount(c, change.key, bytes: newBytes, isObject: newIsObject)
        if replacingBelow && change.wasStored {
            // Only a stored node can have stored nodes below it (they count less than it).
            try range(c, StorageKey.subtree(change.key), "DELETE FROM sizes WHERE path >= ?1 AND path < ?2").run()
        }
        for row in found { try storeSize(c, row.key, row.bytes) }
        if newBytes >= threshold {
            try storeSize(c, change.key, newBytes)
        } else if change.wasStored && !replacingBelow {
            try dropSize(c, change.key)
        }
        let old = change.oldBytes == 0 ? 0
            : change.oldBytes + (SizeRules.memberBytes(lastSegmentOf: change.key, isObject: change.oldIsObject) ?? 0)
        let new = newBytes == 0 ? 0
            : newBytes + (SizeRules.memberBytes(lastSegmentOf: change.key, isObject: newIsObject) ?? 0)
        let root = change.key.isEmpty ? RootChange.counts(newBytes) : try propagateSize(c, from: change.key, old: old, new: new)
        switch root {
        case .counts(let bytes): c.facts.rootSize = RootSize.exactly(bytes, threshold: threshold)
        case .notGrown: break   // a bound stays one; `large` is only a hint
        }
    }

    /// What a change did to the root's count, as far as its walk up learned.
    enum RootChange {
        /// The root counts this now.
        case counts(Int)
        /// Not more than before (a change that grows always learns the root's new count).
        case notGrown
    }

    /// Carries a change of the node at `key` — its count plus its member bytes went from `old`
    /// to `new` — up through its ancestors.
    private func propagateSize(_ c: Connection, from key: [UInt8], old: Int, new: Int) throws -> RootChange {
        let threshold = sizeThreshold
        var ends = SizeRules.segmentEnds(key)
        // The child's change: exact while it grows (an ancestor not stored then needs it);
        // while it shrinks only the difference and whether it still holds anything matter.
        var delta = new - old
        var exact: (old: Int, new: Int)? = (old, new)
        var stillHolds = new > 0
        var child = key
        while delta != 0, !ends.isEmpty {
            ends.removeLast()
            let ancestor = Array(key[..<(ends.last ?? 0)])
            var before: Int? = nil, after: Int? = nil
            var heldBefore = true, holds = true
            if let stored = try storedSize(c, ancestor) {
                before = stored
                after = stored + delta
                holds = stored + delta > 0
                if stored + delta >= threshold { try storeSize(c, ancestor, stored + delta) } else { try dropSize(c, ancestor) }
                keepCount(c, ancestor, bytes: stored + delta, isObject: holds)
            } else if let known = knownCount(c, ancestor) {
                // Counted before in this transaction (KnownCounts): moved by the difference.
                before = known.bytes
                after = known.bytes + delta
                heldBefore = known.bytes > 0
                holds = known.bytes + delta > 0
                if known.bytes + delta >= threshold { try storeSize(c, ancestor, known.bytes + delta) }
                keepCount(c, ancestor, bytes: known.bytes + delta, isObject: holds)
            } else if delta > 0 {
                // Counted less than the threshold: what it holds beside the child is scanned.
                guard let exact else { throw RTDBError(.internal, "size of a growing node not known") }
                let rest = try countOutside(c, ancestor, child)
                before = rest + exact.old
                after = rest + exact.new
                heldBefore = rest + exact.old > 0
                if rest + exact.new >= threshold { try storeSize(c, ancestor, rest + exact.new) }
                keepCount(c, ancestor, bytes: rest + exact.new, isObject: true)
            } else {
                // Shrinking below the threshold: it stays below; it held the child's old data.
                holds = try stillHolds || hasDescendants(c, ancestor)
            }
            if ancestor.isEmpty { return after.map { .counts($0) } ?? .notGrown }
            let member = SizeRules.memberBytes(lastSegmentOf: ancestor, isObject: true) ?? 0
            delta += member * ((holds ? 1 : 0) - (heldBefore ? 1 : 0))
            if let before, let after {
                exact = (heldBefore ? before + member : 0, holds ? after + member : 0)
            } else {
                exact = nil
            }
            stillHolds = holds
            child = ancestor
        }
        // The change came to nothing before the root (or never reached it).
        return .notGrown
    }

    /// A count of the node at `key` this write transaction knows (KnownCounts.swift); none
    /// outside a transaction, where each statement is a transaction of its own.
    private func knownCount(_ c: Connection, _ key: [UInt8]) -> KnownCounts.Count? {
        c.autocommit ? nil : c.facts.counts[key]
    }

    /// Keeps the exact count of the node at `key` for the rest of the transaction (and the
    /// commits it is carried to), when it is worth keeping; forgets any other it had.
    private func keepCount(_ c: Connection, _ key: [UInt8], bytes: Int, isObject: Bool) {
        if c.autocommit { return }
        c.facts.counts.remember(key, KnownCounts.Count(bytes: bytes, isObject: isObject), threshold: sizeThreshold)
    }

    /// The count of the node at `key` without the rows of its child `child` (their count is
    /// added apart): the rows on either side of the child's, in one count.
    private func countOutside(_ c: Connection, _ key: [UInt8], _ child: [UInt8]) throws -> Int {
        var count = ReadSizeBound(skip: key.count)
        let sql = "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2"
        for bounds in [(key, child), (StorageKey.subtree(child).hi, StorageKey.subtree(key).hi)] {
            let s = try range(c, bounds, sql)
            defer { s.reset() }
            while try s.step() { count.add(s) }
        }
        return count.total
    }

    private func storeSize(_ c: Connection, _ key: [UInt8], _ bytes: Int) throws {
        let s = try c.statement("INSERT OR REPLACE INTO sizes(path, bytes) VALUES(?1, ?2)")
        s.bind(1, blob: key)
        s.bind(2, int: Int64(bytes))
        try s.run()
    }

    private func dropSize(_ c: Connection, _ key: [UInt8]) throws {
        let s = try c.statement("DELETE FROM sizes WHERE path = ?1")
        s.bind(1, blob: key)
        try s.run()
    }

    /// The counts of the node at the encoded path and of the nodes below it at or above the
    /// threshold, from a scan of its rows (what a streamed import wrote; a whole file).
    func scanSizes(_ c: Connection, _ enc: [UInt8]) throws -> SubtreeSizes {
        var sizes = SubtreeSizes(skip: enc.count, threshold: sizeThreshold)
        let s = try range(c, StorageKey.subtree(enc), "SELECT path, v FROM data WHERE path >= ?1 AND path < ?2")
        defer { s.reset() }
        while try s.step() { sizes.add(key: s.blob(0), leafBytes: SizeRules.leafBytes(s, 1)) }
        sizes.finish()
        return sizes
    }

    // MARK: files that are all below the threshold

    /// The root's count bound after a write that adds at most `growth` to it (`SizeRules.growthBound`),
    /// when that write may leave `sizes` alone: the root is known to count less than the
    /// threshold, and will after it (RootSize.swift). Nil: the write keeps `sizes` row by row.
    /// Store the bound in `facts.rootSize` once the write is made.
    func smallFileBound(_ c: Connection, growth: Int) throws -> Int? {
        if c.autocommit { return nil }
        if case .unknown = c.facts.rootSize {
            // A handle's first write does not count the root: a one-off write would pay more
            // for that than it saves (it counts the root again whenever another one wrote).
            guard c.facts.writes > 0 else { return nil }
            try learnRootSize(c)
        }
        guard case .below(let bound) = c.facts.rootSize else { return nil }
        // The write leaves `sizes` alone, and the counts it would move with it.
        if bound + growth < sizeThreshold {
            c.facts.counts.forgetAll()
            return bound + growth
        }
        // The bound only grows: count again (not more often than every quarter threshold of
        // growth, `RootSize.large`).
        try learnRootSize(c)
        guard case .below(let exact) = c.facts.rootSize, exact + growth < sizeThreshold else { return nil }
        c.facts.counts.forgetAll()
        return exact + growth
    }

    /// Counts the root (`facts.rootSize`): its stored size, or its rows, which count less than
    /// the threshold when it has none, up to where it counts as large.
    private func learnRootSize(_ c: Connection) throws {
        if try storedSize(c, []) != nil {
            c.facts.rootSize = .large
            return
        }
        var count = ReadSizeBound(skip: 0)
        let s = try c.statement("SELECT path, v FROM data ORDER BY path")
        defer { s.reset() }
        while try s.step() {
            count.add(s)
            if RootSize.isLarge(count.total, threshold: sizeThreshold) {
                c.facts.rootSize = .large
                return
            }
        }
        c.facts.rootSize = .below(count.total)
    }

    /// `finishSizeChange` for a node whose rows were written from a stream: counted from its rows.
    func finishSizeChangeFromRows(_ c: Connection, _ change: SizeChange) throws {
        let sizes = try scanSizes(c, change.key)
        try finishSizeChange(c, change, newBytes: sizes.total, newIsObject: sizes.isObject, found: sizes.found)
    }
}
