import RTDBCore

/// Evaluates checked code. Any runtime error aborts the whole expression (`RuleFailure`), and
/// the rule counts as false; a step budget bounds the work.
struct Evaluator {
    let scope: Scope
    var steps = 0
    static let maxSteps = 100_000
    /// The rule's location, once joined.
    private var joined: Path? = nil
    /// Where each marked subexpression is reported (set only when evaluating traced code).
    var report: MarkReport = .none

    init(scope: consuming Scope) {
        self.scope = scope
    }

    /// The rule's location as one path (joined on first use).
    mutating func location() -> Path {
        if let joined { return joined }
        let path = scope.key.map { scope.base.appending($0) } ?? scope.base
        joined = path
        return path
    }

    /// Whether `rule` holds in `scope`: its plain code, or its traced code counted or told to
    /// the check's observer.
    static func allows(_ rule: RuleSet.Rule, _ scope: consuming Scope) -> Bool {
        switch scope.context.watch {
        case .none: return allows(rule.code, scope)
        case .counting: return counted(rule, scope)
        case .observer(let observer): return observed(rule, scope, observer)
        }
    }

    static func allows(_ code: Code, _ scope: consuming Scope) -> Bool {
        var e = Evaluator(scope: scope)
        guard let v = try? e.eval(code), case .bool(let b) = v else { return false }
        return b
    }

    /// Counts one step of the budget.
    mutating func step() throws {
        steps += 1
        if steps > Evaluator.maxSteps { throw RuleFailure() }
    }

    /// One node. Recursion goes through here once per level of the code, so the cases that
    /// do more than return a value are functions of their own: this frame stays small even
    /// in a debug build (`Nesting.expressionLimit` counts on it).
    mutating func eval(_ code: Code) throws -> RuleValue {
        try step()
        switch code {
        case .constant(let v): return v
        case .childKeys(let text, _): return .string(text)
        case .auth: return scope.context.auth
        case .now: return .number(scope.context.now)
        case .root: return .snapshot(Snapshot(new: false, path: .root))
        case .data: return .snapshot(Snapshot(new: false, path: location()))
        case .newData: return .snapshot(Snapshot(new: true, path: location(), known: scope.newValue))
        case .query(let f): return queryField(f)
        case .wildcard(let position):
            guard position < scope.wildcards.count else { throw RuleFailure() }
            return .string(scope.wildcards[position])
        case .member(let base, let key): return try member(base, key)
        case .snapshot(let base, let m, let args): return try snapshotCall(base, m, args)
        case .hasChildrenList(let base, let items): return try hasChildren(base, items)
        case .string(let base, let m, let args): return try stringCall(base, m, args)
        case .matches(let base, let regex): return try matches(base, regex)
        case .not(let c):
            guard case .bool(let b) = try eval(c) else { throw RuleFailure() }
            return .bool(!b)
        case .negate(let c):
            guard case .number(let n) = try eval(c) else { throw RuleFailure() }
            return .number(-n)
        case .arithmetic(let op, let l, let r): return try arithmetic(op, l, r)
        case .equal(let l, let r, let negated): return try equal(l, r, negated)
        case .compare(let op, let l, let r): return try compare(op, l, r)
        case .fold(let first, let steps): return try fold(first, steps)
        case .and(let operands): return .bool(try all(operands, are: true))
        case .or(let operands): return .bool(!(try all(operands, are: false)))
        case .conditional(let c, let a, let b):
            guard case .bool(let cond) = try eval(c) else { throw RuleFailure() }
            return try eval(cond ? a : b)
        case .mark(let id, let inner): return try mark(id, inner)
        }
    }

    mutating func member(_ base: Code, _ key: Code) throws -> RuleValue {
        let b = try eval(base)
        guard case .string(let k) = try eval(key) else { throw RuleFailure() }
        switch b {
        case .null: return .null
        case .object(let node): return RuleValue(auth: node.child(k))
        case .string(let s) where k == "length": return .number(Double(s.utf16.count))
        default: throw RuleFailure()
        }
    }

    mutating func snapshotCall(_ base: Code, _ m: SnapshotMethod, _ args: [Code]) throws -> RuleValue {
        // A value method of newData where the check holds the value: no snapshot to make
        // (its step counted as `snapshot(_:)` would).
        if case .newData = base, case .known(let node) = scope.newValue, let answer = Evaluator.answer(m, of: node) {
            try step()
            return answer
        }
        return try snapshotMethod(try snapshot(base), m, args)
    }

