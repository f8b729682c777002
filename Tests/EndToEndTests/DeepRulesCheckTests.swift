import Foundation
import Testing

/// `rtdb rules check` on rules far longer or deeper than anyone writes: a long chain is valid,
/// a deep one is refused with its limit and position, and neither crashes the binary.
@Suite struct DeepRulesCheckTests {
    @Test func aChainOf100000TermsIsValid() {
        let s = Sandbox()
        let terms = (0..<100_000).map { "auth.uid == 'u\($0)'" }.joined(separator: " || ")
        let file = s.write("long.rules.json", "{\"rules\":{\".read\":\"" + terms + "\",\"a\":{\".write\":\""
                           + (0..<100_000).map { "newData.val() != \($0)" }.joined(separator: " && ") + "\"}}}")
        expectOK(s.rtdb("rules", "check", file), "{\"ok\":true}\n")
    }

    @Test func nestingPastTheLimitIsAnErrorWithItsPosition() {
        let s = Sandbox()
        let deep = s.write("deep.rules.json", "{\"rules\":{\".read\":\"" + String(repeating: "(", count: 100_000) + "true"
                           + String(repeating: ")", count: 100_000) + "\"}}")
        let r = s.rtdb("rules", "check", deep)
        expectError(r, status: 3, code: "invalid_data")
        #expect(r.stderr.contains("deep.rules.json:1:68: Expression nested more than 48 levels."), "\(r.stderr)")
        let json = s.write("json.rules.json", "{\"rules\":" + String(repeating: "[", count: 100_000))
        let j = s.rtdb("rules", "check", json)
        expectError(j, status: 3, code: "invalid_data")
        #expect(j.stderr.contains("json.rules.json:1:73: JSON nested more than 64 levels."), "\(j.stderr)")
    }
}
