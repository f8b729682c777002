import RTDBCore

/// A value during evaluation. `object` is a JSON object from `auth` (members readable);
/// `opaque` is `val()` of a node with children: not null, equal to no primitive, an error in
/// any other use.
enum RuleValue {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case object(Node)
    case opaque
    case snapshot(Snapshot)

    init(auth node: Node) {
        switch node {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .string(let s): self = .string(s)
        case .object: self = .object(node)
        case .prioritized(let base, _): self = RuleValue(auth: base)
        }
    }
}

/// A location in the data before (`old`) or after (`new`) the operation.
struct Snapshot {
    var new: Bool
    var path: Path
}

/// The query a read asks for, as rules see it. A plain read orders by key.
public struct RuleQuery: Sendable {
    public var orderByKey = true
    public var orderByValue = false
    public var orderByPriority = false
    public var orderByChild: String? = nil
    public var startAt: Node? = nil
    public var endAt: Node? = nil
    public var equalTo: Node? = nil
    public var limitToFirst: Int? = nil
    public var limitToLast: Int? = nil
    public init() {}
}

/// The data rules read, before and after the operation: `old` answers stored values (read
/// lazily, once per path); the writes overlay it to give the new tree, never copied.
public final class RuleData {
    let read: (Path) throws -> Node
    /// Values read so far, by path (a request reads a handful: a list beats hashing paths).
    private var cache: [(path: Path, value: Node)] = []
    /// The operation's writes: full paths and their new values (resolved, normal form).
    public private(set) var writes: [(path: Path, value: Node)] = []

    public init(read: @escaping (Path) throws -> Node) {
        self.read = read
    }

    public func setWrites(_ writes: [(path: Path, value: Node)]) {
        self.writes = writes
    }

    /// The stored value at `path` before the operation.
    public func old(_ path: Path) throws -> Node {
        // A cached location at or above `path` already holds the answer.
        var best: (path: Path, value: Node)?
        for entry in cache where entry.path.contains(path) {
            if best == nil || entry.path.count > (best?.path.count ?? 0) { best = entry }
        }
        if let best {
            if best.path.count == path.count { return best.value }
            return best.value.child(at: Path(validatedKeys: Array(path.keys[best.path.count...])))
        }
        let v = try read(path)
        if cache.count >= 64 { cache.removeFirst() }
        cache.append((path, v))
        return v
    }

    /// The value at `path` after the operation.
    public func new(_ path: Path) throws -> Node {
        if writes.isEmpty { return try old(path) }
        // Inside a write: that write's value decides.
        for w in writes where w.path.contains(path) {
            return w.value.child(at: Path(validatedKeys: Array(path.keys[w.path.count...])))
        }
        var value = try old(path)
        for w in writes where path.contains(w.path) {
            value = value.setting(Path(validatedKeys: Array(w.path.keys[path.count...])), to: w.value)
        }
        return value
    }
}

struct RuleFailure: Error {}

/// Everything one rule evaluation sees.
struct Scope {
    let auth: RuleValue
    let now: Double
    let data: RuleData
    let query: RuleQuery
    let location: Path
    let wildcards: [(name: String, value: String)]
}

/// Evaluates checked code. Any runtime error aborts the whole expression (`RuleFailure`), and
/// the rule counts as false; a step budget bounds the work.
struct Evaluator {
    let scope: Scope
    var steps = 0
    static let maxSteps = 100_000

    static func allows(_ code: Code, _ scope: Scope) -> Bool {
        var e = Evaluator(scope: scope)
        guard let v = try? e.eval(code), case .bool(let b) = v else { return false }
        return b
    }

