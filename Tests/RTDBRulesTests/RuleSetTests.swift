import Testing
import RTDBCore
@testable import RTDBRules

func problems(_ text: String) -> [String] {
    do {
        _ = try RuleSet(text)
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

@Suite("Rules documents: loading and positions of errors")
struct RuleSetTests {
    @Test("comments, raw newlines in strings and Bolt-style output load")
    func lenient() throws {
        let text = """
        // a comment
        {
          /* block
             comment */
          "rules": {
            ".read": "auth != null &&
                      auth.uid == 'a'",   // trailing comment
            "$other": { ".validate": "false" },
            "users": { "$uid": { ".write": "(($uid == auth.uid))", ".indexOn": ["name", "ratings/pos", ".value"] } }
          }
        }
        """
        let rules = try RuleSet(text)
        #expect(rules.source == text)
        #expect(rules.indexes(at: try Path("/users/x")) == ["name", "ratings/pos", ".value"])
        #expect(rules.document.strictText(pretty: false).hasPrefix(#"{"rules":{".read":"auth != null &&"#))
    }

    @Test("errors carry the line and column of the offending token in the file")
    func positions() {
        #expect(problems("{\n  \"rules\": {\n    \".read\": \"tr\"\n  }\n}") == ["3:15: Unknown variable 'tr'."])
        #expect(problems("{\"rules\":{\".read\":\"auth.uid == 'x' && $color == 'red'\"}}") == ["1:39: Unknown variable '$color'."])
        #expect(problems("{\"rules\": {\".read\": true,}}") == ["1:26: Parse error."])
        #expect(problems("{\"rule\": {}}") == ["1:2: Unexpected top-level property 'rule': only 'rules' is allowed.", "1:2: Expected 'rules' property."])
        #expect(problems("{\"rules\":{\".write\":\"!newData.val()\"}}") == ["1:21: ! only operates on booleans."])
        #expect(problems("{\"rules\":{\".read\":\"1 +\"}}") == ["1:23: Parse error."])
        // A multi-line expression: the position is on the expression's second line.
        #expect(problems("{\"rules\":{\".read\":\"true &&\n   nope\"}}") == ["2:4: Unknown variable 'nope'."])
    }

    @Test("every problem is reported, in file order")
    func several() {
        let p = problems("""
        {"rules": {
          ".read": 7,
          ".bogus": true,
          "a.b": {},
          "$x": {}, "$y": {},
          "c": null,
          ".write": ""
        }}
        """)
        #expect(p.count == 6)
        #expect(p.first?.hasPrefix("2:12: .read must be a boolean") == true)
        #expect(p.contains("3:3: Invalid key '.bogus': keys starting with '.' are reserved."))
        #expect(p.contains { $0.hasPrefix("4:3: Key names can't contain") })
        #expect(p.contains { $0.hasPrefix("5:13: Only one wildcard") })
        #expect(p.contains("6:8: Rules must be an object."))
        #expect(p.contains("7:13: .write rule is empty."))
    }

    @Test("a wildcard may not be bound twice on one chain")
    func wildcardTwice() {
        #expect(problems(#"{"rules":{"$a":{"x":{"$a":{}}}}}"#).first?.contains("already bound") == true)
    }

    @Test("not JSON at all, or not an object")
    func notObject() {
        #expect(problems("[]") == ["1:1: Expected 'rules' property."])
        #expect(problems("") == ["1:1: Parse error."])
        #expect(problems("{\"rules\":{} /* open") == ["1:13: Parse error."])
    }

    @Test("the error text is one newline-terminated line per problem")
    func errorText() {
        do {
            _ = try RuleSet("{\"rules\":{\".read\":\"x\",\".write\":\"y\"}}")
            Issue.record("loaded")
        } catch {
            #expect(error.description == "1:20: Unknown variable 'x'.\n1:33: Unknown variable 'y'.\n")
        }
    }

    @Test(".indexOn is found through wildcards; a missing index has Firebase's message")
    func indexes() throws {
        let rules = try RuleSet(#"{"rules":{"dinos":{".indexOn":["height","length"]},"rooms":{"$r":{".indexOn":"ts"}}}}"#)
        #expect(rules.missingIndex("height", at: try Path("/dinos")) == nil)
        #expect(rules.missingIndex("weight", at: try Path("/dinos"))
                == "Index not defined, add \".indexOn\": \"weight\", for path \"/dinos\", to the rules")
        #expect(rules.missingIndex("ts", at: try Path("/rooms/r1")) == nil)
        #expect(rules.missingIndex(".value", at: try Path("/rooms")) != nil)
    }

    @Test("regex literals: the subset and its restrictions")
    func regex() throws {
        #expect(try RuleRegex(body: "a", flags: "").matches("ba"))
        #expect(try !RuleRegex(body: "^a", flags: "").matches("ba"))
        #expect(try RuleRegex(body: "A$", flags: "i").matches("ba"))
        #expect(try RuleRegex(body: "^\\s\\S\\w\\W\\d\\D$", flags: "").matches(" xa-1z"))
        #expect(try RuleRegex(body: "^a{2,3}$", flags: "").matches("aaa"))
        #expect(try !RuleRegex(body: "^a{2,3}$", flags: "").matches("aaaa"))
        #expect(try RuleRegex(body: "^[^a-c]+$", flags: "").matches("xyz"))
        #expect(try RuleRegex(body: "^\\$\\^$", flags: "").matches("$^"))
        for bad in ["(^a)", "a|", "(a|)", "a^", "$a", "*a", "a**", "[a", "(a", "a)", "[z-a]"] {
            #expect(throws: RegexProblem.self, "\(bad)") { try RuleRegex(body: bad, flags: "") }
        }
        #expect(throws: RegexProblem.self) { try RuleRegex(body: "a", flags: "g") }
    }
}
