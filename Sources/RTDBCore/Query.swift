/// A query over the children of a location: one order, an optional
/// lower and upper bound (each a value with an optional key, inclusive or exclusive), and an
/// optional limit window. `window(of:)` applies them in Firebase's order: range, sort, limit.
public struct Query: Sendable {
    public enum Order: Sendable {
        case key
        case value
        case child(Path)
        /// By priority: no priority first, then numbers (numeric), then
        /// strings (UTF-16 code units); ties by key. Bounds are null, numbers or strings.
        case priority
    }

    public struct Bound: Sendable {
        public var value: Node
        public var key: String?
        public var exclusive: Bool
        public init(_ value: Node, key: String? = nil, exclusive: Bool = false) {
            self.value = value
            self.key = key
            self.exclusive = exclusive
        }
    }

    public enum Limit: Sendable, Equatable {
        case first(Int)
        case last(Int)
    }

    public var order: Order
    public var start: Bound?
    public var end: Bound?
    public var limit: Limit?

    public init(order: Order = .key, start: Bound? = nil, end: Bound? = nil, limit: Limit? = nil) {
        self.order = order
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// True for the plain key-ordered view of all children.
    public var isUnfiltered: Bool {
        if case .key = order, start == nil, end == nil, limit == nil { return true }
        return false
    }

    /// True when a range or a limit selects some children: the query is then a window of its
    /// own (REST's "filtered" query), not just an order over the whole location.
    public var isFiltered: Bool { start != nil || end != nil || limit != nil }

    /// Checks bound types: key-order bounds are keys,
    /// value and child bounds are primitives, priority bounds are null, numbers or strings.
    public func validate() throws {
        for b in [start, end].compactMap({ $0 }) {
            switch order {
            case .key:
                guard case .string(let s) = b.value else {
                    throw RTDBError(.invalidQuery, "bounds of a key-ordered query must be keys")
                }
                if b.key != nil { throw RTDBError(.invalidQuery, "a key-ordered query takes no bound key") }
                _ = s
            case .value, .child:
                if b.value.isObject { throw RTDBError(.invalidQuery, "query bounds must be primitive values") }
            case .priority:
                switch b.value {
                case .null, .int, .double, .string: break
                default: throw RTDBError(.invalidQuery, "bounds of a priority-ordered query must be null, numbers or strings")
                }
            }
        }
        if case .child(let p) = order, p.isRoot {
            throw RTDBError(.invalidQuery, "--order-by-child needs a child path")
        }
        if case .child(let p) = order, p.isPriority {
            throw RTDBError(.invalidQuery, "--order-by-child cannot name .priority; order by priority instead")
        }
        switch limit {
        case .first(let n)?, .last(let n)?:
            if n < 0 { throw RTDBError(.invalidQuery, "a limit must not be negative") }
        case nil: break
        }
    }

    /// The value a child sorts by under this order (`.null` for key order).
    @inline(__always)
    public func indexValue(_ node: Node) -> Node {
        switch order {
        case .key: return .null
        case .value: return node
        case .child(let p): return node.child(at: p)
        case .priority: return node.priority
        }
    }

    /// Index order of two children: their index values, then their keys.
    public func compare(_ ka: String, _ a: Node, _ kb: String, _ b: Node) -> Int {
        if case .key = order { return KeyOrder.compare(ka, kb) }
        let c = ValueOrder.compare(indexValue(a), indexValue(b))
        return c != 0 ? c : KeyOrder.compare(ka, kb)
    }

    /// True when a changed child counts as moved in this index, by the index's own rule (as
    /// Firebase's SDKs decide it): under value order, any change that is not deep-equal
    /// (`Node.same`, priorities included), so a changed object moves although all objects sort
    /// alike; under child and priority order, only a sort value that compares differently
    /// (`ValueOrder`), so an object-valued child that changes inside (`{y:2}` → `{y:3}`) does not
    /// move, nor does `1` → `1.0`; under key order, never.
    public func sortValueChanged(old: Node, new: Node) -> Bool {
        switch order {
        case .key: return false
        case .value: return !old.same(as: new)
        case .child, .priority: return ValueOrder.compare(indexValue(old), indexValue(new)) != 0
        }
    }

    /// Compares a child with a bound post; the bound's missing key stands for the smallest or
    /// the largest key as Firebase's startAt/startAfter/endAt/endBefore define it.
    func compare(_ key: String, sortValue: Node, to bound: Bound, missingKeyIsMax: Bool) -> Int {
        if case .key = order {
            guard case .string(let s) = bound.value else { return 0 }
            return KeyOrder.compare(key, s)
        }
        let c = ValueOrder.compare(sortValue, bound.value)
        if c != 0 { return c }
        if let bk = bound.key { return KeyOrder.compare(key, bk) }
        return missingKeyIsMax ? -1 : 1
    }

    /// True when the child lies inside the range (before any limit).
    public func inRange(_ key: String, _ node: Node) -> Bool {
        inRange(key, sortValue: indexValue(node))
    }

    /// `inRange` for a child whose sort value (`indexValue`) is already known.
    public func inRange(_ key: String, sortValue: Node) -> Bool {
        if let s = start {
            let c = compare(key, sortValue: sortValue, to: s, missingKeyIsMax: s.exclusive)
            if s.exclusive ? c <= 0 : c < 0 { return false }
        }
        if let e = end {
            let c = compare(key, sortValue: sortValue, to: e, missingKeyIsMax: !e.exclusive)
            if e.exclusive ? c >= 0 : c > 0 { return false }
        }
        return true
    }

    /// The children of `node` this query shows, in query order.
    public func window(of node: Node) -> [Node.Entry] {
        guard case .object(let all) = node.unprioritized else { return [] }
        if isUnfiltered { return all }
        let list = (start == nil && end == nil) ? all : all.filter { inRange($0.key, $0.node) }
        if case .key = order {
            // Children are stored in key order already.
            return Query.applyLimit(limit, to: list)
        }
        let ranked = list.map { Ranked(key: SortableKey($0.key), sortValue: indexValue($0.node), entry: $0) }
        return Query.ordered(ranked, limit: limit, by: Ranked.less).map(\.entry)
    }

    /// A child with its sort value, for ordering by value or child.
    public struct Ranked: Sendable {
        public var key: SortableKey
        public var sortValue: Node
        public var entry: Node.Entry
        public init(key: SortableKey, sortValue: Node, entry: Node.Entry) {
            self.key = key
            self.sortValue = sortValue
            self.entry = entry
        }

        /// Index order: sort values, then keys.
        public static func less(_ a: Ranked, _ b: Ranked) -> Bool {
            let c = ValueOrder.compare(a.sortValue, b.sortValue)
            return c != 0 ? c < 0 : SortableKey.compare(a.key, b.key) < 0
        }
    }

    static func applyLimit<T>(_ limit: Limit?, to list: [T]) -> [T] {
        switch limit {
        case .first(let n)?: return list.count > n ? Array(list[..<max(0, n)]) : list
        case .last(let n)?: return list.count > n ? Array(list[(list.count - max(0, n))...]) : list
        case nil: return list
        }
    }

    /// The items in increasing order, cut to the limit window. A small window over many items
    /// is selected in one pass (keeping only the best `n`) instead of sorting everything.
    public static func ordered<T>(_ items: [T], limit: Limit?, by less: (T, T) -> Bool) -> [T] {
        let n: Int
        let fromEnd: Bool
        switch limit {
        case .first(let k)?: n = k; fromEnd = false
        case .last(let k)?: n = k; fromEnd = true
        case nil: return items.sorted(by: less)
        }
        if n <= 0 { return [] }
        if n > 64 || n * 8 > items.count { return applyLimit(limit, to: items.sorted(by: less)) }
        var best: [T] = []
        best.reserveCapacity(n + 1)
        for item in items {
            if best.count == n {
                // Skip items outside the current window without touching it.
                if fromEnd ? !less(best[0], item) : !less(item, best[n - 1]) { continue }
            }
            var lo = 0, hi = best.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if less(best[mid], item) { lo = mid + 1 } else { hi = mid }
            }
            best.insert(item, at: lo)
            if best.count > n {
                if fromEnd { best.removeFirst() } else { best.removeLast() }
            }
        }
        return best
    }

