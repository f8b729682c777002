import Testing
import RTDBCore
@testable import RTDBRules

/// A rules document whose root `.read` is `expression`.
func readRule(_ expression: String) -> String { "{\"rules\":{\".read\":" + quote(expression) + "}}" }

/// Whether `rules` let `auth` (nil: signed out) read `path` of `data`.
func reads(_ rules: RuleSet, auth: Node? = nil, data: Node = .null, path: String = "/") -> Bool {
    let principal: Principal = auth.map { .user(auth: $0) } ?? .anonymous
    let p = (try? Path(path)) ?? .root
    return rules.canRead(p, principal: principal, now: 1_700_000_000_000, data: RuleData(read: { data.child(at: $0) }))
}

func uid(_ id: String) -> Node { (try? JSONReader.parse("{\"uid\":\"\(id)\"}")) ?? .null }

/// `term(i)` for i in 0..<n, joined by `op`.
func chain(_ n: Int, _ op: String, _ term: (Int) -> String) -> String {
    (0..<n).map(term).joined(separator: " \(op) ")
}

/// The problems of loading `text`, on a small stack.
func problemsOnSmallStack(_ text: String) -> [String]? {
    onStack(of: smallStack) { problems(text) }
}

@Suite("Rules: long chains stay flat, deep nesting has a limit")
struct NestingLimitTests {
    /// Where a `.read` expression starts in `readRule`'s document: `{"rules":{".read":"` is 19 bytes.
    static let column = 20

    @Test("a 100,000-term || chain loads and is evaluated, stopping at the first true term")
    func longOr() throws {
        let text = chain(100_000, "||") { "auth.uid == 'u\($0)'" }
        let outcomes = onStack(of: smallStack) { () -> [Bool]? in
            guard let rules = try? RuleSet(readRule(text)) else { return nil }
            return [reads(rules, auth: uid("u0")), reads(rules, auth: uid("u1000")), reads(rules, auth: uid("nobody")),
                    reads(rules)]
        }
        #expect(outcomes == [true, true, false, false])
        // Short circuit: every term after the first fails at run time (a comparison with null),
        // which would make the rule false if it were evaluated.
        let guarded = "auth.uid == 'u0' || " + chain(99_999, "||") { _ in "auth.missing.length > 0" }
        let rules = try RuleSet(readRule(guarded))
        #expect(reads(rules, auth: uid("u0")))
        #expect(!reads(rules, auth: uid("u1")))
        // The step budget still bounds the work: a term past it (five steps a term) is not reached.
        let long = try RuleSet(readRule(text))
        #expect(!reads(long, auth: uid("u99999")))
    }

    @Test("a 100,000-term && chain loads and is evaluated, stopping at the first false term")
    func longAnd() throws {
        let text = chain(100_000, "&&") { "auth.uid != 'x\($0)'" }
        let rules = try RuleSet(readRule(text))
        #expect(!reads(rules, auth: uid("x0")))
        #expect(!reads(rules, auth: uid("x77")))
        // Every term true: the chain is evaluated to its end when that fits the step budget …
        let short = try RuleSet(readRule(chain(10_000, "&&") { "auth.uid != 'x\($0)'" }))
        #expect(reads(short, auth: uid("me")))
        #expect(!reads(short, auth: uid("x9999")))
        // … and denied, not crashed, when it does not.
        #expect(!reads(rules, auth: uid("me")))
        // Short circuit: the failing terms after a false one are never evaluated.
        let guarded = "!(auth.uid != 'x0' && " + chain(99_999, "&&") { _ in "auth.missing.length > 0" } + ")"
        let outcome = onStack(of: smallStack) { () -> Bool? in
            guard let rules = try? RuleSet(readRule(guarded)) else { return nil }
            return reads(rules, auth: uid("x0"))
        }
        #expect(outcome == true)
    }

