/// Event generation: the one place that turns (query, old value, new value) at a watched
/// location into the ordered events a listener sees.
///
/// Invariants (every caller — watcher, server, remote client — relies on them):
/// * A view is `Query.window(of:)` of the location's value: range, then sort, then limit. A
///   primitive or null location has an empty view, so it never raises child events; an object
///   overwritten by a primitive raises `child_removed` for every child it showed.
/// * Child mode, one change old → new raises, in this order:
///   1. `child_removed` for each key in the old view but not in the new one (value: the old
///      child, no prev key), in old-view order;
///   2. `child_added` for each key in the new view but not in the old one, in new-view order;
///   3. `child_moved` for each key in both views whose child differs and whose indexed value
///      changed by the index's own rule (`Query.sortValueChanged`: under value order any change
///      that is not deep-equal, so a changed object moves; under child and priority order a sort
///      value that compares differently, so a change inside an object-valued child does not),
///      even if its position is the same; never under key order;
///   4. `child_changed` for each key in both views whose child differs (`Node.same`, priorities
///      included, as Firebase compares snapshots).
///   Groups 2–4 follow the new view's order and carry the prev key: the key just before the
///   child in the new view, nil when it is first.
/// * Value mode raises at most one `value` event, carrying the new view's value, and only when
///   it differs from the old view's value (deep compare with `Node.same`, so a change of
///   priority alone raises one too). The view's value is
///   the window as an object, or — for a query with no bounds and no limit — the primitive itself
///   when the location holds one (a bounded or limited query over a primitive shows null, as
///   Firebase's ranged and limited filters do).
/// * Initial events: value mode → exactly one `value` (null when there is nothing); child mode →
///   one `child_added` per child of the view in view order, prev keys chained.
/// * A change that leaves the view identical raises nothing.
/// * `changedKeys` is only a hint: it must list every child key whose value may differ between
///   old and new (extra keys are harmless). The events are the same with or without it; it lets
///   key-ordered queries (any bounds and limit) and unlimited value/child-ordered queries with a
///   few changed keys skip the untouched children (binary searches, no full sort or deep compare).
///   Anything else falls back to the full diff.
/// * Pure: no I/O, no global state, no traps.
public enum EventType: String, Sendable {
    case value
    case childAdded = "child_added"
    case childRemoved = "child_removed"
    case childChanged = "child_changed"
    case childMoved = "child_moved"
}

public struct Event: Sendable {
    public var type: EventType
    /// The child's key (nil for `value`).
    public var key: String?
    /// The key of the child just before this one in the new view (added/changed/moved only).
    public var prevKey: String?
    /// The new child (the old one for `child_removed`), or the view's value for `value`.
    public var value: Node

    public init(type: EventType, key: String? = nil, prevKey: String? = nil, value: Node) {
        self.type = type
        self.key = key
        self.prevKey = prevKey
        self.value = value
    }
}

public enum EventGenerator {
    /// Hinted unlimited value/child-ordered views scan all children once per prev key they
    /// compute; beyond this many hinted keys the full diff (one sort) is cheaper.
    static let maxScannedHints = 16

    /// Initial events: value mode → one value event (window value, null if nothing); child mode →
    /// child_added per child in query order with prev chained.
    public static func initial(query: Query, value: Node, childEvents: Bool) -> [Event] {
        let query = sanitized(query)
        guard childEvents else { return [Event(type: .value, value: viewValue(query, value))] }
        var out: [Event] = []
        var prev: String? = nil
        for e in query.window(of: value) {
            out.append(Event(type: .childAdded, key: e.key, prevKey: prev, value: e.node))
            prev = e.key
        }
        return out
    }

    /// Events for one change old → new: removed (old value, no prev) → added → moved → changed,
    /// each group in query-index order, prev keys from the new view. Value mode: one value event
    /// when the view's value changed, none otherwise. See the invariants above.
    public static func changes(query: Query, old: Node, new: Node, childEvents: Bool,
                               changedKeys: [String]? = nil) -> [Event] {
        let query = sanitized(query)
        if childEvents {
            if let hint = changedKeys, let fast = hintedDiff(query, old, new, hint, needPrev: true) {
                return fast
            }
            return fullDiff(query, old, new)
        }
        if let hint = changedKeys, let fast = hintedDiff(query, old, new, hint, needPrev: false) {
            // Both sides are objects here: the view's value changed iff a child event would fire.
            return fast.isEmpty ? [] : [Event(type: .value, value: viewValue(query, new))]
        }
        let after = viewValue(query, new)
        return viewValue(query, old).same(as: after) ? [] : [Event(type: .value, value: after)]
    }

    // MARK: - Views

    /// Negative limits (refused by `Query.validate`) would trap in `Query.window`; treat them as 0.
    static func sanitized(_ q: Query) -> Query {
        var q = q
        switch q.limit {
        case .first(let n)? where n < 0: q.limit = .first(0)
        case .last(let n)? where n < 0: q.limit = .last(0)
        default: break
        }
        return q
    }

    /// The value a `value` event carries (see the invariants).
    static func viewValue(_ q: Query, _ node: Node) -> Node {
        q.windowValue(of: node)
    }

