/// Value ordering for `orderByValue` and `orderByChild`:
/// null < false < true < numbers (numeric) < strings (UTF-16 code units) < objects (all equal);
/// ties are broken by key order by the caller. A node's priority plays no part here (it is its
/// own index, `Query.Order.priority`); priorities themselves (null, numbers, strings) compare
/// with this same order.
public enum ValueOrder {
    public static func rank(_ v: Node) -> Int {
        switch v {
        case .prioritized(let base, _): return rank(base)
        case .null: return 0
        case .bool(let b): return b ? 2 : 1
        case .int, .double: return 3
        case .string: return 4
        case .object: return 5
        }
    }

    public static func compare(_ a: Node, _ b: Node) -> Int {
        if case .prioritized(let base, _) = a { return compare(base, b) }
        if case .prioritized(let base, _) = b { return compare(a, base) }
        let ra = rank(a), rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.int, _), (.double, _): return NumberOrder.compare(a, b)
        case let (.string(x), .string(y)): return KeyOrder.compareUTF16(x, y)
        default: return 0
        }
    }
}