    /// The window as a value (an object in key order), as a `value` event carries it. Without
    /// bounds or a limit the location shows as itself (a primitive too, and with its priority),
    /// whatever the order; otherwise a primitive shows as null and the window has no priority.
    /// The members of a view's value (`windowValue`) in this query's order, as an SDK's
    /// `snapshot.children` walks them, for printing the object in that order; nil when it
    /// prints as it is: not an object of two members or more, key order (a printed object's
    /// own order), or an object that prints as an array (in index order, as `val()` gives it).
    /// The value must keep its children's priorities for the priority order.
    public func orderedMembers(of value: Node) -> [Node.Entry]? {
        if case .key = order { return nil }
        guard case .object(let all) = value.unprioritized, all.count > 1, JSONWriter.arrayLength(all) == nil else { return nil }
        return Query(order: order).window(of: value)
    }

    public func windowValue(of node: Node) -> Node {
        if !isFiltered { return node }
        guard case .object(let all) = node.unprioritized else { return .null }
        if limit == nil {
            // Range only: the kept children are already in key order, no sort needed.
            let kept = (start == nil && end == nil) ? all : all.filter { inRange($0.key, $0.node) }
            return kept.isEmpty ? .null : .object(kept)
        }
        return Node.object(normalizing: window(of: node))
    }
}
