/// When one query's answer can be read off another's (offline reads: a `--limit-to-last 2`
/// inside a cached `--limit-to-last 4`, a range inside a cached range).
///
/// A complete answer of a query, `known`, holds every child there is in one stretch of the
/// query's order: between its bounds, narrowed by a full limit window to the window's first
/// or last child. A second query of the same order is answered by it when every child it could
/// show lies in that stretch; with a limit, it is enough that its own end of the range lies
/// inside and that the stretch holds at least the limit's number of its children.
extension Query {
    /// True when `known`, the complete answer of `cached` (its children with their values, as
    /// stored), determines this query's answer: `window(of:)` over `known` is then exactly what
    /// the server would answer. False when the orders differ, or when `known` no longer fits
    /// `cached` (a child's value changed since: what it covered cannot be told).
    public func isAnswered(by cached: Query, known: [Node.Entry]) -> Bool {
        guard Query.sameOrder(order, cached.order) else { return false }
        let window = cached.window(of: Node.object(normalizing: known))
        guard window.count == known.count else { return false }
        // The stretch of the order in which `known` holds every child.
        var lower = cached.start.map { cached.cut(lower: $0) } ?? .smallest
        var upper = cached.end.map { cached.cut(upper: $0) } ?? .largest
        switch cached.limit {
        case .first(let n)?:
            // A zero limit shows nothing and says nothing about the range.
            if n == 0 { return false }
            if window.count >= n, let last = window.last { upper = cached.cut(after: last) }
        case .last(let n)?:
            if n == 0 { return false }
            if window.count >= n, let first = window.first { lower = cached.cut(before: first) }
        case nil:
            break
        }
        let lowerInside = Cut.compare(start.map { cut(lower: $0) } ?? .smallest, lower) >= 0
        let upperInside = Cut.compare(end.map { cut(upper: $0) } ?? .largest, upper) <= 0
        switch limit {
        case nil:
            return lowerInside && upperInside
        case .first(let m)?:
            return lowerInside && (upperInside || window.filter { inRange($0.key, $0.node) }.count >= m)
        case .last(let m)?:
            return upperInside && (lowerInside || window.filter { inRange($0.key, $0.node) }.count >= m)
        }
    }

    static func sameOrder(_ a: Order, _ b: Order) -> Bool {
        switch (a, b) {
        case (.key, .key), (.value, .value), (.priority, .priority): return true
        case let (.child(p), .child(q)): return p.same(as: q)
        default: return false
        }
    }

    /// A point between children in this query's order: children after a lower edge's cut are
    /// in, children before an upper edge's cut are in. Under key order the sort value is null
    /// and the key decides.
    struct Cut {
        enum Place {
            /// Before every child.
            case smallest
            /// Before (`tilt` -1) or after (+1) the child with `key`, among children of the sort value.
            case at(key: String, tilt: Int)
            /// Before (`tilt` -1) or after (+1) every child of the sort value.
            case edge(tilt: Int)
            /// After every child.
            case largest
        }

        var sortValue: Node
        var place: Place

        static let smallest = Cut(sortValue: .null, place: .smallest)
        static let largest = Cut(sortValue: .null, place: .largest)

        static func compare(_ a: Cut, _ b: Cut) -> Int {
            switch (a.place, b.place) {
            case (.smallest, .smallest), (.largest, .largest): return 0
            case (.smallest, _), (_, .largest): return -1
            case (_, .smallest), (.largest, _): return 1
            default: break
            }
            let c = ValueOrder.compare(a.sortValue, b.sortValue)
            if c != 0 { return c }
            switch (a.place, b.place) {
            case let (.edge(x), .edge(y)): return x == y ? 0 : (x < y ? -1 : 1)
            case let (.edge(x), .at): return x
            case let (.at, .edge(y)): return -y
            case let (.at(k, x), .at(l, y)):
                let k = KeyOrder.compare(k, l)
                if k != 0 { return k }
                return x == y ? 0 : (x < y ? -1 : 1)
            default: return 0
            }
        }
    }

    /// The cut of a lower bound (`startAt`, `startAfter`): a bound without a key stands for every
    /// key of its value, as `inRange` reads it.
    func cut(lower b: Bound) -> Cut {
        if case .key = order, case .string(let s) = b.value {
            return Cut(sortValue: .null, place: .at(key: s, tilt: b.exclusive ? 1 : -1))
        }
        if let k = b.key { return Cut(sortValue: b.value, place: .at(key: k, tilt: b.exclusive ? 1 : -1)) }
        return Cut(sortValue: b.value, place: .edge(tilt: b.exclusive ? 1 : -1))
    }

    /// The cut of an upper bound (`endAt`, `endBefore`).
    func cut(upper b: Bound) -> Cut {
        if case .key = order, case .string(let s) = b.value {
            return Cut(sortValue: .null, place: .at(key: s, tilt: b.exclusive ? -1 : 1))
        }
        if let k = b.key { return Cut(sortValue: b.value, place: .at(key: k, tilt: b.exclusive ? -1 : 1)) }
        return Cut(sortValue: b.value, place: .edge(tilt: b.exclusive ? -1 : 1))
    }

    /// Just before or just after a child.
    func cut(before e: Node.Entry) -> Cut { Cut(sortValue: sortValue(e.node), place: .at(key: e.key, tilt: -1)) }
    func cut(after e: Node.Entry) -> Cut { Cut(sortValue: sortValue(e.node), place: .at(key: e.key, tilt: 1)) }

    private func sortValue(_ node: Node) -> Node {
        if case .key = order { return .null }
        return indexValue(node)
    }
}
