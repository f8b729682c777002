import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rules put at run time outlive the server: a restarted `rtdb serve` on the same data enforces
/// them, under every name that reaches the file; `--rules` at start wins over them.
@Suite struct StoredRulesRestartTests {
    static let denyWrites = #"{"rules":{".read":true,".write":false}}"#

    func put(_ s: Sandbox, _ url: String, _ body: String, admin: Bool = false) -> String {
        curl(s, ["-X", "PUT", "--data-binary", body] + (admin ? ["-H", "Authorization: Bearer owner"] : []) + [url]).code
    }

    func stop(_ server: ServeProcess) {
        kill(server.child.pid, SIGTERM)
        _ = server.child.wait(timeout: 10)
    }

    @Test func rulesPutUnderANamespaceAreInForceAfterARestart() throws {
        let s = Sandbox()
        let dir = s.dir + "/data"
        let first = try #require(ServeProcess(s, ["--data-dir", dir], name: "first"))
        #expect(put(s, first.url + "/.settings/rules.json?ns=prod", StoredRulesRestartTests.denyWrites, admin: true) == "200")
        #expect(put(s, first.url + "/a.json?ns=prod", "1") == "401")
        stop(first)
        // `alias` reaches prod's file (as PROD would on a case-insensitive file system).
        #expect(symlink(dir + "/prod.db", dir + "/alias.db") == 0)

        let second = try #require(ServeProcess(s, ["--data-dir", dir], name: "second"))
        #expect(put(s, second.url + "/a.json?ns=prod", "1") == "401")
        #expect(put(s, second.url + "/a.json?ns=alias", "1") == "401")
        #expect(put(s, second.url + "/a.json?ns=other", "1") == "200")
        #expect(put(s, second.url + "/a.json?ns=prod", "2", admin: true) == "200")
        #expect(curl(s, [second.url + "/.settings/rules.json?ns=alias", "-H", "Authorization: Bearer owner"]).body
                == StoredRulesRestartTests.denyWrites)
        stop(second)

        // Rules given at start win over the stored ones.
        let open = s.write("open.json", #"{"rules":{".read":true,".write":true}}"#)
        let third = try #require(ServeProcess(s, ["--data-dir", dir, "--rules", open], name: "third"))
        #expect(put(s, third.url + "/a.json?ns=prod", "3") == "200")
    }
}
