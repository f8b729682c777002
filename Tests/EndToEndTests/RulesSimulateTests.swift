import Foundation
import Testing

/// `rtdb rules simulate` and `rtdb rules test`: decisions with their traces, exit statuses,
/// and the coverage report, run as the binary.
@Suite struct RulesSimulateTests {
    static let rules = """
    {
      "rules": {
        "users": {
          "$uid": {
            ".read": "auth != null",
            ".write": "auth != null && auth.uid === $uid",
            "name": { ".validate": "newData.isString() && newData.val().length <= 50" }
          }
        },
        "posts": {
          ".read": "query.orderByChild === 'author' && query.limitToFirst <= 20",
          "$post": {
            ".write": "auth != null && (!data.exists() ? newData.child('author').val() === auth.uid : data.child('author').val() === auth.uid)"
          }
        }
      }
    }
    """

    static func object(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    @Test func simulateDecidesOnTheFilesDataWithATraceAndWritesNothing() throws {
        let s = Sandbox()
        let rules = s.write("rules.json", Self.rules)
        s.seed("/posts/p1", #"{"author":"alice","title":"Hi"}"#)
        let denied = s.rtdb("rules", "simulate", "--rules", rules, "--uid", "bob", "set", "/posts/p1/title", #""mine""#)
        #expect(denied.status == 4, "\(denied)")
        let d = try #require(Self.object(denied.stdout), "\(denied)")
        #expect(d["allowed"] as? Bool == false)
        let by = try #require(d["decided_by"] as? [String: Any])
        #expect(by["rule"] as? String == "rules/posts/$post/.write")
        #expect(by["line"] as? Int == 13 && by["column"] as? Int == 20)
        let trace = try #require(d["trace"] as? [[String: Any]])
        // The stored author was read from the file.
        #expect(trace.contains { $0["expression"] as? String == "data.child('author').val()" && $0["value"] as? String == "alice" })
        #expect(trace.first?["rule"] as? String == "rules/posts/$post/.write" && trace.first?["path"] as? String == "/posts/p1")
        #expect(s.get("/posts/p1") == #"{"author":"alice","title":"Hi"}"#)

        let allowed = s.rtdb("rules", "simulate", "--rules", rules, "--claims", #"{"uid":"alice"}"#, "update", "/posts/p1", #"{"title":"Hello"}"#)
        #expect(allowed.status == 0, "\(allowed)")
        #expect(Self.object(allowed.stdout)?["allowed"] as? Bool == true)
        #expect(s.get("/posts/p1") == #"{"author":"alice","title":"Hi"}"#)

        // A validation below the write decides.
        let long = String(repeating: "x", count: 51)
        let invalid = s.rtdb("rules", "simulate", "--rules", rules, "--uid", "alice", "set", "/users/alice", "{\"name\":\"\(long)\"}")
        #expect(invalid.status == 4)
        #expect((Self.object(invalid.stdout)?["decided_by"] as? [String: Any])?["rule"] as? String == "rules/users/$uid/name/.validate")

        // No rule grants a signed-out read of the root: decided by none.
        let none = s.rtdb("rules", "simulate", "--rules", rules, "read", "/")
        #expect(none.status == 4)
        #expect(none.stdout.hasPrefix(#"{"allowed":false,"decided_by":null,"trace":[]}"#))
        let removed = s.rtdb("rules", "simulate", "--rules", rules, "--uid", "alice", "remove", "/users/alice")
        #expect(removed.status == 0, "\(removed)")
    }

    @Test func simulatePrettyShowsTheRulesTextWithTheDecidingExpressionMarked() {
        let s = Sandbox()
        let rules = s.write("rules.json", Self.rules)
        let r = s.rtdb("rules", "simulate", "--rules", rules, "--uid", "bob", "set", "/users/alice/name", #""A""#, "--pretty")
        #expect(r.status == 4)
        #expect(r.stdout.hasPrefix("denied by rules/users/$uid/.write (line 6, column 20): false\n"), "\(r)")
        #expect(r.stdout.contains(#"6 |         ".write": "auth != null && auth.uid === $uid","#))
        #expect(r.stdout.contains("  |                    " + String(repeating: "^", count: 33) + "\n"))
        #expect(r.stdout.contains("      $uid  → \"alice\"\n"))
    }

    @Test func simulateRefusesBadRequestsAndWantsRules() {
        let s = Sandbox()
        let rules = s.write("rules.json", Self.rules)
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "write", "/x"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "set", "/x"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "read", "/x", "1"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "--claims", "5", "read", "/x"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "--claims", "{}", "--uid", "a", "read", "/x"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "set", "/x", "{nope"), status: 3, code: "invalid_json")
        expectError(s.rtdb("rules", "simulate", "--rules", rules, "update", "/x", "5"), status: 3, code: "invalid_data")
        let r = s.rtdb("rules", "simulate", "read", "/x")
        expectError(r, status: 2, code: "usage")
        #expect(r.error?.message.contains("no stored rules") == true, "\(r)")
    }

    static let cases = """
    {"name":"alice writes her profile","auth":{"uid":"alice"},"op":"set","path":"/users/alice","value":{"name":"Alice"},"expect":"allow"}
    {"name":"bob cannot","auth":{"uid":"bob"},"op":"set","path":"/users/alice","value":{"name":"Bob"},"expect":"deny"}

    {"name":"bob edits alice's post","auth":{"uid":"bob"},"data":{"posts":{"p1":{"author":"alice"}}},"op":"set","path":"/posts/p1/title","value":"x","expect":"deny"}
    {"name":"query by author","op":"query","path":"/posts","orderBy":"author","limitToFirst":10,"expect":"allow"}
    {"name":"too many","op":"query","path":"/posts","orderBy":"author","limitToFirst":30,"expect":"deny"}
    {"name":"multi-path","auth":{"uid":"alice"},"op":"update","path":"/","value":{"users/alice/name":"A","posts/p2":{"author":"alice"}},"expect":"allow"}
    """

    @Test func testRunsEachCaseOnItsOwnDataAndReportsCoverage() throws {
        let s = Sandbox()
        let rules = s.write("rules.json", Self.rules)
        let cases = s.write("cases.jsonl", Self.cases + "\n")
        let json = s.dir + "/coverage.json"
        let r = s.rtdb("rules", "test", rules, cases, "--coverage", json)
        #expect(r.status == 0, "\(r)")
        #expect(r.lines.count == 7)
        #expect(r.lines.first == #"{"name":"alice writes her profile","pass":true,"allowed":true}"#)
        #expect(r.lines.last == "6 passed, 0 failed")
        let report = try #require(Self.object((try? String(contentsOfFile: json, encoding: .utf8)) ?? ""))
        let entries = try #require(report["rules"] as? [[String: Any]])
        let write = try #require(entries.first { $0["rule"] as? String == "rules/users/$uid/.write" })
        #expect(write["evaluations"] as? Int == 3 && write["true"] as? Int == 2 && write["false"] as? Int == 1)
        let read = try #require(entries.first { $0["rule"] as? String == "rules/users/$uid/.read" })
        #expect(read["evaluations"] as? Int == 0)
        let html = s.dir + "/coverage.html"
        #expect(s.rtdb("rules", "test", rules, cases, "--coverage", html).status == 0)
        let page = (try? String(contentsOfFile: html, encoding: .utf8)) ?? ""
        #expect(page.contains("<span class=\"never\" title=\"rules/users/$uid/.read: 0 evaluations"))
        #expect(page.contains("<span class=\"both\" title=\"rules/users/$uid/.write: 3 evaluations, 2 true, 1 false, 0 errors\">"))
        #expect(!page.contains("http:") && !page.contains("https:"))

        // A wrong expectation fails with the deciding rule, and the status is 1.
        let wrong = s.write("wrong.jsonl", #"{"name":"w","op":"read","path":"/posts","expect":"allow"}"# + "\n")
        let f = s.rtdb("rules", "test", rules, wrong)
        #expect(f.status == 1)
        #expect(f.lines == [#"{"name":"w","pass":false,"allowed":false,"decided_by":{"rule":"rules/posts/.read","line":11,"column":17}}"#,
                            "0 passed, 1 failed"])
        // A bad line is named, and nothing runs.
        let bad = s.write("bad.jsonl", Self.cases + "\n{\"op\":\"jump\",\"path\":\"/\",\"expect\":\"allow\"}\n")
        let b = s.rtdb("rules", "test", rules, bad)
        expectError(b, status: 3, code: "invalid_data")
        #expect(b.error?.message.contains("bad.jsonl:8: unknown op") == true, "\(b)")
        expectError(s.rtdb("rules", "test", rules, cases, "--coverage", s.dir + "/c.txt"), status: 2, code: "usage")
    }

    @Test func aThousandCasesRun() {
        let s = Sandbox()
        let rules = s.write("rules.json", Self.rules)
        var lines = ""
        for i in 0..<1000 {
            let who = i % 2 == 0 ? "alice" : "bob"
            lines += "{\"name\":\"c\(i)\",\"auth\":{\"uid\":\"\(who)\"},\"data\":{\"posts\":{\"p\":{\"author\":\"alice\"}}},"
                + "\"op\":\"set\",\"path\":\"/posts/p/title\",\"value\":\"t\",\"expect\":\"\(who == "alice" ? "allow" : "deny")\"}\n"
        }
        let r = s.rtdb("rules", "test", rules, s.write("many.jsonl", lines))
        #expect(r.status == 0)
        #expect(r.lines.last == "1000 passed, 0 failed")
    }
}

extension RulesSimulateTests {
    @Test func simulateAgainstAServerReadsItsRulesAndDataWithTheCallersCredential() throws {
        let s = Sandbox()
        s.seed("/posts/p1", #"{"author":"alice"}"#)
        let rules = s.write("rules.json", Self.rules)
        let server = try #require(ServeProcess(s, ["--rules", rules]))
        let url = server.url + "?ns=sim"
        // The server's data: written through it, as the namespace's.
        #expect(curl(s, ["-X", "PUT", "-H", "Authorization: Bearer owner", "-d", #"{"author":"alice"}"#,
                         server.url + "/posts/p2.json?ns=sim"]).code == "200")
        let denied = s.rtdb("rules", "simulate", "--url", url, "--auth", "owner", "--uid", "bob", "set", "/posts/p2/title", #""x""#)
        #expect(denied.status == 4, "\(denied)")
        #expect((Self.object(denied.stdout)?["decided_by"] as? [String: Any])?["rule"] as? String == "rules/posts/$post/.write")
        let allowed = s.rtdb("rules", "simulate", "--url", url, "--auth", "owner", "--uid", "alice", "set", "/posts/p2/title", #""x""#)
        #expect(allowed.status == 0, "\(allowed)")
        #expect(curl(s, ["-H", "Authorization: Bearer owner", server.url + "/posts/p2.json?ns=sim"]).body == #"{"author":"alice"}"#)
        // Reading the rules needs the admin: with a secret set, another credential is refused.
        let guarded = try #require(ServeProcess(s, ["--rules", rules, "--secret", "sim-secret-0123456789"], name: "guarded"))
        let refused = s.rtdb("rules", "simulate", "--url", guarded.url, "--auth", "not-the-secret", "--uid", "alice", "read", "/posts")
        #expect(refused.status == 4 && refused.stdout.isEmpty, "\(refused)")
        let admitted = s.rtdb("rules", "simulate", "--url", guarded.url, "--auth", "sim-secret-0123456789", "--uid", "alice", "read", "/public")
        #expect(admitted.status == 4 && Self.object(admitted.stdout)?["allowed"] as? Bool == false, "\(admitted)")
    }
}
