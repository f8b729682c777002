import Foundation
import Testing

/// `rtdb serve`'s rules coverage: counts since the rules were set, reset, the page, and the
/// admin credential when a secret is set.
@Suite struct RulesCoverageServeTests {
    static func counts(_ body: String, _ rule: String) -> [Int]? {
        guard let doc = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let rules = doc["rules"] as? [[String: Any]],
              let r = rules.first(where: { $0["rule"] as? String == rule }) else { return nil }
        return ["evaluations", "true", "false", "errors"].compactMap { r[$0] as? Int }
    }

    @Test func coverageCountsEvaluationsResetsAndStartsAgainWithNewRules() throws {
        let s = Sandbox()
        let rules = s.write("rules.json", #"{"rules":{"users":{"$uid":{".read":"auth != null","#
            + #"".write":"auth != null && auth.uid === $uid"}}}}"#)
        let server = try #require(ServeProcess(s, ["--rules", rules]))
        let ns = "?ns=cov"
        #expect(curl(s, ["-X", "PUT", "-d", "1", server.url + "/users/alice.json" + ns]).code == "401")
        #expect(curl(s, [server.url + "/users/alice.json" + ns]).code == "401")
        let json = curl(s, [server.url + "/.inspect/coverage.json" + ns])
        #expect(json.code == "200")
        #expect(Self.counts(json.body, "rules/users/$uid/.write") == [1, 0, 1, 0], "\(json.body)")
        #expect(Self.counts(json.body, "rules/users/$uid/.read") == [1, 0, 1, 0])
        #expect(json.body.contains(#"{"expression":"auth != null","line":1,"column":37,"end_line":1,"end_column":49,"evaluations":1,"true":0,"false":1,"errors":0}"#))
        // The page: the rules text, each expression marked, no outside hosts.
        let page = curl(s, [server.url + "/.inspect/coverage" + ns])
        #expect(page.code == "200")
        #expect(page.body.contains(#"<span class="false" title="rules/users/$uid/.write: 1 evaluations, 0 true, 1 false, 0 errors">"#))
        #expect(!page.body.contains("http:") && !page.body.contains("https:"))
        // DELETE resets.
        #expect(curl(s, ["-X", "DELETE", server.url + "/.inspect/coverage.json" + ns]).code == "200")
        #expect(Self.counts(curl(s, [server.url + "/.inspect/coverage.json" + ns]).body, "rules/users/$uid/.write") == [0, 0, 0, 0])
        #expect(curl(s, ["-X", "PUT", "-d", "1", server.url + "/.inspect/coverage.json" + ns]).code == "405")
        // New rules count from zero.
        #expect(curl(s, ["-X", "PUT", "-d", "1", server.url + "/users/alice.json" + ns]).code == "401")
        #expect(curl(s, ["-X", "PUT", "-H", "Authorization: Bearer owner", "-d", #"{"rules":{".write":"auth != null"}}"#,
                         server.url + "/.settings/rules.json" + ns]).code == "200")
        let fresh = curl(s, [server.url + "/.inspect/coverage.json" + ns]).body
        #expect(Self.counts(fresh, "rules/.write") == [0, 0, 0, 0], "\(fresh)")
        #expect(Self.counts(fresh, "rules/users/$uid/.write") == nil)
    }

    @Test func coverageNeedsTheSecretWhenOneIsSet() throws {
        let s = Sandbox()
        let rules = s.write("rules.json", #"{"rules":{".read":true}}"#)
        let server = try #require(ServeProcess(s, ["--rules", rules, "--secret", "s3cret-coverage-key"]))
        #expect(curl(s, [server.url + "/.inspect/coverage.json"]).code == "401")
        #expect(curl(s, [server.url + "/.inspect/coverage"]).code == "401")
        #expect(curl(s, [server.url + "/.inspect/coverage.json?auth=s3cret-coverage-key"]).code == "200")
    }
}
