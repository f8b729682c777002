import RTDBCore
import Synchronization

/// How often each rule and subexpression of one rules document was evaluated, and what it gave:
/// an observer that only counts. Counters are atomics, so the checks of many threads count
/// into one report without a lock.
public final class Coverage: RulesObserver, Sendable {
    /// The counts of one rule or subexpression.
    public struct Counts: Sendable, Equatable {
        public var evaluations = 0
        public var trueCount = 0
        public var falseCount = 0
        public var errors = 0
    }

    final class Counter: Sendable {
        let evaluations = Atomic<Int>(0)
        let trues = Atomic<Int>(0)
        let falses = Atomic<Int>(0)
        let errors = Atomic<Int>(0)

        func count(_ outcome: Outcome) {
            evaluations.add(1, ordering: .relaxed)
            switch outcome {
            case .bool(true): trues.add(1, ordering: .relaxed)
            case .bool(false): falses.add(1, ordering: .relaxed)
            case .error: errors.add(1, ordering: .relaxed)
            case .value: break
            }
        }

        var counts: Counts {
            Counts(evaluations: evaluations.load(ordering: .relaxed), trueCount: trues.load(ordering: .relaxed),
                   falseCount: falses.load(ordering: .relaxed), errors: errors.load(ordering: .relaxed))
        }

        func reset() {
            evaluations.store(0, ordering: .relaxed)
            trues.store(0, ordering: .relaxed)
            falses.store(0, ordering: .relaxed)
            errors.store(0, ordering: .relaxed)
        }
    }

    /// Each rule's counter and its subexpressions', by the rule's identity.
    let counters: [ObjectIdentifier: (rule: Counter, expressions: [Counter])]
    public let ruleSet: RuleSet

    public init(_ rules: RuleSet) {
        ruleSet = rules
        var c: [ObjectIdentifier: (rule: Counter, expressions: [Counter])] = [:]
        for r in rules.rules { c[ObjectIdentifier(r)] = (Counter(), r.expressions.map { _ in Counter() }) }
        counters = c
    }

    public func begin(_ rule: RuleSet.Rule, at location: Path) {}
    public func enter(_ rule: RuleSet.Rule, _ expression: Int) {}
    public func leave(_ rule: RuleSet.Rule, _ expression: Int, _ outcome: Outcome) {
        counters[ObjectIdentifier(rule)]?.expressions[expression].count(outcome)
    }
    public func end(_ rule: RuleSet.Rule, _ outcome: Outcome) {
        counters[ObjectIdentifier(rule)]?.rule.count(outcome)
    }

    /// The counts of `rule`, or of its subexpression `expression`.
    public func counts(_ rule: RuleSet.Rule, _ expression: Int? = nil) -> Counts {
        guard let c = counters[ObjectIdentifier(rule)] else { return Counts() }
        if let expression { return c.expressions[expression].counts }
        return c.rule.counts
    }

    /// Every count back to zero.
    public func reset() {
        for c in counters.values {
            c.rule.reset()
            c.expressions.forEach { $0.reset() }
        }
    }
}