    @Test("long chains of the other operators fold left to right, as the nested tree would")
    func otherChains() throws {
        let sum = chain(50_000, "+") { _ in "1" } + " == 50000"
        #expect(reads(try RuleSet(readRule(sum))))
        let difference = "100 - " + chain(99, "-") { _ in "1" } + " == 1"
        #expect(reads(try RuleSet(readRule(difference))))
        #expect(reads(try RuleSet(readRule("'a' + 1 + 2 == 'a12' && 1 + 2 + 'a' == '3a'"))))
        #expect(reads(try RuleSet(readRule("2 * 3 * 4 / 8 % 2 == 1 && 1 + 2 * 3 - 4 / 2 == 5"))))
        #expect(reads(try RuleSet(readRule("1 == 1 == true != false"))))
        // 100,000 terms of each level load and evaluate without a crash.
        for op in ["+", "*", "==", "!="] {
            let text = "(" + chain(100_000, op) { _ in "1" } + ") != null"
            let outcome = onStack(of: smallStack) { () -> Bool? in
                guard let rules = try? RuleSet(readRule(text)) else { return nil }
                return reads(rules)
            }
            #expect(outcome != nil, "\(op)")
        }
        // A chain's type errors are where the nested tree put them.
        #expect(problems(readRule("1 + 2 + 3 || true")) == ["1:\(NestingLimitTests.column + 6): || only operates on booleans."])
        #expect(problems(readRule("true || true || 3")) == ["1:\(NestingLimitTests.column + 16): || only operates on booleans."])
        #expect(problems(readRule("1 < 2 < 3")) == ["1:\(NestingLimitTests.column + 6): Invalid < expression: left operand is not a number or string."])
        #expect(problems(readRule("1 + 2 + 3")) == ["1:\(NestingLimitTests.column + 6): Expression must evaluate to a boolean."])
    }

    /// Expressions nested `n` levels, each in its own way, and whether the deepest allowed one
    /// lets `{"uid":"a","a":"a"}` read (`signedIn`), or a signed-out client.
    static let shapes: [(name: String, levels: @Sendable (Int) -> String, signedIn: Bool, allows: Bool)] = [
        ("!", { String(repeating: "!", count: $0) + "true" }, true, true),
        ("()", { String(repeating: "(", count: $0) + "true" + String(repeating: ")", count: $0) }, true, true),
        ("?:", { String(repeating: "true ? ", count: $0) + "true" + String(repeating: " : false", count: $0) }, true, true),
        (".", { "auth" + String(repeating: ".a", count: $0 - 1) + " == null" }, false, true),
        ("[]", { String(repeating: "auth[", count: $0 - 1) + "'a'" + String(repeating: "]", count: $0 - 1) + " != null" }, true, true),
        // The data's 32 levels end the walk down with a rule failure, after the whole chain is walked.
        ("child()", { "root" + String(repeating: ".child('a')", count: ($0 - 1) / 2) + ".exists()" }, true, false),
        ("[[]]", { "root.hasChildren(" + String(repeating: "[", count: $0 - 1) + "'a'" + String(repeating: "]", count: $0 - 1) + ")" }, true, false),
    ]