    mutating func hasChildren(_ base: Code, _ items: [Code]) throws -> RuleValue {
        let snap = try snapshot(base)
        for item in items {
            let keys = try childKeys(item)
            if try value(of: snap, child: keys).isNull { return .bool(false) }
        }
        return .bool(true)
    }

    mutating func stringCall(_ base: Code, _ m: StringMethod, _ args: [Code]) throws -> RuleValue {
        guard case .string(let s) = try eval(base) else { throw RuleFailure() }
        // At most two arguments (`replace`), each a string: no array for them.
        var first = "", second = ""
        for (i, a) in args.enumerated() {
            guard case .string(let t) = try eval(a) else { throw RuleFailure() }
            if i == 0 { first = t } else { second = t }
        }
        return stringMethod(s, m, first, second)
    }

    mutating func matches(_ base: Code, _ regex: RuleRegex) throws -> RuleValue {
        guard case .string(let s) = try eval(base) else { throw RuleFailure() }
        do { return .bool(try regex.matches(s)) } catch { throw RuleFailure() }
    }

    mutating func arithmetic(_ op: Arithmetic, _ l: Code, _ r: Code) throws -> RuleValue {
        try Evaluator.arithmetic(op, try eval(l), try eval(r))
    }

    mutating func equal(_ l: Code, _ r: Code, _ negated: Bool) throws -> RuleValue {
        let same = Evaluator.equal(try eval(l), try eval(r))
        return .bool(same != negated)
    }

    mutating func compare(_ op: Comparison, _ l: Code, _ r: Code) throws -> RuleValue {
        .bool(try Evaluator.compare(op, try eval(l), try eval(r)))
    }

    /// Whether every operand gives `value`, evaluated in order up to the first that does not
    /// (the short circuit of `&&` when `value` is true, of `||` when it is false). One step for
    /// the chain, and each operand's own: a chain decided early costs little however long it is.
    mutating func all(_ operands: [Code], are value: Bool) throws -> Bool {
        for operand in operands {
            guard case .bool(let b) = try eval(operand) else { throw RuleFailure() }
            if b != value { return false }
        }
        return true
    }

    /// A chain of one precedence level, left to right, by a loop.
    mutating func fold(_ first: Code, _ steps: [(Operation, Code)]) throws -> RuleValue {
        var value = try eval(first)
        for (operation, operand) in steps {
            let right = try eval(operand)
            switch operation {
            case .arithmetic(let op): value = try Evaluator.arithmetic(op, value, right)
            case .equal(let negated): value = .bool(Evaluator.equal(value, right) != negated)
            case .compare(let op): value = .bool(try Evaluator.compare(op, value, right))
            }
        }
        return value
    }

