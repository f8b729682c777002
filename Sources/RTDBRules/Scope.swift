import RTDBCore

/// A value during evaluation. `object` is a JSON object from `auth` (members readable);
/// `opaque` is `val()` of a node with children: not null, equal to no primitive, an error in
/// any other use.
enum RuleValue: Sendable {
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
struct Snapshot: Sendable {
    var new: Bool
    var path: Path
    /// The value at `path` when the check already holds it (new data inside a write, handed
    /// down as the check walks the written value): no lookup then.
    var known: Held = .unknown
}

/// The value at a location when a check already holds it. (An `Optional<Node>` would do, but
/// copies of the generic optional go through its runtime witness; a concrete enum's are inline.)
enum Held: Sendable {
    case unknown
    case known(Node)
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

struct RuleFailure: Error {}

/// What every rule of one operation sees alike: who asks, when, the data, and the query of a
/// read. One per check, shared by reference by every rule it evaluates.
final class RuleContext {
    let auth: RuleValue
    let now: Double
    let data: RuleData
    let query: RuleQuery
    /// True when the new data at and below each write is that write's value, which the check
    /// hands down as it walks it (`RuleData.writesDisjoint`); else every location is looked up.
    let handsDown: Bool
    /// What the check tells about the rules it evaluates.
    let watch: Watch

    /// How a check reports: not at all (plain code), by counting into each rule's counters
    /// (`Coverage.counter`: marked code, a counter's atomic add per mark and no call through
    /// the observer protocol, since `serve` counts every check), or to an observer.
    enum Watch {
        case none
        case counting
        case observer(RulesObserver)
    }

    init(principal: Principal, now: Int64, data: RuleData, query: RuleQuery = RuleQuery(), observer: RulesObserver? = nil) {
        switch observer {
        case nil: watch = .none
        case is Coverage: watch = .counting
        case let o?: watch = .observer(o)
        }
        auth = principal.authValue
        self.now = Double(now)
        self.data = data
        self.query = query
        handsDown = data.writesDisjoint
    }
}

/// Everything one rule evaluation sees.
struct Scope {
    let context: RuleContext
    /// The rule's location: `base`, or its child `key`. Joined into one path only when the rule
    /// needs it (a lookup, `child()`, `parent()`): a validation below a write that only asks
    /// what newData's value is never builds it.
    let base: Path
    var key: String? = nil
    /// The values bound to the `$` variables of the rule's location and its ancestors,
    /// outermost first: compiled rules name them by position (`Code.wildcard`).
    let wildcards: [String]
    /// The new value at the location when the check already holds it.
    var newValue: Held = .unknown

    init(context: RuleContext, location: Path, key: String? = nil, wildcards: [String], newValue: Held = .unknown) {
        self.context = context
        base = location
        self.key = key
        self.wildcards = wildcards
        self.newValue = newValue
    }
}