    // MARK: - Full diff

    /// A key compared and hashed byte for byte (Swift's `String` equality is canonical equivalence).
    struct ExactKey: Hashable {
        let key: String
        init(_ key: String) { self.key = key }
        static func == (a: ExactKey, b: ExactKey) -> Bool { KeyOrder.same(a.key, b.key) }
        func hash(into hasher: inout Hasher) {
            var k = key
            k.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// Recomputes both views and compares them (the reference algorithm).
    static func fullDiff(_ q: Query, _ old: Node, _ new: Node) -> [Event] {
        let ow = q.window(of: old), nw = q.window(of: new)
        if ow.isEmpty && nw.isEmpty { return [] }
        var oldPos: [ExactKey: Int] = [:]
        oldPos.reserveCapacity(ow.count)
        for (i, e) in ow.enumerated() { oldPos[ExactKey(e.key)] = i }
        var kept = [Bool](repeating: false, count: ow.count)
        var added: [Event] = [], moved: [Event] = [], changed: [Event] = []
        for (i, e) in nw.enumerated() {
            let prev = i > 0 ? nw[i - 1].key : nil
            guard let j = oldPos[ExactKey(e.key)] else {
                added.append(Event(type: .childAdded, key: e.key, prevKey: prev, value: e.node))
                continue
            }
            kept[j] = true
            let before = ow[j].node
            if before.same(as: e.node) { continue }
            if q.sortValueChanged(old: before, new: e.node) {
                moved.append(Event(type: .childMoved, key: e.key, prevKey: prev, value: e.node))
            }
            changed.append(Event(type: .childChanged, key: e.key, prevKey: prev, value: e.node))
        }
        var removed: [Event] = []
        for (j, e) in ow.enumerated() where !kept[j] {
            removed.append(Event(type: .childRemoved, key: e.key, value: e.node))
        }
        return removed + added + moved + changed
    }

    // MARK: - Hinted diff

    /// The events using `hint`, or nil when this query/value pair needs the full diff.
    static func hintedDiff(_ q: Query, _ old: Node, _ new: Node, _ hint: [String], needPrev: Bool) -> [Event]? {
        // A location whose own priority changed is left to the full diff (its value changed).
        guard old.priority.same(as: new.priority),
              case .object(let oc) = old.unprioritized, case .object(let nc) = new.unprioritized else { return nil }
        let hints = sortedUnique(hint)
        if case .key = q.order { return keyOrderDiff(q, oc, nc, hints) }
        if q.limit == nil && (!needPrev || hints.count <= maxScannedHints) {
            return rangeDiff(q, oc, nc, hints, needPrev: needPrev)
        }
        return nil
    }

    /// Keys sorted in key order, byte-identical duplicates dropped.
    static func sortedUnique(_ keys: [String]) -> [String] {
        let sorted = keys.map { SortableKey($0) }.sorted { SortableKey.compare($0, $1) < 0 }
        var out: [String] = []
        out.reserveCapacity(sorted.count)
        for (i, k) in sorted.enumerated() where i == 0 || SortableKey.compare(sorted[i - 1], k) != 0 {
            out.append(k.key)
        }
        return out
    }

    /// First index in `range` where `pred` holds (`pred` false…false true…true over the range).
    static func partitionPoint(_ list: [Node.Entry], _ range: Range<Int>, _ pred: (String) -> Bool) -> Int {
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if pred(list[mid].key) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }

    /// Under key order a view is a contiguous slice of the key-sorted children; nil when a bound
    /// is not a key (refused by `Query.validate`; the full diff handles it as `Query` does).
    static func keySlice(_ q: Query, _ list: [Node.Entry]) -> Range<Int>? {
        var lo = 0, hi = list.count
        if let s = q.start {
            guard case .string(let sk) = s.value else { return nil }
            lo = partitionPoint(list, 0..<list.count) {
                let c = KeyOrder.compare($0, sk)
                return s.exclusive ? c > 0 : c >= 0
            }
        }
        if let e = q.end {
            guard case .string(let ek) = e.value else { return nil }
            hi = partitionPoint(list, lo..<list.count) {
                let c = KeyOrder.compare($0, ek)
                return e.exclusive ? c >= 0 : c > 0
            }
        }
        switch q.limit {
        case .first(let n)?: if n < hi - lo { hi = lo + max(n, 0) }
        case .last(let n)?: if n < hi - lo { lo = hi - max(n, 0) }
        case nil: break
        }
        return lo..<hi
    }

    /// Indices of `a[aRange]` whose keys fall outside the key interval spanned by `b[bRange]`.
    static func outside(_ a: [Node.Entry], _ aRange: Range<Int>, _ b: [Node.Entry], _ bRange: Range<Int>) -> [Int] {
        guard let first = bRange.first, let last = bRange.last else { return Array(aRange) }
        let low = b[first].key, high = b[last].key
        let p = partitionPoint(a, aRange) { KeyOrder.compare($0, low) >= 0 }
        let r = partitionPoint(a, p..<aRange.upperBound) { KeyOrder.compare($0, high) > 0 }
        return Array(aRange.lowerBound..<p) + Array(r..<aRange.upperBound)
    }

    static func isHinted(_ hints: [String], _ key: String) -> Bool {
        var lo = 0, hi = hints.count
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            let c = KeyOrder.compare(hints[mid], key)
            if c == 0 { return true }
            if c < 0 { lo = mid + 1 } else { hi = mid }
        }
        return false
    }