    mutating func eval(_ code: Code) throws -> RuleValue {
        steps += 1
        if steps > Evaluator.maxSteps { throw RuleFailure() }
        switch code {
        case .constant(let v): return v
        case .auth: return scope.auth
        case .now: return .number(scope.now)
        case .root: return .snapshot(Snapshot(new: false, path: .root))
        case .data: return .snapshot(Snapshot(new: false, path: scope.location))
        case .newData: return .snapshot(Snapshot(new: true, path: scope.location))
        case .query(let f): return queryField(f)
        case .wildcard(let name):
            guard let w = scope.wildcards.last(where: { KeyOrder.same($0.name, name) }) else { throw RuleFailure() }
            return .string(w.value)
        case .member(let base, let key):
            let b = try eval(base)
            guard case .string(let k) = try eval(key) else { throw RuleFailure() }
            switch b {
            case .null: return .null
            case .object(let node): return RuleValue(auth: node.child(k))
            case .string(let s) where k == "length": return .number(Double(s.utf16.count))
            default: throw RuleFailure()
            }
        case .snapshot(let base, let m, let args):
            guard case .snapshot(let snap) = try eval(base) else { throw RuleFailure() }
            return try snapshotMethod(snap, m, args)
        case .hasChildrenList(let base, let items):
            guard case .snapshot(let snap) = try eval(base) else { throw RuleFailure() }
            for item in items {
                guard case .string(let p) = try eval(item) else { throw RuleFailure() }
                if try value(of: try child(snap, p)).isNull { return .bool(false) }
            }
            return .bool(true)
        case .string(let base, let m, let args):
            guard case .string(let s) = try eval(base) else { throw RuleFailure() }
            var strings: [String] = []
            for a in args {
                guard case .string(let t) = try eval(a) else { throw RuleFailure() }
                strings.append(t)
            }
            return stringMethod(s, m, strings)
        case .matches(let base, let regex):
            guard case .string(let s) = try eval(base) else { throw RuleFailure() }
            do { return .bool(try regex.matches(s)) } catch { throw RuleFailure() }
        case .not(let c):
            guard case .bool(let b) = try eval(c) else { throw RuleFailure() }
            return .bool(!b)
        case .negate(let c):
            guard case .number(let n) = try eval(c) else { throw RuleFailure() }
            return .number(-n)
        case .arithmetic(let op, let l, let r):
            return try arithmetic(op, try eval(l), try eval(r))
        case .equal(let l, let r, let negated):
            let same = Evaluator.equal(try eval(l), try eval(r))
            return .bool(same != negated)
        case .compare(let op, let l, let r):
            return .bool(try Evaluator.compare(op, try eval(l), try eval(r)))
        case .and(let l, let r):
            guard case .bool(let a) = try eval(l) else { throw RuleFailure() }
            if !a { return .bool(false) }
            guard case .bool(let b) = try eval(r) else { throw RuleFailure() }
            return .bool(b)
        case .or(let l, let r):
            guard case .bool(let a) = try eval(l) else { throw RuleFailure() }
            if a { return .bool(true) }
            guard case .bool(let b) = try eval(r) else { throw RuleFailure() }
            return .bool(b)
        case .conditional(let c, let a, let b):
            guard case .bool(let cond) = try eval(c) else { throw RuleFailure() }
            return try eval(cond ? a : b)
        }
    }

    func queryField(_ f: QueryField) -> RuleValue {
        let q = scope.query
        func node(_ n: Node?) -> RuleValue { n.map { RuleValue(auth: $0) } ?? .null }
        switch f {
        case .orderByKey: return .bool(q.orderByKey)
        case .orderByValue: return .bool(q.orderByValue)
        case .orderByPriority: return .bool(q.orderByPriority)
        case .orderByChild: return q.orderByChild.map { .string($0) } ?? .null
        case .startAt: return node(q.startAt)
        case .endAt: return node(q.endAt)
        case .equalTo: return node(q.equalTo)
        case .limitToFirst: return q.limitToFirst.map { .number(Double($0)) } ?? .null
        case .limitToLast: return q.limitToLast.map { .number(Double($0)) } ?? .null
        }
    }

    func value(of snap: Snapshot) throws -> Node {
        try snap.new ? scope.data.new(snap.path) : scope.data.old(snap.path)
    }

