import RTDBCore

/// Who makes a request: the admin bypasses rules; everyone else is checked
/// with `auth` = the token's claims object, or `null` when signed out.
public enum Principal: Sendable {
    case admin
    case user(auth: Node)
    case anonymous

    /// `auth` as rules see it.
    var authValue: RuleValue {
        if case .user(let node) = self { return RuleValue(auth: node) }
        return .null
    }
}

extension RuleSet {
    /// Whether a read is allowed: a `.read` that holds at the location or any ancestor grants
    /// the whole subtree; nothing below the location grants it.
    /// `observer`, when given, is told about every rule and subexpression evaluated.
    public func canRead(_ path: Path, principal: Principal, query: RuleQuery = RuleQuery(), now: Int64, data: RuleData,
                        observer: RulesObserver? = nil) -> Bool {
        if case .admin = principal { return true }
        let context = RuleContext(principal: principal, now: now, data: data, query: query, observer: observer)
        var node = root
        var wild: [String] = []
        var depth = 0
        while true {
            if let rule = node.read,
               Evaluator.allows(rule, Scope(context: context, location: RuleSet.prefix(path, depth), wildcards: wild)) {
                return true
            }
            guard depth < path.count else { return false }
            let key = path.keys[depth]
            guard let (next, binds) = node.match(key) else { return false }
            depth += 1
            if binds { wild.append(key) }
            node = next
        }
    }

    /// Whether a write is allowed, for every write of one operation, against the same
    /// data (its writes set as the new tree): each write needs a `.write` grant at or above its
    /// path, and every `.validate` on the chain and in the written subtree must hold where the
    /// new data is not null. All or nothing.
    public func canWrite(principal: Principal, now: Int64, data: RuleData, observer: RulesObserver? = nil) -> Bool {
        if case .admin = principal { return true }
        let context = RuleContext(principal: principal, now: now, data: data, observer: observer)
        for w in data.writes where !canWrite(w.path, w.value, context) { return false }
        return true
    }

    /// One write of the operation: `written` is its value at `path`. At and below `path` the
    /// new data is `written` and its children, handed down with the walk, unless another write
    /// reaches inside this one (`RuleContext.handsDown`); then each location is looked up.
    func canWrite(_ path: Path, _ written: Node, _ context: RuleContext) -> Bool {
        // Walk the chain root..path looking for a grant. A validation on the chain is checked
        // once a grant is found (all must hold in the end, so the order does not matter), the
        // ones above the grant when the walk is over.
        var node: TreeNode? = root
        var wild: [String] = []
        var granted = false
        var pending: [(rule: Rule, depth: Int, wild: [String])] = []
        var depth = 0
        while let n = node {
            if !granted, let rule = n.write {
                let scope = Scope(context: context, location: RuleSet.prefix(path, depth), wildcards: wild,
                                  newValue: depth == path.count && context.handsDown ? .known(written) : .unknown)
                granted = Evaluator.allows(rule, consume scope)
            }
            if let rule = n.validate {
                if !granted {
                    pending.append((rule, depth, wild))
                } else if !validates(rule, path, depth, written, wild, context) {
                    return false
                }
            }
            guard depth < path.count else { break }
            let key = path.keys[depth]
            guard let (next, binds) = n.match(key) else { node = nil; break }
            depth += 1
            if binds { wild.append(key) }
            node = next
        }
        guard granted else { return false }
        for p in pending where !validates(p.rule, path, p.depth, written, p.wild, context) { return false }
        // Descendants of the written location, following the new value and the rule tree.
        guard let last = node, !last.isLeaf else { return true }
        guard let value = context.handsDown ? written : try? context.data.after(path, priorities: false) else { return false }
        return validateBelow(last, value, path, wild, context)
    }

    /// Whether a `.validate` on the chain of a write to `path`, `depth` keys down, holds: on the
    /// merged new data there (the written value itself at the write's location), and trivially
    /// where that is null.
    private func validates(_ rule: Rule, _ path: Path, _ depth: Int, _ written: Node, _ wild: [String],
                           _ context: RuleContext) -> Bool {
        let location = RuleSet.prefix(path, depth)
        let atWrite = context.handsDown && depth == path.count
        guard let value = atWrite ? written : try? context.data.after(location, priorities: false) else { return false }
        if value.isNull { return true }
        let scope = Scope(context: context, location: location, wildcards: wild, newValue: atWrite ? .known(value) : .unknown)
        return Evaluator.allows(rule, consume scope)
    }

    private func validateBelow(_ node: TreeNode, _ value: Node, _ location: Path, _ wild: [String],
                               _ context: RuleContext) -> Bool {
        for entry in value.children {
            guard let (child, binds) = node.match(entry.key) else { continue }
            // A rule node with nothing to check here or below costs nothing.
            if child.validate == nil && child.isLeaf { continue }
            var w = wild
            if binds { w.append(entry.key) }
            if let rule = child.validate {
                let scope = Scope(context: context, location: location, key: entry.key, wildcards: w,
                                  newValue: context.handsDown ? .known(entry.node) : .unknown)
                if !Evaluator.allows(rule, consume scope) { return false }
            }
            if !child.isLeaf && !validateBelow(child, entry.node, location.appending(entry.key), w, context) { return false }
        }
        return true
    }

    /// The first `depth` keys of `path` (`path` itself when that is all of it).
    static func prefix(_ path: Path, _ depth: Int) -> Path {
        depth == path.count ? path : Path(validatedKeys: Array(path.keys[..<depth]))
    }

    /// The `.indexOn` entries of the rule node matching `path`.
    public func indexes(at path: Path) -> [String] {
        var node: TreeNode? = root
        for key in path.keys {
            guard let n = node, let (next, _) = n.match(key) else { return [] }
            node = next
        }
        return node?.indexOn ?? []
    }

    /// Firebase's 400 message when ordering by `index` (a child path, or `.value`) at `path`
    /// has no `.indexOn`; nil when it is declared.
    public func missingIndex(_ index: String, at path: Path) -> String? {
        let wanted = index == ".value" ? index
            : index.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        if indexes(at: path).contains(where: { KeyOrder.same($0, wanted) }) { return nil }
        return "Index not defined, add \".indexOn\": \"\(wanted)\", for path \"\(path)\", to the rules"
    }
}