    func queryField(_ f: QueryField) -> RuleValue {
        let q = scope.context.query
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

    /// The snapshot `code` gives (its static type is a snapshot). `data`, `newData` and `root`,
    /// the usual bases of a method call, are made here directly rather than through a
    /// `RuleValue`; each still counts its step.
    mutating func snapshot(_ code: Code) throws -> Snapshot {
        switch code {
        case .data:
            try step()
            return Snapshot(new: false, path: location())
        case .newData:
            try step()
            return Snapshot(new: true, path: location(), known: scope.newValue)
        default:
            guard case .snapshot(let snap) = try eval(code) else { throw RuleFailure() }
            return snap
        }
    }

    /// The value a snapshot names. Only `getPriority()` needs the stored priorities; every
    /// other method looks through them.
    func value(of snap: Snapshot, priorities: Bool = false) throws -> Node {
        if case .known(let node) = snap.known { return node }
        let data = scope.context.data
        return try snap.new ? data.after(snap.path, priorities: priorities) : data.before(snap.path, priorities: priorities)
    }

    /// The keys the `child()` argument `code` names: split when the rules loaded for a
    /// literal (still a step of the budget), else from its value now.
    mutating func childKeys(_ code: Code) throws -> [String] {
        if case .childKeys(_, let keys) = code {
            try step()
            guard let keys else { throw RuleFailure() }
            return keys
        }
        guard case .string(let p) = try eval(code), let keys = Evaluator.keys(p) else { throw RuleFailure() }
        return keys
    }

    /// The keys of a `child()` path: `p` may hold several separated by `/`; empty segments are
    /// skipped; nil when a key is invalid.
    static func keys(_ p: String) -> [String]? {
        let slash = UInt8(ascii: "/")
        var text = p
        if !text.withUTF8({ $0.contains(slash) }) {
            // One key, the common case: the argument itself, not a copy.
            if p.isEmpty { return [] }
            return Limits.keyProblem(p) == nil ? [p] : nil
        }
        var keys: [String] = []
        for seg in p.utf8.split(separator: slash, omittingEmptySubsequences: true) {
            let key = String(decoding: seg, as: UTF8.self)
            if Limits.keyProblem(key) != nil { return nil }
            keys.append(key)
        }
        return keys
    }

    /// `child()`: the snapshot `keys` below `snap`; a path past the depth limit is an error.
    func child(_ snap: Snapshot, _ keys: [String]) throws -> Snapshot {
        if snap.path.count + keys.count > Limits.maxDepth { throw RuleFailure() }
        var known = snap.known
        if case .known(var node) = known {
            for key in keys { node = node.child(key) }
            known = .known(node)
        }
        return Snapshot(new: snap.new, path: Path(validatedKeys: snap.path.keys + keys), known: known)
    }

    /// The value `keys` below `snap`: walked down a value already held, without building the
    /// path, else looked up.
    func value(of snap: Snapshot, child keys: [String]) throws -> Node {
        guard case .known(var v) = snap.known else { return try value(of: child(snap, keys)) }
        if snap.path.count + keys.count > Limits.maxDepth { throw RuleFailure() }
        for key in keys { v = v.child(key) }
        return v
    }

    mutating func snapshotMethod(_ snap: Snapshot, _ m: SnapshotMethod, _ args: [Code]) throws -> RuleValue {
        switch m {
        case .child, .hasChild:
            let keys = try childKeys(args[0])
            if m == .child { return .snapshot(try child(snap, keys)) }
            return .bool(!(try value(of: snap, child: keys)).isNull)
        case .parent:
            guard let parent = snap.path.parent else { throw RuleFailure() }
            return .snapshot(Snapshot(new: snap.new, path: parent))
        default:
            guard let answer = Evaluator.answer(m, of: try value(of: snap, priorities: m == .getPriority)) else { throw RuleFailure() }
            return answer
        }
    }

    /// What a method that reads only the snapshot's value answers for `v`; nil for `child`,
    /// `hasChild` and `parent`, which need its location.
    static func answer(_ m: SnapshotMethod, of v: Node) -> RuleValue? {
        switch m {
        case .val: return v.isObject ? .opaque : RuleValue(auth: v)
        case .exists: return .bool(!v.isNull)
        case .hasChildren: return .bool(v.isObject)
        case .getPriority: return RuleValue(auth: v.priority)
        // A priority never hides the value's type: the checks look at the value beneath it.
        case .isNumber:
            switch v.unprioritized { case .int, .double: return .bool(true); default: return .bool(false) }
        case .isString:
            if case .string = v.unprioritized { return .bool(true) }
            return .bool(false)
        case .isBoolean:
            if case .bool = v.unprioritized { return .bool(true) }
            return .bool(false)
        case .child, .hasChild, .parent: return nil
        }
    }

    func stringMethod(_ s: String, _ m: StringMethod, _ a: String, _ b: String) -> RuleValue {
        switch m {
        case .contains: return .bool(a.isEmpty || Evaluator.find(a, in: s) != nil)
        case .beginsWith: return .bool(s.utf8.starts(with: a.utf8))
        case .endsWith: return .bool(s.utf8.reversed().starts(with: a.utf8.reversed()))
        case .replace: return .string(Evaluator.replaceAll(s, a, b))
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

    static func arithmetic(_ op: Arithmetic, _ l: RuleValue, _ r: RuleValue) throws -> RuleValue {
        switch (op, l, r) {
        case let (_, .number(a), .number(b)):
            switch op {
            case .add: return .number(a + b)
            case .subtract: return .number(a - b)
            case .multiply: return .number(a * b)
            case .divide: return .number(b == 0 ? .nan : a / b)
            case .remainder: return .number(b == 0 ? .nan : a.truncatingRemainder(dividingBy: b))
            }
        case let (.add, .string(a), .string(b)): return .string(a + b)
        case let (.add, .string(a), .number(b)): return .string(a + Evaluator.numberText(b))
        case let (.add, .number(a), .string(b)): return .string(Evaluator.numberText(a) + b)
        default: throw RuleFailure()
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

    static func compare(_ op: Comparison, _ l: RuleValue, _ r: RuleValue) throws -> Bool {
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
        case .less: return c < 0
        case .lessOrEqual: return c <= 0
        case .greater: return c > 0
        case .greaterOrEqual: return c >= 0
        }
    }
}