    @Test("every kind of nesting works at the limit, on a 512 KB stack")
    func atTheLimit() {
        let auth = try? JSONReader.parse(#"{"uid":"a","a":"a"}"#)
        for shape in NestingLimitTests.shapes {
            let text = shape.levels(Nesting.expressionLimit)
            let outcome = onStack(of: smallStack) { () -> [String] in
                guard let rules = try? RuleSet(readRule(text)) else { return problems(readRule(text)) }
                return [reads(rules, auth: shape.signedIn ? auth : nil) ? "allow" : "deny"]
            }
            // The same expression in every rule of a file nested as deep as allowed: the deepest
            // load there is.
            let deep = NestingLimitTests.deepDocument(Nesting.documentLimit, expression: text)
            let loaded = onStack(of: smallStack) { (try? RuleSet(deep)) != nil || !problems(deep).isEmpty }
            #expect(loaded == true, "\(shape.name)")
            if shape.name == "[[]]" {
                // Arrays nest only in the parser: the check refuses them after.
                #expect(outcome?.count == 1 && outcome?.first?.hasSuffix("An array may only be the argument of hasChildren().") == true, "\(outcome ?? [])")
            } else {
                #expect(outcome == [shape.allows ? "allow" : "deny"], "\(shape.name)")
            }
        }
    }

    @Test("one level past the limit is refused with the limit and where it is passed")
    func pastTheLimit() {
        let limit = Nesting.expressionLimit
        let message = "Expression nested more than \(limit) levels."
        let column = NestingLimitTests.column
        // Where each shape, one level deeper than allowed, is refused.
        let expected: [String: Int] = [
            "!": column,                                    // the outermost `!`
            "()": column + limit,                           // the first `(` past the limit
            "?:": column + limit * 7 + 5,                   // the first `?` past the limit
            ".": column + 4 + limit * 2 + 1,                // the `==` that adds the last level
            "[]": column + 5 * limit + 3 + limit + 1,       // the `!=` that adds the last level
        ]
        for shape in NestingLimitTests.shapes {
            let outcome = problemsOnSmallStack(readRule(shape.levels(Nesting.expressionLimit + 1)))
            #expect(outcome?.count == 1, "\(shape.name)")
            #expect(outcome?.first?.hasSuffix(" " + message) == true, "\(shape.name): \(outcome ?? [])")
            if let at = expected[shape.name] { #expect(outcome == ["1:\(at): \(message)"], "\(shape.name)") }
        }
        // Far past the limit: still an error, not a crash.
        // (Prefix operators are counted from the operand out: the first past the limit from the inside.)
        #expect(problemsOnSmallStack(readRule(String(repeating: "!", count: 200_000) + "true")) == ["1:\(column + 200_000 - limit - 1): \(message)"])
        #expect(problemsOnSmallStack(readRule(String(repeating: "(", count: 200_000) + "true")) == ["1:\(column + limit): \(message)"])
        #expect(problemsOnSmallStack(readRule("auth" + String(repeating: ".a", count: 200_000) + " == null"))?.first?.hasSuffix(message) == true)
    }

    /// A rules document of `levels` nested objects (the outer one, `rules` and those below it),
    /// with `.read`, `.write`, `.validate` and `.indexOn` at every level but the innermost.
    static func deepDocument(_ levels: Int, expression: String = "true") -> String {
        var text = "{\"rules\":"
        for _ in 0..<(levels - 2) {
            text += "{\".read\":" + quote(expression) + ",\".write\":" + quote(expression) + ",\".validate\":" + quote(expression)
                + ",\".indexOn\":\"a\",\"a\":"
        }
        text += "{}"
        text += String(repeating: "}", count: levels - 1)
        return text
    }

    @Test("a rules file nested to the limit loads, prints and is evaluated on a 512 KB stack; one more level is refused")
    func deepDocument() {
        let deepest = String(repeating: "!", count: Nesting.expressionLimit) + "true"
        let outcome = onStack(of: smallStack) { () -> [String] in
            do {
                let rules = try RuleSet(NestingLimitTests.deepDocument(Nesting.documentLimit, expression: deepest))
                let path = "/" + Array(repeating: "a", count: 30).joined(separator: "/")
                let value = (try? JSONReader.parse(#"{"a":{"a":{"a":1}}}"#)) ?? .null
                let write = RuleData(read: { _ in .null })
                write.setWrites([(try Path(path), value)])
                return [String(reads(rules, path: path)),
                        String(rules.canWrite(principal: .anonymous, now: 0, data: write)),
                        String(rules.document.strictText().count > 0),
                        String(rules.indexDeclarations.count)]
            } catch {
                return ["\(error)"]
            }
        }
        #expect(outcome == ["true", "true", "true", "\(Nesting.documentLimit - 2)"])
        let limit = Nesting.documentLimit
        let text = NestingLimitTests.deepDocument(limit + 1)
        let past = problemsOnSmallStack(text)
        // At the first `{` past the limit (the document is one line; its expressions hold no braces).
        let column = (text.utf8.enumerated().filter { $0.element == UInt8(ascii: "{") }.dropFirst(limit).first?.offset ?? 0) + 1
        #expect(past == ["1:\(column): JSON nested more than \(limit) levels."])
        #expect(problemsOnSmallStack(String(repeating: "[", count: 200_000)) == ["1:\(limit + 1): JSON nested more than \(limit) levels."])
    }
}