    /// Key order: hinted keys are looked up by binary search; an untouched child can only enter
    /// or leave the view when a limit shifts it, and those lie outside the other view's key span.
    static func keyOrderDiff(_ q: Query, _ oc: [Node.Entry], _ nc: [Node.Entry], _ hints: [String]) -> [Event]? {
        guard let oR = keySlice(q, oc), let nR = keySlice(q, nc) else { return nil }
        var removed: [Int] = [], added: [Int] = [], changed: [Int] = []
        for k in hints {
            let oi = Node.search(oc, k), ni = Node.search(nc, k)
            let inOld = oi >= 0 && oR.contains(oi), inNew = ni >= 0 && nR.contains(ni)
            if inOld && !inNew {
                removed.append(oi)
            } else if inNew && !inOld {
                added.append(ni)
            } else if inOld && inNew && !oc[oi].node.same(as: nc[ni].node) {
                changed.append(ni)
            }
        }
        removed += outside(oc, oR, nc, nR).filter { !isHinted(hints, oc[$0].key) }
        added += outside(nc, nR, oc, oR).filter { !isHinted(hints, nc[$0].key) }
        func prev(_ i: Int) -> String? { i > nR.lowerBound ? nc[i - 1].key : nil }
        var out: [Event] = []
        for i in removed.sorted() {
            out.append(Event(type: .childRemoved, key: oc[i].key, value: oc[i].node))
        }
        for i in added.sorted() {
            out.append(Event(type: .childAdded, key: nc[i].key, prevKey: prev(i), value: nc[i].node))
        }
        for i in changed.sorted() {
            out.append(Event(type: .childChanged, key: nc[i].key, prevKey: prev(i), value: nc[i].node))
        }
        return out
    }

    /// Value/child order without a limit: membership depends on the child alone, so only hinted
    /// keys can raise events; each prev key is found by one scan of the new children.
    static func rangeDiff(_ q: Query, _ oc: [Node.Entry], _ nc: [Node.Entry], _ hints: [String],
                          needPrev: Bool) -> [Event] {
        var removed: [Node.Entry] = [], added: [Node.Entry] = []
        var changed: [(entry: Node.Entry, old: Node)] = []
        for k in hints {
            let oi = Node.search(oc, k), ni = Node.search(nc, k)
            let before: Node? = oi >= 0 && q.inRange(k, oc[oi].node) ? oc[oi].node : nil
            let after: Node? = ni >= 0 && q.inRange(k, nc[ni].node) ? nc[ni].node : nil
            switch (before, after) {
            case let (b?, nil): removed.append(Node.Entry(oc[oi].key, b))
            case let (nil, a?): added.append(Node.Entry(nc[ni].key, a))
            case let (b?, a?) where !b.same(as: a): changed.append((Node.Entry(nc[ni].key, a), b))
            default: break
            }
        }
        func before(_ x: Node.Entry, _ y: Node.Entry) -> Bool { q.compare(x.key, x.node, y.key, y.node) < 0 }
        removed.sort(by: before)
        added.sort(by: before)
        changed.sort { before($0.entry, $1.entry) }
        let moved = changed.filter { q.sortValueChanged(old: $0.old, new: $0.entry.node) }.map { $0.entry }
        // Prev key of each target: the greatest in-range new child that sorts before it.
        typealias Post = (key: String, sort: Node)
        func less(_ x: Post, _ y: Post) -> Bool {
            let c = ValueOrder.compare(x.sort, y.sort)
            return c != 0 ? c < 0 : KeyOrder.compare(x.key, y.key) < 0
        }
        let targets: [Post] = (added + changed.map { $0.entry }).map { ($0.key, q.indexValue($0.node)) }
        var prevs = [Post?](repeating: nil, count: targets.count)
        if needPrev && !targets.isEmpty {
            for e in nc where q.inRange(e.key, e.node) {
                let post: Post = (e.key, q.indexValue(e.node))
                for t in targets.indices where less(post, targets[t]) {
                    if let p = prevs[t], !less(p, post) { continue }
                    prevs[t] = post
                }
            }
        }
        var prevOf: [ExactKey: String] = [:]
        for (t, target) in targets.enumerated() {
            if let p = prevs[t] { prevOf[ExactKey(target.key)] = p.key }
        }
        var out = removed.map { Event(type: .childRemoved, key: $0.key, value: $0.node) }
        for (type, list) in [(EventType.childAdded, added), (.childMoved, moved), (.childChanged, changed.map { $0.entry })] {
            for e in list {
                out.append(Event(type: type, key: e.key, prevKey: prevOf[ExactKey(e.key)], value: e.node))
            }
        }
        return out
    }
}
