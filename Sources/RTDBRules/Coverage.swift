import RTDBCore
import Synchronization

/// How often each rule and subexpression was evaluated, and what it gave: the observer that
/// only counts. It keeps nothing: each loaded rule carries its counters, so the counts are
/// those of one rules set, and rules put anew start from zero. Counters are atomics, so the
/// checks of many threads count into them without a lock.
public final class Coverage: RulesObserver, Sendable {
    /// The counts of one rule or subexpression.
    public struct Counts: Sendable, Equatable {
        public var evaluations = 0
        public var trueCount = 0
        public var falseCount = 0
        public var errors = 0
    }

    /// One atomic add per count: the evaluations are the sum of the four outcomes, so the
    /// threads of a server contend for one counter per evaluation, not two.
    final class Counter: Sendable {
        let trues = Atomic<Int>(0)
        let falses = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        /// Values other than booleans.
        let others = Atomic<Int>(0)

        func count(_ outcome: Outcome) {
            switch outcome {
            case .bool(let b): count(RuleValue.bool(b))
            case .error: countError()
            case .value: others.add(1, ordering: .relaxed)
            }
        }

        /// What a counted evaluation gave (`Evaluator.counted`): no `Outcome` is made.
        func count(_ value: RuleValue) {
            switch value {
            case .bool(true): trues.add(1, ordering: .relaxed)
            case .bool(false): falses.add(1, ordering: .relaxed)
            default: others.add(1, ordering: .relaxed)
            }
        }

        func countError() { errors.add(1, ordering: .relaxed) }

        var counts: Counts {
            let t = trues.load(ordering: .relaxed), f = falses.load(ordering: .relaxed)
            let e = errors.load(ordering: .relaxed), o = others.load(ordering: .relaxed)
            return Counts(evaluations: t + f + e + o, trueCount: t, falseCount: f, errors: e)
        }

        func reset() {
            trues.store(0, ordering: .relaxed)
            falses.store(0, ordering: .relaxed)
            errors.store(0, ordering: .relaxed)
            others.store(0, ordering: .relaxed)
        }
    }

    /// The one counting observer: it keeps nothing itself, it counts into the counters each
    /// rule carries. Counts are the rule set's: a set put anew starts from zero.
    public static let counter = Coverage()

    private init() {}

    /// Counting needs no location: none is joined for it.
    public var observesLocations: Bool { false }
    public func begin(_ rule: RuleSet.Rule, at location: Path) {}
    public func enter(_ rule: RuleSet.Rule, _ expression: Int) {}
    public func leave(_ rule: RuleSet.Rule, _ expression: Int, _ outcome: Outcome) {
        rule.counters.expressions[expression].count(outcome)
    }
    public func end(_ rule: RuleSet.Rule, _ outcome: Outcome) { rule.counters.rule.count(outcome) }
}

/// A rule's counters: its own, and one per subexpression.
final class RuleCounters: Sendable {
    let rule = Coverage.Counter()
    let expressions: [Coverage.Counter]
    init(expressions n: Int) { expressions = (0..<n).map { _ in Coverage.Counter() } }
}

extension RuleSet {
    /// How often `rule` (or its subexpression `expression`) ran under `Coverage.counter`, and
    /// what it gave.
    public func counts(_ rule: Rule, _ expression: Int? = nil) -> Coverage.Counts {
        if let expression { return rule.counters.expressions[expression].counts }
        return rule.counters.rule.counts
    }

    /// Every count back to zero.
    public func resetCounts() {
        for r in rules {
            r.counters.rule.reset()
            r.counters.expressions.forEach { $0.reset() }
        }
    }
}
