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
    public func canRead(_ path: Path, principal: Principal, query: RuleQuery = RuleQuery(), now: Int64, data: RuleData) -> Bool {
        if case .admin = principal { return true }
        var node: TreeNode? = root
        var wild: [(name: String, value: String)] = []
        var location = Path.root
        var depth = 0
        while let n = node {
            if let rule = n.read {
                let scope = Scope(auth: principal.authValue, now: Double(now), data: data, query: query,
                                  location: location, wildcards: wild)
                if Evaluator.allows(rule.code, scope) { return true }
            }
            guard depth < path.count else { break }
            let key = path.keys[depth]
            depth += 1
            location = location.appending(key)
            guard let (next, binding) = n.match(key) else { break }
            if let binding { wild.append(binding) }
            node = next
        }
        return false
    }

    /// Whether a write is allowed, for every write of one operation, against the same
    /// data (its writes set as the new tree): each write needs a `.write` grant at or above its
    /// path, and every `.validate` on the chain and in the written subtree must hold where the
    /// new data is not null. All or nothing.
    public func canWrite(principal: Principal, now: Int64, data: RuleData) -> Bool {
        if case .admin = principal { return true }
        for w in data.writes where !canWrite(w.path, principal: principal, now: now, data: data) { return false }
        return true
    }

    func canWrite(_ path: Path, principal: Principal, now: Int64, data: RuleData) -> Bool {
        let auth = principal.authValue
        let time = Double(now)
        func scope(_ location: Path, _ wild: [(name: String, value: String)]) -> Scope {
            Scope(auth: auth, now: time, data: data, query: RuleQuery(), location: location, wildcards: wild)
        }
        // Walk the chain root..path: look for a grant, collect the validations.
        var node: TreeNode? = root
        var wild: [(name: String, value: String)] = []
        var location = Path.root
        var granted = false
        var chain: [(node: TreeNode, location: Path, wild: [(name: String, value: String)])] = []
        var depth = 0
        while let n = node {
            chain.append((n, location, wild))
            if !granted, let rule = n.write, Evaluator.allows(rule.code, scope(location, wild)) { granted = true }
            guard depth < path.count else { break }
            let key = path.keys[depth]
            depth += 1
            location = location.appending(key)
            guard let (next, binding) = n.match(key) else { node = nil; break }
            if let binding { wild.append(binding) }
            node = next
        }
        guard granted else { return false }
        // Ancestors (and the location itself) are validated on the merged new data.
        for (n, loc, w) in chain {
            guard let rule = n.validate else { continue }
            guard let value = try? data.new(loc) else { return false }
            if value.isNull { continue }
            if !Evaluator.allows(rule.code, scope(loc, w)) { return false }
        }
        // Descendants of the written location, following the new value and the rule tree.
        guard node != nil, chain.count == path.count + 1, let last = chain.last else { return true }
        guard let value = try? data.new(path) else { return false }
        return validateBelow(last.node, value, path, last.wild, scope)
    }

    private func validateBelow(_ node: TreeNode, _ value: Node, _ location: Path,
                               _ wild: [(name: String, value: String)],
                               _ scope: (Path, [(name: String, value: String)]) -> Scope) -> Bool {
        if node.children.isEmpty && node.wildcard == nil { return true }
        for entry in value.children {
            guard let (child, binding) = node.match(entry.key) else { continue }
            let loc = location.appending(entry.key)
            var w = wild
            if let binding { w.append(binding) }
            if let rule = child.validate, !Evaluator.allows(rule.code, scope(loc, w)) { return false }
            if !validateBelow(child, entry.node, loc, w, scope) { return false }
        }
        return true
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
