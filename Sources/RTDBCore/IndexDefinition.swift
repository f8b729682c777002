/// A persistent index: the children of every location matching `pattern` (keys, or `$name`
/// wildcards as in `.indexOn` rules), ordered by the value of `child` in them (`nil`: by their
/// own value).
public struct IndexDefinition: Sendable, Equatable {
    /// The location's segments; a segment starting with `$` matches any key.
    public var pattern: [String]
    /// The child path the children are ordered by; nil orders them by value.
    public var child: Path?

    public init(pattern: [String], child: Path?) {
        self.pattern = pattern
        self.child = child
    }

    /// Parses a location pattern (`/rooms/$room/messages`) and a child (`score`, `a/b`, or
    /// `.value`), with the error a user should see when either is not valid.
    public init(location: String, child: String) throws {
        var segs: [String] = []
        for seg in location.split(separator: "/", omittingEmptySubsequences: true).map(String.init) {
            if seg.hasPrefix("$") {
                let name = String(seg.dropFirst())
                if name.isEmpty || Limits.keyProblem(name) != nil {
                    throw RTDBError(.invalidPath, "invalid index location \(Limits.quote(location)): \(Limits.quote(seg)) is not a valid wildcard")
                }
            } else if let problem = Limits.keyProblem(seg) {
                throw RTDBError(.invalidPath, "invalid index location \(Limits.quote(location)): \(problem)")
            }
            segs.append(seg)
        }
        if segs.count > Limits.maxDepth {
            throw RTDBError(.tooDeep, "index location \(Limits.quote(location)) is more than \(Limits.maxDepth) levels deep")
        }
        pattern = segs
        if child == ".value" {
            self.child = nil
        } else {
            let p = try Path(child)
            if p.isRoot { throw RTDBError(.invalidPath, "an index needs a child path, or .value") }
            if p.isPriority { throw RTDBError(.invalidPath, "an index cannot order by .priority (priority order needs no index)") }
            self.child = p
        }
    }

    public static func == (a: IndexDefinition, b: IndexDefinition) -> Bool {
        a.pattern == b.pattern && a.child?.keys == b.child?.keys
    }

    /// The location as written in `.indexOn` style: `/rooms/$room/messages`.
    public var location: String { "/" + pattern.joined(separator: "/") }
    /// The child as given: `a/b`, or `.value`.
    public var childText: String { child.map { $0.unrooted } ?? ".value" }

    public func matches(_ path: Path) -> Bool {
        path.count == pattern.count && matchesPrefix(path.keys[...])
    }

    /// True when the keys match the first keys of the pattern.
    public func matchesPrefix(_ keys: ArraySlice<String>) -> Bool {
        if keys.count > pattern.count { return false }
        for (p, k) in zip(pattern, keys) where !p.hasPrefix("$") && !KeyOrder.same(p, k) { return false }
        return true
    }
}