    /// `child(p)`: `p` may hold several keys separated by `/`; empty segments are skipped;
    /// an invalid key or a path past the depth limit is an error.
    func child(_ snap: Snapshot, _ p: String) throws -> Snapshot {
        var keys = snap.path.keys
        for seg in p.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            let key = String(decoding: seg, as: UTF8.self)
            if Limits.keyProblem(key) != nil { throw RuleFailure() }
            keys.append(key)
        }
        if keys.count > Limits.maxDepth { throw RuleFailure() }
        return Snapshot(new: snap.new, path: Path(validatedKeys: keys))
    }

    mutating func snapshotMethod(_ snap: Snapshot, _ m: SnapshotMethod, _ args: [Code]) throws -> RuleValue {
        switch m {
        case .child, .hasChild:
            guard case .string(let p) = try eval(args[0]) else { throw RuleFailure() }
            let c = try child(snap, p)
            if m == .child { return .snapshot(c) }
            return .bool(!(try value(of: c)).isNull)
        case .parent:
            guard let parent = snap.path.parent else { throw RuleFailure() }
            return .snapshot(Snapshot(new: snap.new, path: parent))
        case .val:
            let v = try value(of: snap)
            return v.isObject ? .opaque : RuleValue(auth: v)
        case .exists: return .bool(!(try value(of: snap)).isNull)
        case .hasChildren: return .bool((try value(of: snap)).isObject)
        case .getPriority: return RuleValue(auth: (try value(of: snap)).priority)
        // A priority never hides the value's type: the checks look at the value beneath it.
        case .isNumber:
            switch try value(of: snap).unprioritized { case .int, .double: return .bool(true); default: return .bool(false) }
        case .isString:
            if case .string = try value(of: snap).unprioritized { return .bool(true) }
            return .bool(false)
        case .isBoolean:
            if case .bool = try value(of: snap).unprioritized { return .bool(true) }
            return .bool(false)
        }
    }

    func stringMethod(_ s: String, _ m: StringMethod, _ a: [String]) -> RuleValue {
        switch m {
        case .contains: return .bool(a[0].isEmpty || Evaluator.find(a[0], in: s) != nil)
        case .beginsWith: return .bool(s.utf8.starts(with: a[0].utf8))
        case .endsWith: return .bool(s.utf8.reversed().starts(with: a[0].utf8.reversed()))
        case .replace: return .string(Evaluator.replaceAll(s, a[0], a[1]))
        case .toLowerCase: return .string(s.lowercased())
        case .toUpperCase: return .string(s.uppercased())
        case .matches: return .null   // compiled as `.matches`
        }
    }

    static func find(_ needle: String, in hay: String) -> Int? {
        let h = Array(hay.utf8), n = Array(needle.utf8)
        if n.isEmpty { return 0 }
        if n.count > h.count { return nil }
        var i = 0
        while i + n.count <= h.count {
            if h[i] == n[0] && Array(h[i..<(i + n.count)]) == n { return i }
            i += 1
        }
        return nil
    }

    /// Every occurrence, left to right, as plain text (an empty pattern changes nothing).
    static func replaceAll(_ s: String, _ a: String, _ b: String) -> String {
        let h = Array(s.utf8), n = Array(a.utf8), r = Array(b.utf8)
        if n.isEmpty { return s }
        var out: [UInt8] = []
        var i = 0
        while i < h.count {
            if i + n.count <= h.count && Array(h[i..<(i + n.count)]) == n {
                out += r
                i += n.count
            } else {
                out.append(h[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func arithmetic(_ op: String, _ l: RuleValue, _ r: RuleValue) throws -> RuleValue {
        if op == "+" {
            switch (l, r) {
            case let (.number(a), .number(b)): return .number(a + b)
            case let (.string(a), .string(b)): return .string(a + b)
            case let (.string(a), .number(b)): return .string(a + Evaluator.numberText(b))
            case let (.number(a), .string(b)): return .string(Evaluator.numberText(a) + b)
            default: throw RuleFailure()
            }
        }
        guard case .number(let a) = l, case .number(let b) = r else { throw RuleFailure() }
        switch op {
        case "-": return .number(a - b)
        case "*": return .number(a * b)
        case "/": return .number(b == 0 ? .nan : a / b)
        default: return .number(b == 0 ? .nan : a.truncatingRemainder(dividingBy: b))
        }
    }

    /// JavaScript's number text (`1`, `0.5`, `NaN`, `Infinity`).
    static func numberText(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return JSONWriter.format(d)
    }

    static func equal(_ l: RuleValue, _ r: RuleValue) -> Bool {
        switch (l, r) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return KeyOrder.same(a, b)
        case let (.object(a), .object(b)): return a.same(as: b)
        default: return false
        }
    }

    static func compare(_ op: String, _ l: RuleValue, _ r: RuleValue) throws -> Bool {
        let c: Int
        switch (l, r) {
        case let (.number(a), .number(b)):
            if a.isNaN || b.isNaN { return false }
            c = a == b ? 0 : (a < b ? -1 : 1)
        case let (.string(a), .string(b)):
            c = KeyOrder.compareUTF16(a, b)
        default:
            throw RuleFailure()
        }
        switch op {
        case "<": return c < 0
        case "<=": return c <= 0
        case ">": return c > 0
        default: return c >= 0
        }
    }
}
