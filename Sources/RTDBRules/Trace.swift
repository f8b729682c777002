import RTDBCore

/// An observer that keeps everything a check evaluated, in the order evaluation reached it:
/// each rule, then the subexpressions evaluated inside it (outer before inner), each with what
/// it gave. What `rules simulate` and `rules test` print.
public final class Trace: RulesObserver {
    public struct Entry: Sendable {
        public let rule: RuleSet.Rule
        /// The subexpression (an index into `rule.expressions`); nil for the rule as a whole.
        public let expression: Int?
        /// Where the rule was evaluated (for the rule's own entry).
        public let location: Path
        /// What it gave (nil only while it is being evaluated).
        public internal(set) var outcome: Outcome?
        /// How many entries enclose it (0 for a rule).
        public let depth: Int

        /// Where the rule or subexpression lies in the file.
        public var range: SourceRange { expression.map { rule.expressions[$0].range } ?? rule.range }
        /// Its text.
        public var text: String { expression.map { rule.expressions[$0].text } ?? rule.text }
    }

    public private(set) var entries: [Entry] = []
    /// The entries begun and not yet ended, innermost last.
    private var open: [Int] = []

    public init() {}

    public func begin(_ rule: RuleSet.Rule, at location: Path) {
        open.append(entries.count)
        entries.append(Entry(rule: rule, expression: nil, location: location, outcome: nil, depth: 0))
    }

    public func enter(_ rule: RuleSet.Rule, _ expression: Int) {
        let location = open.last.map { entries[$0].location } ?? .root
        open.append(entries.count)
        entries.append(Entry(rule: rule, expression: expression, location: location, outcome: nil, depth: open.count - 1))
    }

    public func leave(_ rule: RuleSet.Rule, _ expression: Int, _ outcome: Outcome) { close(outcome) }
    public func end(_ rule: RuleSet.Rule, _ outcome: Outcome) { close(outcome) }

    private func close(_ outcome: Outcome) {
        guard let i = open.popLast() else { return }
        entries[i].outcome = outcome
    }

    /// The rule that decided the check that was `allowed`: the first `.read` or `.write` that
    /// granted it; for a denial, the last rule evaluated (the `.validate` that failed, or the
    /// deepest grant that did not hold). Nil when no rule was evaluated (nothing grants
    /// access, or the admin needs none).
    public func decidingEntry(allowed: Bool) -> Entry? {
        let rules = entries.filter { $0.expression == nil }
        if allowed { return rules.first { $0.rule.kind != .validate && $0.outcome == .bool(true) } }
        return rules.last
    }
}

extension RuleSet {
    /// Every rule of the document, in the document's order.
    public var rules: [Rule] {
        var out: [Rule] = []
        func walk(_ node: TreeNode) {
            for r in [node.read, node.write, node.validate].compactMap({ $0 }) { out.append(r) }
            for c in node.children { walk(c.node) }
            if let w = node.wildcard { walk(w.node) }
        }
        walk(root)
        // In file order: where each was written.
        return out.sorted { ($0.range.start.line, $0.range.start.column) < ($1.range.start.line, $1.range.start.column) }
    }
}
