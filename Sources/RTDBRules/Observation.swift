import RTDBCore

/// A stretch of the rules file: `start` is its first character, `end` the position just past
/// its last (lines and columns from 1, columns counting Unicode scalars, as `rules check`
/// reports them).
public struct SourceRange: Sendable, Equatable {
    public var start: Position
    public var end: Position
    public init(start: Position, end: Position) {
        self.start = start
        self.end = end
    }
}

/// One subexpression of a rule that an observed evaluation reports: its place in the file and
/// its text. Literals and the bare `data`, `newData` and `root` are not reported (they only
/// ever give what they say).
public struct RuleExpression: Sendable {
    public let range: SourceRange
    public let text: String
}

/// What evaluating a rule or a subexpression gave.
public enum Outcome: Sendable, Equatable, CustomStringConvertible {
    case bool(Bool)
    /// Any other value (its JSON made only when asked for: counting needs none).
    case value(Value)
    /// A runtime error: the whole rule counts as false.
    case error

    /// A value other than a boolean.
    public struct Value: Sendable, Equatable {
        let value: RuleValue

        /// As JSON: a snapshot as `"snapshot /path"`, the value of a node with children as
        /// `"object"`, NaN and the infinities as their JavaScript text in a string.
        public var json: String {
            switch value {
            case .bool(let b): return String(b)
            case .null: return "null"
            case .number(let n): return n.isFinite ? JSONWriter.format(n) : JSONWriter.string(.string(Evaluator.numberText(n)))
            case .string(let s): return JSONWriter.string(.string(s))
            case .object(let node): return JSONWriter.string(node)
            case .opaque: return "\"object\""
            case .snapshot(let snap): return JSONWriter.string(.string("snapshot " + snap.path.description))
            }
        }

        public static func == (a: Value, b: Value) -> Bool { a.json == b.json }
    }

    init(_ v: RuleValue) {
        if case .bool(let b) = v { self = .bool(b) } else { self = .value(Value(value: v)) }
    }

    public var description: String {
        switch self {
        case .bool(let b): return "bool(\(b))"
        case .value(let v): return "value(\(String(reflecting: v.json)))"
        case .error: return "error"
        }
    }
}

/// Told about every rule and subexpression a check evaluates, in order, when a check is given
/// one (`RuleSet.canRead`/`canWrite`'s `observer`). A check without one evaluates code with no
/// marks in it and never looks for an observer below the rule: observing costs nothing unless
/// asked for.
public protocol RulesObserver: AnyObject {
    /// `rule` is about to be evaluated at `location`.
    func begin(_ rule: RuleSet.Rule, at location: Path)
    /// Subexpression `expression` (an index into `rule.expressions`) is about to be evaluated.
    func enter(_ rule: RuleSet.Rule, _ expression: Int)
    /// …and gave `outcome`. Calls nest: each `enter` is closed by the `leave` of the same one.
    func leave(_ rule: RuleSet.Rule, _ expression: Int, _ outcome: Outcome)
    /// `rule` gave `outcome` (anything but `true` denies).
    func end(_ rule: RuleSet.Rule, _ outcome: Outcome)
    /// Whether `begin` needs the location (false: it is given the root, and no path is made).
    var observesLocations: Bool { get }
}

extension RulesObserver {
    public var observesLocations: Bool { true }
}

extension Evaluator {
    /// Evaluates `rule` reporting to `observer`: its marked code, every mark a report.
    static func observed(_ rule: RuleSet.Rule, _ scope: consuming Scope, _ observer: RulesObserver) -> Bool {
        let location = observer.observesLocations ? scope.key.map { scope.base.appending($0) } ?? scope.base : Path.root
        observer.begin(rule, at: location)
        var e = Evaluator(scope: scope)
        e.report = .observer(observer, rule)
        let outcome: Outcome
        do { outcome = Outcome(try e.eval(rule.traced)) } catch { outcome = .error }
        observer.end(rule, outcome)
        return outcome == .bool(true)
    }

    /// Evaluates `rule` counting what it and each marked subexpression give into the rule's
    /// counters: what `Coverage.counter` would count, without a call through the protocol.
    static func counted(_ rule: RuleSet.Rule, _ scope: consuming Scope) -> Bool {
        var e = Evaluator(scope: scope)
        e.report = .counting(rule.counters)
        let v: RuleValue
        do { v = try e.eval(rule.traced) } catch {
            rule.counters.rule.countError()
            return false
        }
        rule.counters.rule.count(v)
        if case .bool(true) = v { return true }
        return false
    }

    /// A marked subexpression: reported around its evaluation. The mark itself is no step of
    /// the budget, so an observed check runs out of steps exactly where an unobserved one does.
    mutating func mark(_ id: Int, _ code: Code) throws -> RuleValue {
        steps -= 1
        switch report {
        case .none:
            return try eval(code)
        case .counting(let counters):
            let counter = counters.expressions[id]
            do {
                let v = try eval(code)
                counter.count(v)
                return v
            } catch {
                counter.countError()
                throw error
            }
        case .observer(let observer, let rule):
            observer.enter(rule, id)
            do {
                let v = try eval(code)
                observer.leave(rule, id, Outcome(v))
                return v
            } catch {
                observer.leave(rule, id, .error)
                throw error
            }
        }
    }
}

/// Where an evaluation of traced code reports each mark.
enum MarkReport {
    case none
    case counting(RuleCounters)
    case observer(RulesObserver, RuleSet.Rule)
}

/// Collects, while a rule compiles with marks, the byte range of each marked subexpression.
final class MarkTable {
    var ranges: [(start: Int, end: Int)] = []

    /// `code` compiled from `s`, marked unless it is a literal or a bare snapshot name.
    func mark(_ code: Code, _ s: Syntax) -> Code {
        switch code {
        case .constant, .childKeys, .data, .newData, .root: return code
        default:
            ranges.append((s.start, s.end))
            return .mark(ranges.count - 1, code)
        }
    }
}
