import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct RemoteCommandTests {
    @Test func everyCommandWorksAgainstServe() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = ["--url", remoteURL(server)]
        func run(_ args: String..., stdin: Input = .none) -> RunResult { s.rtdb(url + args, stdin: stdin) }

        expectLines(run("set", "/a", #"{"b":1,"c":[1,2]}"#), [#"{"path":"/a","value":{"b":1,"c":[1,2]}}"#])
        expectLines(run("get", "/a"), [#"{"b":1,"c":[1,2]}"#])
        expectLines(run("get", "/a", "--shallow"), [#"{"b":true,"c":true}"#])
        expectLines(run("get", "/nothing"), ["null"])
        expectLines(run("update", "/a", #"{"d/e":5,"b":null}"#), [#"{"path":"/a","value":{"b":null,"d/e":5}}"#])
        expectLines(run("get", "/a"), [#"{"c":[1,2],"d":{"e":5}}"#])
        expectLines(run("increment", "/n", "3"), [#"{"path":"/n","value":3}"#])
        expectLines(run("increment", "/n", "-0.5"), [#"{"path":"/n","value":2.5}"#])
        expectLines(run("tx", "/n", "--", "sh", "-c", "read n; echo 10"), [#"{"path":"/n","committed":true,"value":10,"attempts":1}"#])
        expectLines(run("remove", "/a"), [#"{"path":"/a","value":null}"#])

        let ts = run("set", "/t", "--server-timestamp")
        let stored = try #require(object(ts.stdout)?["value"] as? Int64)
        #expect(abs(stored - nowMillis()) < 60_000)

        let pushed = run("push", "/list", "--lines", stdin: .text("{\"x\":3}\n{\"x\":1}\n\n{\"x\":2}\n"))
        #expect(pushed.status == 0, "\(pushed)")
        let keys = pushed.lines.compactMap { object($0)?["key"] as? String }
        #expect(keys.count == 3 && keys.allSatisfy(isPushID) && keys == keys.sorted())
        expectLines(run("query", "/list", "--order-by-child", "x", "--limit-to-first", "2"),
                    [#"{"key":"\#(keys[1])","value":{"x":1}}"#, #"{"key":"\#(keys[2])","value":{"x":2}}"#])
        expectLines(run("query", "/list", "--order-by-key", "--limit-to-last", "1"), [#"{"key":"\#(keys[2])","value":{"x":2}}"#])
        // The same file, read locally, holds what was written remotely.
        #expect(s.get("/n") == "10")
        #expect(s.get("/list/" + keys[0]) == #"{"x":3}"#)
    }

    @Test func badInputIsRefusedBeforeAnythingIsSent() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = ["--url", remoteURL(server)]
        expectError(s.rtdb(url + ["set", "/a", #"{"b.c":1}"#]), status: 3, code: "invalid_key")
        expectError(s.rtdb(url + ["set", "/a", "{bad"]), status: 3, code: "invalid_json")
        expectError(s.rtdb(url + ["set", "/.info/x", "1"]), status: 3, code: "invalid_path")
        expectError(s.rtdb(url + ["update", "/", #"{"a":1,"a/b":2}"#]), status: 3, code: "invalid_data")
        #expect(s.get("/") == "null")
    }

    @Test func pushLinesIsOnePatch() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, ["--log"]))
        let lines = (0..<500).map { "{\"i\":\($0)}" }.joined(separator: "\n")
        let r = s.rtdb(["--url", remoteURL(server), "push", "/items", "--lines", "-q"], stdin: .text(lines))
        #expect(r.status == 0, "\(r)")
        kill(server.child.pid, SIGTERM)
        _ = server.child.wait(timeout: 10)
        let logged = server.child.stderr.split(separator: "\n").compactMap { object(String($0)) }
        #expect(logged.count == 1 && logged.first?["method"] as? String == "PATCH", "\(logged)")
        let count = s.rtdb("get", "/items", "--shallow").stdout.split(separator: ",").count
        #expect(count == 500)
    }

    @Test func concurrentTransactionsLoseNoUpdate() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = remoteURL(server)
        let script = "for i in 1 2 3 4 5; do \"$RTDB\" --url '\(url)' tx /c -q -- sh -c 'read n; [ \"$n\" = null ] && n=0; echo $((n+1))' || exit 1; done"
        let children = (0..<4).compactMap { s.background(["sh", "-c", script], name: "tx\($0)") }
        #expect(children.count == 4)
        for c in children { #expect(c.wait(timeout: 60) == 0, "\(c.stderr)") }
        #expect(s.get("/c") == "20")
    }

    @Test func aTransactionThatKeepsLosingIsNotCommitted() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = remoteURL(server)
        s.seed("/c", "1")
        // Every attempt changes the value behind the transaction's back: 412 each time.
        let r = s.rtdb(["--url", url, "tx", "/c", "--max-retries", "3", "--", "sh", "-c",
                        "read n; \"$RTDB\" --db '\(s.db)' increment /c -q; echo 100"], env: ["RTDB": Binary.rtdb])
        #expect(r.status == 5, "\(r)")
        #expect(object(r.stdout)?["committed"] as? Bool == false)
        #expect(object(r.stdout)?["attempts"] as? Int == 3)
        #expect(r.error?.code == "not_committed")
        #expect(s.get("/c") == "4")
    }

    @Test func theEmulatorVariableRedirectsAProductionURL() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let hostPort = String(server.url.dropFirst("http://".count))
        let r = s.rtdb(["--url", "https://test.firebaseio.com", "set", "/e", "1"], env: ["FIREBASE_DATABASE_EMULATOR_HOST": hostPort])
        expectLines(r, [#"{"path":"/e","value":1}"#])
        expectLines(s.rtdb(["get", "/e"], env: ["RTDB_URL": remoteURL(server)]), ["1"])
    }

    @Test func urlsThatAreNotDatabasesAreUsageErrors() {
        let s = Sandbox()
        // (http://127.0.0.1:9000 without ns is a serve or emulator URL: ServeURLTests.)
        for url in ["ftp://x", "https://example.com", "https://example.com/a", "https://db.firebaseio.com/users"] {
            expectError(s.rtdb("--url", url, "get", "/"), status: 2, code: "usage")
        }
        expectError(s.rtdb("--url", "http://127.0.0.1:9?ns=a", "--db", s.db, "get", "/"), status: 2, code: "usage")
        expectError(s.rtdb("--url", "http://127.0.0.1:9?ns=a", "--cacert", s.dir + "/missing.pem", "get", "/"), status: 2, code: "usage")
        #expect(!s.exists(s.db))
    }

    @Test func anUnreachableServerIsUnavailable() {
        let s = Sandbox()
        expectError(s.rtdb("--url", "http://127.0.0.1:1?ns=a", "get", "/"), status: 6, code: "unavailable")
        expectError(s.rtdb("--url", "http://127.0.0.1:1?ns=a", "watch", "/"), status: 6, code: "unavailable")
    }

    /// https: the server's certificate is verified (here against the test CA given with
    /// --cacert); a server that cannot be verified is refused with status 6 and the reason.
    @Test func httpsVerifiesTheServer() throws {
        let s = Sandbox()
        let pki = s.dir + "/pki"
        let made = s.program(["/bin/sh", ServeTLSTests.script, pki])
        try #require(made.status == 0, "making certificates: \(made)")
        let server = try #require(ServeProcess(s, ["--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key"]))
        let url = remoteURL(server).replacingOccurrences(of: "127.0.0.1", with: "localhost")
        expectLines(s.rtdb("--url", url, "--cacert", pki + "/ca.pem", "set", "/a", "1"), [#"{"path":"/a","value":1}"#])
        expectLines(s.rtdb(["--url", url, "get", "/a"], env: ["RTDB_CACERT": pki + "/ca.pem"]), ["1"])
        let unknownCA = s.rtdb("--url", url, "get", "/a")
        expectError(unknownCA, status: 6, code: "unavailable")
        #expect(unknownCA.stderr.contains("certificate"), "\(unknownCA)")
        let otherCA = s.rtdb("--url", url, "--cacert", pki + "/other-ca.pem", "get", "/a")
        expectError(otherCA, status: 6, code: "unavailable")
        // The certificate names localhost, not this address.
        let wrongName = s.rtdb("--url", remoteURL(server).replacingOccurrences(of: "127.0.0.1", with: "127.0.0.2"), "--cacert", pki + "/ca.pem", "get", "/a")
        #expect(wrongName.status == 6, "\(wrongName)")
    }
}

@Suite struct RemoteAuthTests {
    @Test func credentialsReachTheServerAndWrongOnesAreDenied() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, [], env: ["RTDB_SECRET": "s3cret"]))
        let url = remoteURL(server)
        expectLines(s.rtdb("--url", url, "--access-token", "s3cret", "set", "/a", "1"), [#"{"path":"/a","value":1}"#])
        expectLines(s.rtdb("--url", url, "--auth", "s3cret", "get", "/a"), ["1"])
        expectLines(s.rtdb(["--url", url, "get", "/a"], env: ["RTDB_ACCESS_TOKEN": "s3cret"]), ["1"])
        expectLines(s.rtdb(["--url", url, "get", "/a"], env: ["RTDB_AUTH": "s3cret"]), ["1"])
        // The option wins over the variable.
        let denied = s.rtdb(["--url", url, "--auth", "wr0ng", "get", "/a"], env: ["RTDB_ACCESS_TOKEN": "s3cret"])
        expectError(denied, status: 4, code: "permission_denied")
        #expect(!denied.stderr.contains("wr0ng"))
        expectError(s.rtdb("--url", url, "get", "/a"), status: 4, code: "permission_denied")
        expectError(s.rtdb("--url", url, "--auth", "wr0ng", "watch", "/a"), status: 4, code: "permission_denied")
    }

    #if os(Linux)
    /// (Linux: the arguments as /proc/PID/cmdline shows them to ps.)
    @Test func tokensAreHiddenFromTheProcessList() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, [], env: ["RTDB_SECRET": "s3cret"]))
        let watch = try #require(s.background([Binary.rtdb, "--url", remoteURL(server), "--access-token", "s3cret", "watch", "/w"], name: "watch"))
        defer { watch.killGroup() }
        #expect(waitFor(watch, "value"))
        let cmdline = try #require(FileManager.default.contents(atPath: "/proc/\(watch.pid)/cmdline"))
        let args = String(decoding: cmdline, as: UTF8.self).split(separator: "\0").map(String.init)
        #expect(!args.contains { $0.contains("s3cret") }, "\(args)")
        // The mask does not tell the token's length.
        #expect(Array(args.suffix(4)) == ["--access-token", "***", "watch", "/w"], "\(args)")
        let long = try #require(s.background([Binary.rtdb, "--url", remoteURL(server), "--auth=s3cret",
                                              "watch", "/w"], name: "watch2"))
        defer { long.killGroup() }
        #expect(waitFor(long, "value"))
        let longLine = try #require(FileManager.default.contents(atPath: "/proc/\(long.pid)/cmdline"))
        let longArgs = String(decoding: longLine, as: UTF8.self).split(separator: "\0").map(String.init)
        #expect(Array(longArgs.suffix(3)) == ["--auth=***", "watch", "/w"], "\(longArgs)")
    }
    #endif

    @Test func aCachedServiceAccountTokenIsUsed() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, [], env: ["RTDB_SECRET": "minted-token"]))
        let key = s.write("key.json", #"{"type":"service_account","client_email":"sa@p.iam.gserviceaccount.com","private_key_id":"k1","private_key":"-----BEGIN PRIVATE KEY-----\nAA\n-----END PRIVATE KEY-----\n","token_uri":"http://127.0.0.1:1/token"}"#)
        let cache = s.dir + "/cache"
        // Without a cached token the key must sign a JWT: this one is no key.
        expectError(s.rtdb(["--url", remoteURL(server), "--credentials", key, "get", "/"], env: ["XDG_CACHE_HOME": cache]),
                    status: 3, code: "invalid_data")
        // A token minted earlier and cached (0600) is used until shortly before it expires.
        try FileManager.default.createDirectory(atPath: cache + "/rtdb", withIntermediateDirectories: true)
        let name = cacheFileName(email: "sa@p.iam.gserviceaccount.com", keyID: "k1")
        let exp = nowMillis() / 1000 + 3600
        let path = s.write("cache/rtdb/" + name, #"{"access_token":"minted-token","expires_at":\#(exp)}"#)
        chmod(path, 0o600)
        expectLines(s.rtdb(["--url", remoteURL(server), "get", "/"], env: ["XDG_CACHE_HOME": cache, "GOOGLE_APPLICATION_CREDENTIALS": key]), ["null"])
        // A cache file others may read is not trusted.
        chmod(path, 0o644)
        expectError(s.rtdb(["--url", remoteURL(server), "--credentials", key, "get", "/"], env: ["XDG_CACHE_HOME": cache]), status: 3, code: "invalid_data")
        // An expired token is not used either.
        chmod(path, 0o600)
        _ = s.write("cache/rtdb/" + name, #"{"access_token":"minted-token","expires_at":\#(nowMillis() / 1000 + 30)}"#)
        chmod(path, 0o600)
        expectError(s.rtdb(["--url", remoteURL(server), "--credentials", key, "get", "/"], env: ["XDG_CACHE_HOME": cache]), status: 3, code: "invalid_data")
    }

    /// A service-account key signs a JWT (RS256) that a local token endpoint checks with the
    /// key's public half (openssl CLI) before it mints the access token; the token is cached 0600.
    @Test func aServiceAccountKeySignsItsJWTAndTheTokenIsCached() throws {
        let s = Sandbox()
        let pki = s.dir + "/pki"
        let made = s.program(["/bin/sh", ServeTLSTests.script, pki])
        try #require(made.status == 0, "making certificates: \(made)")
        let endpoint = s.write("token_endpoint.py", #"""
            import base64, http.server, json, subprocess, sys, urllib.parse
            pub, out = sys.argv[1], sys.argv[2]
            def b64(x): return base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
            class H(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                    jwt = form.get("assertion", [""])[0]
                    head, claims, sig = jwt.split(".")
                    open(out + ".in", "wb").write((head + "." + claims).encode())
                    open(out + ".sig", "wb").write(b64(sig))
                    ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", pub, "-signature", out + ".sig", out + ".in"],
                                        capture_output=True).returncode == 0
                    c = json.loads(b64(claims))
                    ok = ok and json.loads(b64(head))["alg"] == "RS256" and c["iss"] == "sa@p.iam.gserviceaccount.com" \
                        and c["aud"].endswith("/token") and form.get("grant_type") == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
                    body = json.dumps({"access_token": "minted-token", "expires_in": 3600, "token_type": "Bearer"} if ok
                                      else {"error": "invalid_grant"}).encode()
                    self.send_response(200 if ok else 400)
                    self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(body)))
                    self.end_headers(); self.wfile.write(body)
                    open(out + ".verdict", "w").write("ok" if ok else "refused")
                def log_message(self, *a): pass
            srv = http.server.HTTPServer(("127.0.0.1", 0), H)
            print(srv.server_address[1], flush=True)
            srv.handle_request()
            """#)
        let python = try #require(Binary.onPath("python3"))
        let token = try #require(s.background([python, endpoint, pki + "/rsa.pub", s.dir + "/seen"], name: "token"))
        defer { token.killGroup() }
        var port = ""
        for _ in 0..<500 where port.isEmpty { usleep(10_000); port = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
        let pem = try String(contentsOfFile: pki + "/rsa.key", encoding: .utf8)
        let keyJSON: [String: String] = ["type": "service_account", "client_email": "sa@p.iam.gserviceaccount.com",
                                         "private_key_id": "k2", "private_key": pem, "token_uri": "http://127.0.0.1:\(port)/token"]
        let key = s.write("sa.json", String(decoding: try JSONSerialization.data(withJSONObject: keyJSON), as: UTF8.self))
        let server = try #require(ServeProcess(s, [], env: ["RTDB_SECRET": "minted-token"]))
        let cache = s.dir + "/cache"
        expectLines(s.rtdb(["--url", remoteURL(server), "--credentials", key, "set", "/a", "1"], env: ["XDG_CACHE_HOME": cache]),
                    [#"{"path":"/a","value":1}"#])
        #expect((try? String(contentsOfFile: s.dir + "/seen.verdict", encoding: .utf8)) == "ok")
        let cached = cache + "/rtdb/" + cacheFileName(email: "sa@p.iam.gserviceaccount.com", keyID: "k2")
        var st = stat()
        #expect(stat(cached, &st) == 0 && st.st_mode & 0o777 == 0o600)
        // The endpoint answered once; the cached token serves the next command.
        expectLines(s.rtdb(["--url", remoteURL(server), "--credentials", key, "get", "/a"], env: ["XDG_CACHE_HOME": cache]), ["1"])
    }

    @Test func aBrokenKeyFileIsAUsageError() {
        let s = Sandbox()
        let key = s.write("key.json", #"{"type":"service_account"}"#)
        expectError(s.rtdb("--url", "http://127.0.0.1:1?ns=a", "--credentials", key, "get", "/"), status: 2, code: "usage")
        expectError(s.rtdb("--url", "http://127.0.0.1:1?ns=a", "--credentials", s.dir + "/none.json", "get", "/"), status: 1, code: "io_error")
    }

    /// token-<first 12 bytes of SHA-1(email \n keyID \n scopes), hex>.json
    func cacheFileName(email: String, keyID: String) -> String {
        let scopes = "https://www.googleapis.com/auth/firebase.database https://www.googleapis.com/auth/userinfo.email"
        let r = Spawn.run(["sh", "-c", "printf '%s\\n%s\\n%s' \"$1\" \"$2\" \"$3\" | sha1sum", "sh", email, keyID, scopes],
                          env: ProcessInfo.processInfo.environment, input: .none, timeout: 10)
        return "token-" + String(r.stdout.prefix(24)) + ".json"
    }
}

@Suite struct RemoteStatusTests {
    @Test func statusesMapToExitCodes() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        expectError(s.rtdb("--url", server.url, "get", "/s400"), status: 3, code: "invalid_data")
        expectError(s.rtdb("--url", server.url, "get", "/s401"), status: 4, code: "permission_denied")
        expectError(s.rtdb("--url", server.url, "get", "/s403"), status: 4, code: "permission_denied")
        expectError(s.rtdb("--url", server.url, "get", "/s404"), status: 6, code: "unavailable")
        let r = s.rtdb("--url", server.url, "get", "/s400")
        #expect(r.error?.message.contains("message for 400") == true)
    }

    @Test func idempotentRequestsAreRetriedAndOthersAreNot() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        expectError(s.rtdb("--url", server.url, "get", "/s500"), status: 6, code: "unavailable")
        expectError(s.rtdb("--url", server.url, "increment", "/s500"), status: 6, code: "unavailable")
        expectLines(s.rtdb("--url", server.url, "get", "/flaky"), [#""recovered""#])
        let methods = server.requests.map { "\($0["m"] ?? "") \($0["p"] ?? "")" }
        #expect(methods.filter { $0.hasPrefix("GET /s500") }.count == 4)
        #expect(methods.filter { $0.hasPrefix("PUT /s500") }.count == 1)
    }

    @Test func tooManyRequestsWaitsForRetryAfter() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        let r = s.rtdb("--url", server.url, "get", "/limited")
        expectLines(r, [#""later""#])
        #expect(r.elapsed >= 0.9)
    }

    @Test func timeoutBoundsEachRequest() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        let r = s.rtdb("--url", server.url, "--timeout", "0.5", "get", "/slow")
        expectError(r, status: 6, code: "timeout")
        #expect(r.elapsed < 2.5)
    }

    @Test func redirectsKeepTheCredential() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        expectLines(s.rtdb("--url", server.url, "--access-token", "tok", "get", "/moved"), [#""Bearer tok""#])
        // Plain-http emulator URLs with no credential send the emulator's admin token.
        expectLines(s.rtdb("--url", server.url, "get", "/target"), [#""Bearer owner""#])
    }

    @Test func aServerRefusingFormatExportOnAStreamIsAskedWithoutIt() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        let r = s.rtdb(["--url", server.url, "watch", "/noexport", "--count", "1"], timeout: 30)
        expectLines(r, [#"{"event":"value","path":"/noexport","value":{"a":1}}"#])
        let streams = server.requests.compactMap { $0["p"] as? String }.filter { $0.hasPrefix("/noexport.json") }
        #expect(streams.count == 2, "\(streams)")
        #expect(streams.first?.contains("format=export") == true && streams.last?.contains("format=export") == false, "\(streams)")
    }

    @Test func aStreamReconnectsAndResynchronisesWithoutDuplicates() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        // 1st connection: {a:1}, then b=2, then it drops; 2nd: cancel; 3rd: {a,b,c} then a removed.
        let r = s.rtdb(["--url", server.url, "watch", "/stream", "--child-events", "--count", "4"], timeout: 30)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == [
            #"{"event":"child_added","path":"/stream","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_added","path":"/stream","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_added","path":"/stream","key":"c","prev":"b","value":3}"#,
            #"{"event":"child_removed","path":"/stream","key":"a","value":1}"#,
        ].map { $0 + "\n" }.joined(), "\(r)")
        #expect(server.requests.filter { ($0["p"] as? String)?.hasPrefix("/stream.json") == true }.count == 3)
        // Said once when the stream was lost and once when it was back (the cancelled second
        // connection never got in step: no line for it).
        let said = r.stderr.split(separator: "\n").compactMap { object(String($0)) }
        #expect(said.count == 2, "\(r)")
        let lost = said.first?["disconnected"] as? [String: Any]
        #expect(lost?["url"] as? String == server.url && lost?["reason"] as? String == "the server closed the stream", "\(r)")
        let back = said.last?["reconnected"] as? [String: Any]
        #expect(back?["url"] as? String == server.url && back?["after_ms"] is NSNumber, "\(r)")
    }

    @Test func aRevokedCredentialEndsTheWatchWithStatus4() throws {
        let s = Sandbox()
        let server = try #require(ScriptedServer(s))
        let r = s.rtdb(["--url", server.url, "--auth", "t0ken", "watch", "/revoked"], timeout: 30)
        #expect(r.status == 4, "\(r)")
        #expect(r.stdout == #"{"event":"value","path":"/revoked","value":1}"# + "\n")
        #expect(r.error?.code == "permission_denied")
        #expect(!r.stderr.contains("t0ken"))
    }
}

@Suite struct RemoteWatchTests {
    @Test func writesFromOtherProcessesReachARemoteWatch() throws {
        let s = Sandbox()
        s.seed("/room", #"{"a":1}"#)
        let server = try #require(ServeProcess(s))
        let watch = try #require(s.background([Binary.rtdb, "--url", remoteURL(server), "watch", "/room", "--child-events", "--count", "4"], name: "watch"))
        defer { watch.killGroup() }
        #expect(waitFor(watch, #""key":"a""#))
        s.seed("/room/b", "2")                                   // a local write to the same file
        #expect(waitFor(watch, #""key":"b""#))
        #expect(s.rtdb("--url", remoteURL(server), "update", "/room", #"{"a":5,"c":3}"#, "-q").status == 0)
        #expect(watch.wait(timeout: 20) == 0)
        #expect(watch.stdout.split(separator: "\n").map(String.init) == [
            #"{"event":"child_added","path":"/room","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_added","path":"/room","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_added","path":"/room","key":"c","prev":"b","value":3}"#,
            #"{"event":"child_changed","path":"/room","key":"a","prev":null,"value":5}"#,
        ])
    }

    @Test func aRestartedServerIsResynchronised() throws {
        let s = Sandbox()
        s.seed("/r", #"{"a":1}"#)
        var server: ServeProcess? = ServeProcess(s)
        let port = String(server?.url.split(separator: ":").last ?? "")
        let url = "http://127.0.0.1:\(port)?ns=test"
        let watch = try #require(s.background([Binary.rtdb, "--url", url, "watch", "/r", "--child-events", "--count", "3"], name: "watch"))
        defer { watch.killGroup() }
        #expect(waitFor(watch, #""key":"a""#))
        server = nil                                           // the server goes away …
        s.seed("/r/b", "2")                                    // … changes happen meanwhile …
        s.seed("/r/a", "null")
        let again = s.background([Binary.rtdb, "serve", "--port", port], name: "serve2")
        defer { again?.killGroup() }
        #expect(watch.wait(timeout: 30) == 0, "\(watch.stderr)")
        #expect(watch.stdout.split(separator: "\n").map(String.init) == [
            #"{"event":"child_added","path":"/r","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_removed","path":"/r","key":"a","value":1}"#,
            #"{"event":"child_added","path":"/r","key":"b","prev":null,"value":2}"#,
        ])
        #expect(server == nil)
    }

    @Test func localCommandsLoadNoNetworkOrTLSLibrary() {
        let s = Sandbox()
        let r = s.rtdb(["get", "/x"], env: ["LD_DEBUG": "libs"])
        #expect(r.status == 0)
        #expect(!r.stderr.contains("libssl") && !r.stderr.contains("libcrypto") && !r.stderr.contains("libcurl"))
        #expect(r.stderr.contains("libsqlite3") || r.stderr.isEmpty)
    }
}
