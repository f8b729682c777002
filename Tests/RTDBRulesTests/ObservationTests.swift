import Testing
import RTDBCore
@testable import RTDBRules

/// Observed checks: where each rule and subexpression lies in the file, and what an observer
/// is told as a check evaluates them.
@Suite("Rules: observed evaluation")
struct ObservationTests {
    static let users = """
    {
      "rules": {
        "users": {
          "$uid": {
            ".write": "auth != null && auth.uid === $uid",
            ".validate": "newData.child(\\"name\\").isString()"
          }
        }
      }
    }
    """

    static func alice() -> Principal { .user(auth: .object([Node.Entry("uid", .string("alice"))])) }

    /// Checks a write of `json` at `path` by `principal` on empty data, with a trace.
    static func write(_ rules: RuleSet, _ path: String, _ json: String, _ principal: Principal) throws -> (Bool, Trace) {
        let data = RuleData(read: { _ in .null })
        data.setWrites([(try Path(path), try JSONReader.parse(json))])
        let trace = Trace()
        let allowed = rules.canWrite(principal: principal, now: 0, data: data, observer: trace)
        let plain = RuleData(read: { _ in .null })
        plain.setWrites(data.writes)
        #expect(rules.canWrite(principal: principal, now: 0, data: plain) == allowed)
        return (allowed, trace)
    }

    @Test("each rule and subexpression has its line and column range in the file, escapes counted whole")
    func ranges() throws {
        let rules = try RuleSet(Self.users)
        let write = try #require(rules.rules.first { $0.label == "rules/users/$uid/.write" })
        #expect(write.range == SourceRange(start: Position(line: 5, column: 20), end: Position(line: 5, column: 53)))
        let texts = write.expressions.map(\.text)
        #expect(texts == ["auth", "auth != null", "auth", "auth.uid", "$uid", "auth.uid === $uid", "auth != null && auth.uid === $uid"])
        #expect(write.expressions[1].range == SourceRange(start: Position(line: 5, column: 20), end: Position(line: 5, column: 32)))
        #expect(write.expressions[4].range == SourceRange(start: Position(line: 5, column: 49), end: Position(line: 5, column: 53)))
        let validate = try #require(rules.rules.first { $0.kind == .validate })
        #expect(validate.label == "rules/users/$uid/.validate")
        // `\"name\"` is 8 characters of the file for 6 bytes of the expression.
        #expect(validate.range == SourceRange(start: Position(line: 6, column: 23), end: Position(line: 6, column: 57)))
        #expect(validate.expressions.last?.text == #"newData.child("name").isString()"#)
        #expect(rules.rules.map(\.label) == ["rules/users/$uid/.write", "rules/users/$uid/.validate"])
    }

    @Test("a boolean rule's range is its literal")
    func booleanRule() throws {
        let rules = try RuleSet("{\"rules\": {\".read\": true}}")
        let read = try #require(rules.rules.first)
        #expect(read.range == SourceRange(start: Position(line: 1, column: 21), end: Position(line: 1, column: 25)))
        #expect(read.expressions.isEmpty)
    }

