import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
        // Without an action, the error names the ones there are.
        let bare = s.rtdb("rules")
        expectError(bare, status: 2, code: "usage")
        #expect(bare.error?.message == "rules: missing ACTION (check, simulate or test)", "\(bare)")
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
        func waitFor(_ text: String) -> Bool { eventually(10) { stream.stdout.contains(text) } }
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

/// `.indexOn` in the rules creates the engine's indexes: at start, and when the rules are
/// replaced at run time.
@Suite struct RulesIndexTests {
    @Test func indexOnDeclarationsBecomeIndexes() throws {
        let s = Sandbox()
        s.seed("/players", #"{"a":{"score":3},"b":{"score":1}}"#)
        let rules = s.write("rules.json", #"{"rules":{".read":true,"players":{".indexOn":["score",".value"]}}}"#)
        let server = try #require(ServeProcess(s, ["--rules", rules]))
        let first = s.rtdb("index", "list")
        #expect(first.status == 0)
        #expect(Set(first.stdout.split(separator: "\n").map(String.init))
                == [#"{"path":"/players","child":".value"}"#, #"{"path":"/players","child":"score"}"#], "\(first)")
        let put = curl(s, ["-X", "PUT", "-H", "Authorization: Bearer owner",
                           "-d", #"{"rules":{".read":true,"rooms":{"$room":{"messages":{".indexOn":"ts"}}}}}"#,
                           server.url + "/.settings/rules.json"])
        #expect(put.code == "200", "\(put)")
        let list = s.rtdb("index", "list").stdout
        #expect(list.contains(#"{"path":"/rooms/$room/messages","child":"ts"}"#), "\(list)")
        // The indexed query answers as before.
        #expect(curl(s, [server.url + "/players.json?orderBy=%22score%22&limitToFirst=1"]).body == #"{"b":{"score":1}}"#)
    }
}

/// Production-like ID tokens: RS256 signatures checked with libcrypto against the --jwks keys.
/// The test makes an RSA key (scripts/make-test-certificates), publishes its public half as a
/// JWKS, and signs tokens with the openssl CLI.
@Suite struct SignedTokenTests {
    static let tokens = #"""
        import base64, json, subprocess, sys, time
        key, pub, out = sys.argv[1:4]
        def b64(b): return base64.urlsafe_b64encode(b).decode().rstrip("=")
        mod = subprocess.run(["openssl", "rsa", "-pubin", "-in", pub, "-noout", "-modulus"],
                             capture_output=True, text=True, check=True).stdout.strip().split("=", 1)[1]
        json.dump({"keys": [{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
                             "n": b64(bytes.fromhex(mod)), "e": b64((65537).to_bytes(3, "big"))}]}, open(out + "/jwks.json", "w"))
        now = int(time.time())
        def token(claims, kid="k1"):
            head = b64(json.dumps({"alg": "RS256", "kid": kid, "typ": "JWT"}).encode())
            body = b64(json.dumps(claims).encode())
            sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=(head + "." + body).encode(),
                                 capture_output=True, check=True).stdout
            return head + "." + body + "." + b64(sig)
        base = {"aud": "demo-proj", "iss": "https://securetoken.google.com/demo-proj", "sub": "u1",
                "iat": now - 10, "auth_time": now - 10, "exp": now + 3600}
        good = token(base)
        h, b, s = good.split(".")
        forged = h + "." + b64(json.dumps(dict(base, sub="u2")).encode()) + "." + s
        print(json.dumps({"good": good, "forged": forged, "expired": token(dict(base, exp=now - 60)),
                          "otherProject": token(dict(base, aud="other", iss="https://securetoken.google.com/other")),
                          "unknownKey": token(base, kid="k9")}))
        """#

    @Test func onlyTokensSignedByAJWKSKeyOfTheProjectAreUsers() throws {
        let s = Sandbox()
        let pki = s.dir + "/pki"
        let made = s.program(["/bin/sh", ServeTLSTests.script, pki])
        try #require(made.status == 0, "making keys: \(made)")
        let python = try #require(Binary.onPath("python3"))
        let r = s.program([python, "-c", SignedTokenTests.tokens, pki + "/rsa.key", pki + "/rsa.pub", s.dir])
        try #require(r.status == 0, "making tokens: \(r)")
        let tokens = try #require(object(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) as? [String: String])
        let rules = s.write("rules.json", #"{"rules":{"users":{"$uid":{".read":"auth != null && auth.uid == $uid",".write":"auth != null && auth.uid == $uid"}}}}"#)
        let server = try #require(ServeProcess(s, ["--rules", rules, "--project-id", "demo-proj", "--jwks", s.dir + "/jwks.json"]))
        func put(_ path: String, _ token: String?) -> String {
            curl(s, ["-X", "PUT", "-d", "1", server.url + path + (token.map { "?auth=" + $0 } ?? "")]).code
        }
        #expect(put("/users/u1.json", tokens["good"]) == "200")
        #expect(put("/users/u2.json", tokens["good"]) == "401")            // the rules: only their own
        #expect(put("/users/u2.json", tokens["forged"]) == "401")          // signature does not match
        #expect(put("/users/u1.json", tokens["expired"]) == "401")
        #expect(put("/users/u1.json", tokens["otherProject"]) == "401")
        #expect(put("/users/u1.json", tokens["unknownKey"]) == "401")
        #expect(put("/users/u1.json", nil) == "401")
        #expect(s.get("/users") == #"{"u1":1}"#)
    }
}
