import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct RulesTests {
    @Test func rulesCheckPrintsOkOrEveryProblemWithItsPosition() {
        let s = Sandbox()
        let good = s.write("good.rules.json", "// comment\n{\"rules\":{\".read\":\"auth != null\"}}\n")
        expectOK(s.rtdb("rules", "check", good), "{\"ok\":true}\n")
        let bad = s.write("bad.rules.json", "{\n  \"rules\": {\n    \".read\": \"tr\",\n    \".write\": 7\n  }\n}\n")
        let r = s.rtdb("rules", "check", bad)
        expectError(r, status: 3, code: "invalid_data")
        #expect(r.stderr.contains("bad.rules.json:3:15: Unknown variable 'tr'."))
        #expect(r.stderr.contains("bad.rules.json:4:15: .write must be a boolean or an expression string."))
        expectError(s.rtdb("rules", "check"), status: 2, code: "usage")
        expectError(s.rtdb("rules", "lint", good), status: 2, code: "usage")
        expectError(s.rtdb("rules", "check", s.dir + "/missing.json"), status: 1, code: "io_error")
        expectOK(s.rtdb(["rules", "check", "-"], stdin: .text("{\"rules\":{}}")), "{\"ok\":true}\n")
    }

    @Test func serveRefusesABadRulesFileAndBadTokenOptions() {
        let s = Sandbox()
        let bad = s.write("bad.json", "{\"rules\":{\".read\":\"nope\"}}")
        let r = s.rtdb("serve", "--port", "0", "--rules", bad)
        expectError(r, status: 3, code: "invalid_data")
        #expect(r.stderr.contains("1:20: Unknown variable 'nope'."))
        expectError(s.rtdb("serve", "--port", "0", "--project-id", "demo"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--port", "0", "--jwks", bad), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--port", "0", "--project-id", "Bad_ID", "--jwks", bad), status: 2, code: "usage")
        let jwks = s.write("jwks.json", "{\"keys\":[]}")
        expectError(s.rtdb("serve", "--port", "0", "--project-id", "demo", "--jwks", jwks), status: 3, code: "invalid_data")
        #expect(!s.exists(s.db))
    }

    @Test func serveEnforcesRulesAndCancelsAStreamWhenRulesChange() throws {
        let s = Sandbox()
        s.seed("/room", #"{"name":"lobby"}"#)
        let rules = s.write("rules.json", #"{"rules":{"room":{".read":true},"ro":{".read":true}}}"#)
        let server = try #require(ServeProcess(s, ["--rules", rules, "--strict-indexes"]))
        #expect(curl(s, [server.url + "/room.json"]).body == #"{"name":"lobby"}"#)
        let denied = curl(s, ["-X", "PUT", "-d", "1", server.url + "/ro.json"])
        #expect(denied.code == "401")
        #expect(denied.body.contains("Permission denied"))
        #expect(curl(s, [server.url + "/.json"]).code == "401")
        #expect(curl(s, [server.url + "/room.json?orderBy=%22name%22"]).code == "400")
        #expect(s.get("/ro") == "null")

        let stream = try #require(s.background(["curl", "-sN", "-H", "Accept: text/event-stream", server.url + "/room.json"], name: "stream"))
        defer { stream.killGroup() }
        func waitFor(_ text: String) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if stream.stdout.contains(text) { return true }
                usleep(10_000)
            }
            return false
        }
        #expect(waitFor(#"data: {"path":"/","data":{"name":"lobby"}}"#))
        let put = curl(s, ["-X", "PUT", "-H", "Authorization: Bearer owner", "--data-binary", #"{"rules":{".read":false}}"#,
                           server.url + "/.settings/rules.json"])
        #expect(put.code == "200")
        #expect(waitFor("event: cancel"), "stream: \(stream.stdout)")
        #expect(stream.wait(timeout: 10) == 0)
        let bad = curl(s, ["-X", "PUT", "-H", "Authorization: Bearer owner", "--data-binary", "{\"rules\":{\".read\":\"x\"}}",
                           server.url + "/.settings/rules.json"])
        #expect(bad.code == "400")
        #expect(bad.body.contains("Unknown variable 'x'."))
        // The admin bypasses rules.
        #expect(curl(s, ["-H", "Authorization: Bearer owner", server.url + "/room/name.json"]).body == #""lobby""#)
    }
}