    @Test("an observer is told every rule and subexpression in evaluation order, with its value")
    func order() throws {
        let rules = try RuleSet(Self.users)
        let (allowed, trace) = try Self.write(rules, "/users/alice", #"{"name":"Alice"}"#, Self.alice())
        #expect(allowed)
        let seen = trace.entries.map { "\($0.depth) \($0.text) = \($0.outcome.map(String.init(describing:)) ?? "?")" }
        #expect(seen == [
            "0 auth != null && auth.uid === $uid = bool(true)",
            "1 auth != null && auth.uid === $uid = bool(true)",
            "2 auth != null = bool(true)",
            "3 auth = value(\"{\\\"uid\\\":\\\"alice\\\"}\")",
            "2 auth.uid === $uid = bool(true)",
            "3 auth.uid = value(\"\\\"alice\\\"\")",
            "4 auth = value(\"{\\\"uid\\\":\\\"alice\\\"}\")",
            "3 $uid = value(\"\\\"alice\\\"\")",
            #"0 newData.child("name").isString() = bool(true)"#,
            #"1 newData.child("name").isString() = bool(true)"#,
            #"2 newData.child("name") = value("\"snapshot /users/alice/name\"")"#,
        ])
        #expect(trace.entries[0].location.description == "/users/alice")
        #expect(trace.decidingEntry(allowed: true)?.rule.kind == .write)
    }

    @Test("a short circuit leaves the rest unevaluated; a runtime error is reported as one; the last rule evaluated decides a denial")
    func denial() throws {
        let rules = try RuleSet(Self.users)
        let (allowed, trace) = try Self.write(rules, "/users/alice", #"{"name":"Alice"}"#, .anonymous)
        #expect(!allowed)
        #expect(trace.entries.map(\.text) == ["auth != null && auth.uid === $uid", "auth != null && auth.uid === $uid", "auth != null", "auth"])
        #expect(trace.entries.map { $0.outcome.map(String.init(describing:)) } == ["bool(false)", "bool(false)", "bool(false)", #"value("null")"#])
        #expect(trace.decidingEntry(allowed: false)?.rule.label == "rules/users/$uid/.write")

        let (validated, failed) = try Self.write(rules, "/users/alice", #"{"name":5}"#, Self.alice())
        #expect(!validated)
        #expect(failed.decidingEntry(allowed: false)?.rule.kind == .validate)

        let erring = try RuleSet(#"{"rules":{".read":"auth.uid.length > 0 || true"}}"#)
        let trace2 = Trace()
        #expect(!erring.canRead(.root, principal: .anonymous, now: 0, data: RuleData(read: { _ in .null }), observer: trace2))
        #expect(trace2.entries.first?.outcome == .error)
        #expect(trace2.entries.first { $0.text == "auth.uid.length > 0" }?.outcome == .error)
        // `|| true` never ran: the error ended the whole rule.
        #expect(!trace2.entries.contains { $0.expression != nil && $0.text == "true" })
    }

    @Test("no observer, no report: the admin and reads without a rule evaluate nothing")
    func nothingEvaluated() throws {
        let rules = try RuleSet(Self.users)
        let trace = Trace()
        #expect(!rules.canRead(try Path("/users/alice"), principal: Self.alice(), now: 0, data: RuleData(read: { _ in .null }), observer: trace))
        #expect(trace.entries.isEmpty)
        #expect(trace.decidingEntry(allowed: false) == nil)
    }
}

extension ObservationTests {
    @Test("a parenthesised operand's text takes its parentheses in, so the expression around it ends at the closing one")
    func parentheses() throws {
        let rules = try RuleSet(#"{"rules":{".read":"auth != null && (auth.uid == 'a' || now > 0)"}}"#)
        let read = try #require(rules.rules.first)
        #expect(read.expressions.last?.text == "auth != null && (auth.uid == 'a' || now > 0)")
        #expect(read.expressions.contains { $0.text == "(auth.uid == 'a' || now > 0)" })
        #expect(read.expressions.last?.range.end == Position(line: 1, column: 64))
    }
}

import Foundation

extension ObservationTests {
    @Test("coverage counts every evaluation of each rule and subexpression, exactly, from many threads at once; a reset starts again")
    func coverage() throws {
        let rules = try RuleSet(Self.users)
        let write = try #require(rules.rules.first { $0.kind == .write })
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let data = RuleData(read: { _ in .null })
            data.setWrites([(Path(validatedKeys: ["users", "alice"]), .object([Node.Entry("name", .string("A"))]))])
            _ = rules.canWrite(principal: i % 4 == 0 ? .anonymous : Self.alice(), now: 0, data: data, observer: Coverage.counter)
        }
        #expect(rules.counts(write) == Coverage.Counts(evaluations: 400, trueCount: 300, falseCount: 100, errors: 0))
        // `auth.uid === $uid` ran only where `auth != null` held.
        #expect(rules.counts(write, 5) == Coverage.Counts(evaluations: 300, trueCount: 300, falseCount: 0, errors: 0))
        // Values that are not booleans count as evaluations only (the first `auth`, then the
        // one in `auth.uid`).
        #expect(rules.counts(write, 0) == Coverage.Counts(evaluations: 400, trueCount: 0, falseCount: 0, errors: 0))
        #expect(rules.counts(write, 2) == Coverage.Counts(evaluations: 300, trueCount: 0, falseCount: 0, errors: 0))
        rules.resetCounts()
        #expect(rules.counts(write) == Coverage.Counts())
        // Another set of the same text counts on its own.
        #expect(try RuleSet(Self.users).counts(try #require(RuleSet(Self.users).rules.first)) == Coverage.Counts())
    }
}

extension ObservationTests {
    /// Forwards to `Coverage.counter` through the protocol: what the counted path must match.
    final class Forwarding: RulesObserver {
        var observesLocations: Bool { false }
        func begin(_ rule: RuleSet.Rule, at location: Path) { Coverage.counter.begin(rule, at: location) }
        func enter(_ rule: RuleSet.Rule, _ expression: Int) { Coverage.counter.enter(rule, expression) }
        func leave(_ rule: RuleSet.Rule, _ expression: Int, _ outcome: RTDBRules.Outcome) { Coverage.counter.leave(rule, expression, outcome) }
        func end(_ rule: RuleSet.Rule, _ outcome: RTDBRules.Outcome) { Coverage.counter.end(rule, outcome) }
    }

    @Test("counting without the observer protocol gives every rule and subexpression the counts the protocol gives, errors and values included")
    func countedMatchesObserved() throws {
        let text = """
        {"rules":{"users":{"$uid":{
          ".read": "auth.uid.length > 2 || data.child('public').val() == true",
          ".write": "auth != null && (auth.uid === $uid || auth.token.admin == true)",
          ".validate": "newData.hasChildren(['name']) && newData.child('name').val().length < 10",
          "age": {".validate": "newData.isNumber() && newData.val() >= 0"}
        }}}}
        """
        let counted = try RuleSet(text), observed = try RuleSet(text)
        let principals: [Principal] = [
            .anonymous, Self.alice(),
            .user(auth: .object([Node.Entry("uid", .string("bo")), Node.Entry("token", .object([Node.Entry("admin", .bool(true))]))])),
        ]
        let values = [#"{"name":"Al"}"#, #"{"name":"Alexander the Great"}"#, #"{"name":"A","age":-1}"#,
                      #"{"name":"A","age":3}"#, #"{"age":3}"#, #"{"name":5}"#]
        let stored = RuleData(read: { $0.keys.last == "public" ? .bool(true) : .null })
        for (i, principal) in principals.enumerated() {
            for (j, json) in values.enumerated() {
                let path = try Path(j % 2 == 0 ? "/users/alice" : "/users/bo")
                for (rules, observer) in [(counted, Coverage.counter as RulesObserver), (observed, Forwarding())] {
                    let data = RuleData(read: { _ in .null })
                    data.setWrites([(path, try JSONReader.parse(json))])
                    _ = rules.canWrite(principal: principal, now: Int64(i), data: data, observer: observer)
                    _ = rules.canRead(path, principal: principal, now: 0, data: stored, observer: observer)
                }
            }
        }
        var checked = 0
        for (a, b) in zip(counted.rules, observed.rules) {
            #expect(counted.counts(a) == observed.counts(b), "\(a.label)")
            for e in a.expressions.indices {
                #expect(counted.counts(a, e) == observed.counts(b, e), "\(a.label) \(a.expressions[e].text)")
                checked += counted.counts(a, e).evaluations
            }
        }
        // Every kind of outcome was counted somewhere, so the comparison covers each.
        let all = counted.rules.flatMap { r in r.expressions.indices.map { counted.counts(r, $0) } + [counted.counts(r)] }
        #expect(all.contains { $0.errors > 0 } && all.contains { $0.trueCount > 0 } && all.contains { $0.falseCount > 0 })
        #expect(all.contains { $0.evaluations > $0.trueCount + $0.falseCount + $0.errors })
        #expect(checked > 100)
    }
}
