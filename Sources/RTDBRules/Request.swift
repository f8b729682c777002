import RTDBCore

/// One request as the rules judge it: what `serve` checks for a REST or realtime request, and
/// what `rules simulate` and `rules test` describe.
public enum RuleRequest: Sendable {
    case read(Path, RuleQuery)
    /// The writes of one operation at full paths, server values not yet resolved: all
    /// allowed or none.
    case write([(path: Path, value: Node)])

    public static func set(_ path: Path, _ value: Node) -> RuleRequest { .write([(path, value)]) }
    /// A multi-path update at `path`: its members' paths relative to it.
    public static func update(_ path: Path, _ members: [(path: Path, value: Node)]) -> RuleRequest {
        .write(members.map { (path.appending($0.path), $0.value) })
    }
    public static func remove(_ path: Path) -> RuleRequest { .write([(path, .null)]) }
}

extension RuleSet {
    /// Whether `principal` may make `request` on `data` at `now` (ms): a read by `canRead`; a
    /// write with its server values resolved at `now` against the stored data, then all its
    /// writes checked against one new tree by `canWrite`, as `serve` does. Changes nothing.
    /// Returns the resolved writes too (what would be written).
    public func decide(_ request: RuleRequest, principal: Principal, now: Int64, data: RuleData,
                       observer: RulesObserver? = nil) throws -> (allowed: Bool, writes: [(path: Path, value: Node)]) {
        let writes: [(path: Path, value: Node)]
        switch request {
        case .read(let path, let query):
            return (canRead(path, principal: principal, query: query, now: now, data: data, observer: observer), [])
        case .write(let w): writes = w
        }
        let resolved = try writes.map {
            (path: $0.path, value: try ServerValues.resolve($0.value, at: $0.path, now: now, existing: { try data.old($0) }))
        }
        data.setWrites(resolved)
        return (canWrite(principal: principal, now: now, data: data, observer: observer), resolved)
    }
}

extension RuleQuery {
    /// The query of a REST read's parameters (`orderBy`, `startAt`, `endAt`, `equalTo`,
    /// `limitToFirst`, `limitToLast`; `parameter` answers each one's text, nil when absent),
    /// as rules see it. A bound that is not JSON is the string it spells.
    public init(parameters parameter: (String) -> String?) {
        self.init()
        func value(_ name: String) -> Node? {
            guard let text = parameter(name) else { return nil }
            if let v = try? JSONReader.parse(text) { return v }
            return .string(text)
        }
        if case .string(let order)? = value("orderBy") {
            orderByKey = order == "$key"
            orderByValue = order == "$value"
            orderByPriority = order == "$priority"
            if !order.hasPrefix("$") {
                orderByChild = order.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
            }
        }
        startAt = value("startAt")
        endAt = value("endAt")
        equalTo = value("equalTo")
        if let t = parameter("limitToFirst") { limitToFirst = Int(t) }
        if let t = parameter("limitToLast") { limitToLast = Int(t) }
    }
}
