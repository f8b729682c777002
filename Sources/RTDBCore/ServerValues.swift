/// Server values: `{".sv":"timestamp"}` and `{".sv":{"increment":N}}`.
/// They are resolved when a write commits, each against the data stored at its own path before
/// that write, and every timestamp in one write receives the same instant.
public enum ServerValues {
    public static func isPlaceholder(_ node: Node) -> Bool {
        if case .object(let list) = node, list.count == 1, list[0].key == ".sv" { return true }
        return false
    }

    static func validatePlaceholder(_ node: Node, at path: [String]) throws {
        guard case .object(let list) = node else { return }
        let where_ = "/" + path.joined(separator: "/")
        switch list[0].node {
        case .string(let s) where s == "timestamp":
            return
        case .object(let op):
            if op.count == 1, op[0].key == "increment" {
                switch op[0].node {
                case .int: return
                case .double(let d) where d.isFinite: return
                default:
                    throw RTDBError(.invalidData, "server value at \(where_): increment needs a number")
                }
            }
            throw RTDBError(.invalidData, "server value at \(where_) is not recognized")
        default:
            throw RTDBError(.invalidData, "server value at \(where_) is not recognized")
        }
    }

    public static func containsPlaceholder(_ node: Node) -> Bool {
        if case .prioritized(let base, let p) = node { return isPlaceholder(p) || containsPlaceholder(base) }
        guard case .object(let list) = node else { return false }
        if isPlaceholder(node) { return true }
        return list.contains { containsPlaceholder($0.node) }
    }

    /// Resolves every placeholder in `node` (to be written at `path`). `existing` answers the
    /// value stored at a path before this write; it is consulted only for increments. A priority
    /// placeholder resolves against the existing priority (`path/.priority`).
    public static func resolve(_ node: Node, at path: Path, now: Int64,
                               existing: (Path) throws -> Node) rethrows -> Node {
        if case .prioritized(let base, let p) = node {
            let value = try resolve(base, at: path, now: now, existing: existing)
            let priority = try resolve(p, at: path.priority, now: now, existing: existing)
            return value.withPriority(priority)
        }
        guard case .object(let list) = node else { return node }
        if isPlaceholder(node) {
            switch list[0].node {
            case .object(let op):
                return increment(try existing(path).unprioritized, by: op[0].node)
            default:
                return .int(now)
            }
        }
        if !containsPlaceholder(node) { return node }
        var out = list
        for i in out.indices where out[i].node.isObject || ServerValues.containsPlaceholder(out[i].node) {
            out[i].node = try resolve(out[i].node, at: path.appending(out[i].key), now: now, existing: existing)
        }
        return .object(out)
    }

    /// The increment rule: a missing or non-numeric existing value yields the delta; two
    /// integers add exactly in 64 bits and fall back to a double on overflow; otherwise the
    /// sum is a double.
    public static func increment(_ existing: Node, by delta: Node) -> Node {
        switch (existing, delta) {
        case let (.int(a), .int(b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .double(Double(a) + Double(b)) : .int(sum)
        case let (.int(a), .double(b)): return number(Double(a) + b)
        case let (.double(a), .int(b)): return number(a + Double(b))
        case let (.double(a), .double(b)): return number(a + b)
        default: return delta
        }
    }

    static func number(_ d: Double) -> Node { .double(d) }
}
