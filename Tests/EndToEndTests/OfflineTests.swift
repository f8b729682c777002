import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb serve` on a port that survives restarts: started on a free port, killed with
/// `kill -9`, started again on the same port.
final class RestartableServer {
    let sandbox: Sandbox
    let file: String
    let extra: [String]
    private(set) var port = 0
    private(set) var child: Child?
    private var starts = 0

    init?(_ sandbox: Sandbox, file: String, _ extra: [String] = []) {
        self.sandbox = sandbox
        self.file = file
        self.extra = extra
        guard start() else { return nil }
    }

    var url: String { "http://127.0.0.1:\(port)?ns=t" }

    /// Starts the server (on port 0 the first time, then on the same port) and waits for its
    /// listening line; retries while the port is not free yet.
    @discardableResult
    func start() -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            starts += 1
            guard let c = sandbox.background([Binary.rtdb, "serve", "--db", file, "--port", String(port)] + extra,
                                             name: "serve\(starts)") else { return false }
            let lineDeadline = Date().addingTimeInterval(10)
            while Date() < lineDeadline && c.isRunning {
                if let first = c.stdout.split(separator: "\n").first, let obj = object(String(first)), let u = obj["url"] as? String,
                   let p = Int(u.split(separator: ":").last ?? "") {
                    port = p
                    child = c
                    return true
                }
                usleep(5_000)
            }
            c.killGroup()
            _ = c.wait(timeout: 5)
            usleep(200_000)
        }
        return false
    }

    func kill9() {
        guard let c = child else { return }
        c.killGroup(SIGKILL)
        _ = c.wait(timeout: 10)
        child = nil
    }

    deinit { kill9() }
}

/// A JWT without a signature (what `rtdb serve` accepts without --project-id), for `sub`
/// expiring at `exp` (seconds).
func mockToken(sub: String, exp: Int64) -> String {
    func b64(_ s: String) -> String {
        Data(s.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    return b64(#"{"alg":"none","typ":"JWT"}"#) + "." + b64(#"{"sub":"\#(sub)","exp":\#(exp)}"#) + "."
}

/// The offline cache,
/// through the binary against `rtdb serve`.
@Suite(.serialized) struct OfflineTests {
    let s = Sandbox()
    var serverFile: String { s.dir + "/S.db" }
    var cacheFile: String { s.dir + "/C.db" }

    /// `$R …`: the remote database through the cache file.
    func r(_ server: RestartableServer, _ args: [String], stdin: Input = .none, env: [String: String?] = [:]) -> RunResult {
        s.rtdb(["--url", server.url, "--cache", cacheFile] + args, stdin: stdin, env: env, timeout: 120)
    }

    /// What the server's file holds at `path` (read as an embedded file).
    func server(_ path: String) -> String {
        let r = s.rtdb("--db", serverFile, "get", path)
        return r.stdout.trimmingCharacters(in: .newlines)
    }

    func lines(_ r: RunResult) -> [[String: Any]] { r.stdout.split(separator: "\n").compactMap { object(String($0)) } }

    @Test func scenario1QueueAndFlush() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectLines(r(srv, ["set", "/a", "1"]), [#"{"path":"/a","value":1}"#])
        srv.kill9()
        let queued = r(srv, ["set", "/b", "2"])
        #expect(queued.status == 0, "\(queued)")
        let line = try #require(lines(queued).first)
        #expect(line["queued"] as? Bool == true && line["value"] as? Int == 2 && line["id"] != nil, "\(queued)")
        #expect(["offline", "timeout"].contains(line["reason"] as? String ?? ""), "\(queued)")
        #expect(lines(r(srv, ["queue"])).count == 1)
        expectLines(r(srv, ["get", "/b"]), ["2"])   // a pending set is complete
        #expect(server("/b") == "null")
        #expect(srv.start())
        let sync = r(srv, ["sync"])
        #expect(sync.status == 0, "\(sync)")
        let events = lines(sync)
        #expect(events.first?["event"] as? String == "acked" && events.first?["path"] as? String == "/b", "\(sync)")
        #expect(events.last?["event"] as? String == "synced" && events.last?["pending"] as? Int == 0, "\(sync)")
        #expect(server("/b") == "2")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
    }

    @Test func scenario2OrderAcrossProcesses() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        #expect(r(srv, ["set", "/l", #"{"x":1}"#]).status == 0)
        #expect(r(srv, ["set", "/l/y", "2"]).status == 0)
        #expect(r(srv, ["update", "/l", #"{"x":3}"#]).status == 0)
        #expect(srv.start())
        let sync = r(srv, ["sync"])
        #expect(sync.status == 0, "\(sync)")
        let acked = lines(sync).filter { $0["event"] as? String == "acked" }.compactMap { $0["id"] as? Int }
        #expect(acked.count == 3 && acked == acked.sorted(), "\(sync)")
        #expect(server("/l") == #"{"x":3,"y":2}"#)
    }

    /// Scenario 3 without its `watch` line (a watcher of the cache showing the revert belongs to
    /// watch-from-cache).
    @Test func scenario3RejectionIsRevertedAndLogged() throws {
        let rules = s.write("rules.json", #"{"rules":{".read":true,"open":{".write":true},"locked":{".write":false}}}"#)
        let srv = try #require(RestartableServer(s, file: serverFile, ["--rules", rules]))
        let auth = ["--auth", mockToken(sub: "alice", exp: 4_102_444_800)]
        srv.kill9()
        let x = r(srv, auth + ["set", "/locked/x", "1"])
        #expect(lines(x).first?["queued"] as? Bool == true, "\(x)")
        // Only the child is known: --partial shows it (status 10).
        let shown = r(srv, auth + ["--offline", "get", "/locked", "--partial"])
        #expect(shown.status == 10 && shown.stdout == "{\"x\":1}\n", "\(shown)")
        #expect(r(srv, auth + ["set", "/open/y", "1"]).status == 0)
        #expect(srv.start())
        let sync = r(srv, auth + ["sync"])
        #expect(sync.status == 4, "\(sync)")
        let events = lines(sync)
        #expect(events.count == 3, "\(sync)")
        #expect(events.first?["event"] as? String == "rejected" && events.first?["path"] as? String == "/locked/x"
                && events.first?["error"] as? String == "permission_denied", "\(sync)")
        #expect(events.dropFirst().first?["event"] as? String == "acked", "\(sync)")
        #expect(sync.stderr.contains("permission_denied"))
        let rejected = lines(r(srv, auth + ["queue", "--rejected"]))
        #expect(rejected.count == 1 && rejected.first?["path"] as? String == "/locked/x" && rejected.first?["error"] as? String == "permission_denied")
        // Reverted: the cache no longer shows it; the server never had it.
        let reverted = r(srv, auth + ["--offline", "get", "/locked/x", "--partial"])
        #expect(reverted.status == 10 && reverted.stdout == "null\n", "\(reverted)")
        #expect(server("/locked") == "null" && server("/open/y") == "1")
        // Online, a refused write is an error at once and leaves nothing queued.
        let refused = r(srv, auth + ["set", "/locked/z", "1"])
        expectError(refused, status: 4, code: "permission_denied")
        #expect(r(srv, auth + ["queue"]).stdout.isEmpty)
    }

    /// Scenario 4's reads (the `watch` lines belong to watch-from-cache).
    @Test func scenario4QueriesFromTheCache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        #expect(s.rtdb("--db", serverFile, "set", "/scores", #"{"bruhathkayosaurus":55,"lambeosaurus":21,"linhenykus":80,"pterodactyl":93,"stegosaurus":5,"triceratops":22}"#).status == 0)
        let q4 = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "4"])
        #expect(lines(q4).compactMap { $0["key"] as? String } == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"], "\(q4)")
        srv.kill9()
        // limitToLast(2) lies inside the cached limitToLast(4) of the same order: answered whole
        // (--partial too, with status 0).
        let q2 = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "2"])
        #expect(q2.status == 0, "\(q2)")
        #expect(lines(q2).compactMap { $0["key"] as? String } == ["linhenykus", "pterodactyl"])
        let whole = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "2", "--partial"])
        #expect(whole.status == 0 && whole.stdout == q2.stdout, "\(whole)")
        // limitToLast(6) reaches past it: no stdout, 6; with --partial the known four, 10.
        let q6 = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "6"])
        expectError(q6, status: 6, code: "unavailable")
        #expect(q6.stdout.isEmpty)
        let partial = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "6", "--partial"])
        #expect(partial.status == 10, "\(partial)")
        #expect(lines(partial).compactMap { $0["key"] as? String } == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"])
        #expect(partial.stderr.contains("incomplete"))
        // Another order knows nothing of that window.
        expectError(r(srv, ["query", "/scores", "--order-by-key", "--limit-to-last", "2"]), status: 6, code: "unavailable")
        // A range inside a cached range, offline.
        #expect(r(srv, ["--offline", "query", "/scores", "--order-by-value", "--start-at", "50"]).status == 0)
        #expect(srv.start())
        #expect(r(srv, ["query", "/scores", "--order-by-value", "--start-at", "10", "--end-at", "60"]).status == 0)
        srv.kill9()
        let range = r(srv, ["query", "/scores", "--order-by-value", "--start-at", "20", "--end-at", "56"])
        #expect(range.status == 0, "\(range)")
        #expect(lines(range).compactMap { $0["key"] as? String } == ["lambeosaurus", "triceratops", "bruhathkayosaurus"])
        expectError(r(srv, ["query", "/scores", "--order-by-value", "--start-at", "20", "--end-at", "70"]), status: 6, code: "unavailable")
        let again = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "4"])
        #expect(again.status == 0, "\(again)")
        #expect(lines(again).count == 4)
        // A tracked key is complete by itself; the whole location is not.
        expectLines(r(srv, ["--offline", "get", "/scores/linhenykus"]), ["80"])
        expectError(r(srv, ["--offline", "get", "/scores"]), status: 6, code: "unavailable")
    }

    @Test func scenario9TwoFlushersSendEachRowOnce() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        for _ in 0..<20 { #expect(r(srv, ["--offline", "increment", "/n"]).status == 0) }
        #expect(srv.start())
        let a = s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync"], name: "sync-a")
        let b = s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync"], name: "sync-b")
        let (ca, cb) = (try #require(a), try #require(b))
        #expect(ca.wait(timeout: 120) == 0, "\(ca.stdout)\(ca.stderr)")
        #expect(cb.wait(timeout: 120) == 0, "\(cb.stdout)\(cb.stderr)")
        #expect(server("/n") == "20")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
    }

    @Test func scenario10CrashDuringFlush() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        // 50 increments of one counter go one request each (they overlap), so the first sync is
        // still sending when it is killed at its first acknowledgement.
        for _ in 0..<50 { #expect(r(srv, ["--offline", "increment", "/m"]).status == 0) }
        #expect(srv.start())
        let first = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync"], name: "sync-crash"))
        #expect(eventually { first.stdout.contains("\"acked\"") || !first.isRunning })
        first.killGroup(SIGKILL)
        _ = first.wait(timeout: 10)
        let second = r(srv, ["sync"])
        #expect(second.status == 0, "\(second)")
        #expect(lines(second).contains { $0["event"] as? String == "acked" }, "the kill did not land mid-flush: \(first.stdout)")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
        let resent = first.stdout.contains("\"resent\":true") || second.stdout.contains("\"resent\":true")
        let m = server("/m")
        #expect(m == "50" || (m == "51" && resent), "server /m = \(m); first: \(first.stdout) second: \(second.stdout)")
    }

    @Test func scenario11AnExpiredTokenPausesTheQueue() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        let old = mockToken(sub: "joe", exp: 1_000_000_000)
        let fresh = mockToken(sub: "joe", exp: 4_102_444_800)
        let e = r(srv, ["--auth", old, "set", "/e", "1"])
        #expect(e.status == 0, "\(e)")
        #expect(lines(e).first?["reason"] as? String == "unauthenticated", "\(e)")
        #expect(server("/e") == "null")
        let stuck = r(srv, ["--auth", old, "sync"])
        #expect(stuck.status == 4 && stuck.stderr.contains("\"unauthenticated\""), "\(stuck)")
        #expect(lines(stuck).last?["pending"] as? Int == 1)
        #expect(lines(r(srv, ["queue"])).count == 1)
        let sync = r(srv, ["--auth-command", "printf %s \"$FRESH\"", "sync"], env: ["FRESH": fresh])
        #expect(sync.status == 0, "\(sync)")
        #expect(lines(sync).first?["event"] as? String == "acked")
        #expect(server("/e") == "1")
    }

    /// An option beats a variable: --auth-command on the command line wins over RTDB_AUTH.
    @Test func anAuthCommandOptionBeatsACredentialVariable() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        let old = mockToken(sub: "joe", exp: 1_000_000_000)
        let fresh = mockToken(sub: "joe", exp: 4_102_444_800)
        let e = r(srv, ["set", "/e", "1"], env: ["RTDB_AUTH": old])
        #expect(lines(e).first?["reason"] as? String == "unauthenticated", "\(e)")
        let sync = r(srv, ["--auth-command", "printf %s \"$FRESH\"", "sync"], env: ["FRESH": fresh, "RTDB_AUTH": old])
        #expect(sync.status == 0, "\(sync)")
        #expect(server("/e") == "1")
    }

    /// Scenario 11 against a server that checks signed ID tokens (RS256, --project-id, --jwks):
    /// an expired token pauses the queue before anything is sent, a token the server refuses
    /// (401, not "Permission denied") pauses it after; a fresh token from --auth-command sends
    /// both.
    @Test func scenario11WithSignedTokens() throws {
        let pki = s.dir + "/pki"
        let made = s.program(["/bin/sh", ServeTLSTests.script, pki])
        try #require(made.status == 0, "making keys: \(made)")
        let python = try #require(Binary.onPath("python3"))
        let t = s.program([python, "-c", SignedTokenTests.tokens, pki + "/rsa.key", pki + "/rsa.pub", s.dir])
        try #require(t.status == 0, "making tokens: \(t)")
        let tokens = try #require(object(t.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) as? [String: String])
        let rules = s.write("rules.json", #"{"rules":{"users":{"$uid":{".read":"auth != null && auth.uid == $uid",".write":"auth != null && auth.uid == $uid"}}}}"#)
        let srv = try #require(RestartableServer(s, file: serverFile, ["--rules", rules, "--project-id", "demo-proj", "--jwks", s.dir + "/jwks.json"]))
        let expired = r(srv, ["--auth", tokens["expired"] ?? "", "set", "/users/u1/e", "1"])
        #expect(lines(expired).first?["reason"] as? String == "unauthenticated", "\(expired)")
        let refused = r(srv, ["--auth", tokens["unknownKey"] ?? "", "set", "/users/u1/f", "2"])
        #expect(refused.status == 0 && lines(refused).first?["reason"] as? String == "unauthenticated", "\(refused)")
        #expect(server("/users") == "null")
        let rows = lines(r(srv, ["queue"]))
        #expect(rows.count == 2 && rows.allSatisfy { $0["principal"] as? String == "uid:u1" && $0["state"] as? String == "pending" }, "\(rows)")
        let sync = r(srv, ["--auth-command", "printf %s \"$GOOD\"", "sync"], env: ["GOOD": tokens["good"]])
        #expect(sync.status == 0, "\(sync)")
        #expect(lines(sync).filter { $0["event"] as? String == "acked" }.count == 2)
        #expect(!sync.stdout.contains("resent"), "a refused request was never applied: \(sync)")
        #expect(server("/users/u1") == #"{"e":1,"f":2}"#)
    }

    @Test func aWriteMadeWithAnotherCredentialStopsTheFlush() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        #expect(r(srv, ["--auth", mockToken(sub: "ann", exp: 4_102_444_800), "set", "/p", "1"]).status == 0)
        #expect(srv.start())
        let other = r(srv, ["--auth", mockToken(sub: "bob", exp: 4_102_444_800), "sync"])
        #expect(other.status == 4 && other.stderr.contains("\"principal_mismatch\""), "\(other)")
        #expect(server("/p") == "null")
        #expect(lines(r(srv, ["queue"])).count == 1)
    }

    @Test func scenario12TransactionsAreNeverQueuedAndOnlineNeedsTheServer() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let tx = r(srv, ["tx", "/k", "--", "sh", "-c", "read v; echo $((${v#null} + 1))"])
        expectError(tx, status: 6, code: "unavailable")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
        let waiting = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "tx", "--wait", "60", "/k", "--",
                                                  "sh", "-c", "read v; echo $((${v#null} + 1))"], name: "tx-wait"))
        usleep(500_000)
        #expect(srv.start())
        #expect(waiting.wait(timeout: 90) == 0, "\(waiting.stdout)\(waiting.stderr)")
        #expect(object(waiting.stdout.trimmingCharacters(in: .newlines))?["committed"] as? Bool == true, "\(waiting.stdout)")
        #expect(server("/k") == "1")
        srv.kill9()
        expectError(r(srv, ["--online", "set", "/x", "1"]), status: 6, code: "unavailable")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
        expectError(r(srv, ["--offline", "tx", "/k", "--", "cat"]), status: 6, code: "unavailable")
    }

    @Test func scenario13AQueuedServerTimestampIsResolvedWhenSent() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let t0 = nowMillis()
        let queued = r(srv, ["set", "/t", "--server-timestamp"])
        let line = try #require(lines(queued).first)
        #expect(line["queued"] as? Bool == true && line["estimated"] as? Bool == true, "\(queued)")
        let estimate = (line["value"] as? NSNumber)?.int64Value ?? 0
        #expect(abs(estimate - t0) < 10_000, "\(queued)")
        usleep(2_000_000)
        #expect(srv.start())
        let t1 = nowMillis()
        #expect(r(srv, ["sync"]).status == 0)
        let stored = Int64(server("/t")) ?? 0
        #expect(stored >= t1 - 1000 && stored > t0 + 1500, "stored \(stored), t0 \(t0), t1 \(t1)")
    }

    @Test func pushKeysAreMadeLocallyAndKeptWhenSent() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let pushed = r(srv, ["push", "/msgs", #"{"t":"hi"}"#])
        let key = try #require(lines(pushed).first?["key"] as? String)
        #expect(isPushID(key))
        let many = r(srv, ["push", "/msgs", "--lines"], stdin: .text("1\n2\n"))
        #expect(lines(many).count == 2 && lines(many).allSatisfy { $0["queued"] as? Bool == true }, "\(many)")
        #expect(srv.start())
        #expect(r(srv, ["sync"]).status == 0)
        let stored = try #require(object(server("/msgs")))
        #expect(stored.count == 3 && stored[key] != nil)
    }

    @Test func aFullFlushOfManyRowsKeepsEveryWrite() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let script = "for i in $(seq 1 150); do \"$RTDB\" --url \"$U\" --cache \"$C\" --offline -q set /many/k$i $i || exit 1; done"
        #expect(s.program(["sh", "-c", script], env: ["U": srv.url, "C": cacheFile], timeout: 300).status == 0)
        #expect(lines(r(srv, ["queue"])).count == 150)
        #expect(srv.start())
        let sync = r(srv, ["sync"])
        #expect(sync.status == 0)
        #expect(lines(sync).last?["acked"] as? Int == 150, "\(sync.stdout.suffix(200))")
        let stored = try #require(object(server("/many")))
        #expect(stored.count == 150 && stored["k150"] as? Int == 150)
    }

    @Test func twoProcessesQueueIntoOneCacheAtOnce() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let script = "for i in $(seq 1 15); do \"$RTDB\" --url \"$U\" --cache \"$C\" --offline -q set /w/$W$i $i || exit 1; done"
        let a = try #require(s.background(["sh", "-c", script], name: "wa", env: ["U": srv.url, "C": cacheFile, "W": "a"]))
        let b = try #require(s.background(["sh", "-c", script], name: "wb", env: ["U": srv.url, "C": cacheFile, "W": "b"]))
        #expect(a.wait(timeout: 120) == 0, "\(a.stderr)")
        #expect(b.wait(timeout: 120) == 0, "\(b.stderr)")
        let ids = lines(r(srv, ["queue"])).compactMap { $0["id"] as? Int }
        #expect(ids.count == 30 && Set(ids).count == 30 && ids == ids.sorted())
        #expect(srv.start())
        #expect(r(srv, ["sync"]).status == 0)
        #expect((try #require(object(server("/w")))).count == 30)
    }

    @Test func queueDropAndClear() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        for v in ["1", "2", "3"] { #expect(r(srv, ["--offline", "set", "/d/\(v)", v]).status == 0) }
        let ids = lines(r(srv, ["queue"])).compactMap { $0["id"] as? Int }
        #expect(ids.count == 3)
        expectError(r(srv, ["queue", "drop", String(ids[0]), "999999"]), status: 3, code: "not_found")
        #expect(lines(r(srv, ["queue"])).count == 3, "an unknown id drops nothing")
        expectLines(r(srv, ["queue", "drop", String(ids[0])]), [#"{"event":"dropped","id":\#(ids[0]),"path":"/d/1"}"#])
        expectError(r(srv, ["queue", "drop", "x"]), status: 2, code: "usage")
        #expect(lines(r(srv, ["queue", "clear"])).count == 2)
        #expect(r(srv, ["queue"]).stdout.isEmpty)
        expectError(r(srv, ["--offline", "get", "/d"]), status: 6, code: "unavailable")
    }

    @Test func badInputIsAUsageErrorAndChangesNothing() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectError(r(srv, ["--cache-size", "1000", "get", "/"]), status: 2, code: "usage")
        expectError(r(srv, ["--cache-size", "104857601", "get", "/"]), status: 2, code: "usage")
        expectError(r(srv, ["--get", "/"]), status: 2, code: "usage")
        expectError(r(srv, ["--connect-timeout", "-1", "get", "/"]), status: 2, code: "usage")
        expectError(r(srv, ["--offline", "--online", "get", "/"]), status: 2, code: "usage")
        expectError(s.rtdb(["--url", srv.url, "--cache-size", "x", "--persist", "get", "/"]), status: 2, code: "usage")
        expectError(s.rtdb(["--url", srv.url, "get", "/"], env: ["RTDB_CACHE_SIZE": "5", "RTDB_PERSIST": "1"]), status: 2, code: "usage")
        // The cache of another database, and a --db write into a cache file.
        #expect(r(srv, ["set", "/a", "1"]).status == 0)
        let other = s.rtdb(["--url", "http://127.0.0.1:\(srv.port)?ns=other", "--cache", cacheFile, "get", "/a"])
        expectError(other, status: 2, code: "usage")
        expectError(s.rtdb("--db", cacheFile, "set", "/x", "1"), status: 2, code: "usage")
        // A bad value queues nothing.
        expectError(r(srv, ["--offline", "set", "/a", "{bad"]), status: 3, code: "invalid_json")
        expectError(r(srv, ["queue", "frobnicate"]), status: 2, code: "usage")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
        // queue and sync need a cache.
        expectError(s.rtdb(["--url", srv.url, "queue"]), status: 2, code: "usage")
        // On the embedded file the options are a usage error; their variables change nothing.
        expectError(s.rtdb("--persist", "--offline", "--cache-size", "1", "set", "/e", "1"), status: 2, code: "usage")
        expectLines(s.rtdb(["set", "/e", "1"], env: ["RTDB_PERSIST": "1", "RTDB_OFFLINE": "1", "RTDB_CACHE_SIZE": "1"]),
                    [#"{"path":"/e","value":1}"#])
    }

    @Test func syncFollowSendsNewWritesAsTheServerComesAndGoes() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        let follow = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync", "--follow"], name: "follow"))
        #expect(eventually { follow.stdout.contains("\"disconnected\"") }, "\(follow.stdout)\(follow.stderr)")
        #expect(r(srv, ["--offline", "set", "/f/a", "1"]).status == 0)
        #expect(srv.start())
        #expect(eventually(60) { follow.stdout.contains("\"connected\"") && follow.stdout.contains("\"acked\"") }, "\(follow.stdout)")
        #expect(eventually { server("/f/a") == "1" })
        // A write queued while it runs is sent too.
        #expect(r(srv, ["--offline", "set", "/f/b", "2"]).status == 0)
        #expect(eventually { server("/f/b") == "2" }, "\(follow.stdout)")
        kill(follow.pid, SIGTERM)
        #expect(follow.wait(timeout: 30) == 0, "\(follow.stdout)\(follow.stderr)")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
    }

    /// `sync` reads each kept location again (the rows of `cache_keep` are made by `keep`;
    /// here one is put in with sqlite3).
    @Test func syncRefreshesKeptLocations() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        #expect(s.rtdb("--db", serverFile, "set", "/kept", #"{"a":1}"#).status == 0)
        #expect(r(srv, ["set", "/other", "1"]).status == 0)   // creates the cache file
        let sql = s.program(["sqlite3", cacheFile, "INSERT INTO cache_keep(path, params) VALUES('/kept', '{}')"])
        #expect(sql.status == 0, "\(sql)")
        let sync = r(srv, ["sync"])
        #expect(sync.status == 0, "\(sync)")
        let refreshed = lines(sync).first { $0["event"] as? String == "refreshed" }
        #expect(refreshed?["path"] as? String == "/kept", "\(sync)")
        #expect(lines(r(srv, ["sync", "--writes-only"])).allSatisfy { $0["event"] as? String != "refreshed" })
        srv.kill9()
        expectLines(r(srv, ["--offline", "get", "/kept"]), [#"{"a":1}"#])
    }

    @Test func infoWithACache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectLines(r(srv, ["get", "/.info/connected"]), ["true"])
        let offset = r(srv, ["get", "/.info/serverTimeOffset"])
        #expect(offset.status == 0, "\(offset)")
        let measured = Int(offset.stdout.trimmingCharacters(in: .newlines)) ?? Int.max
        #expect(abs(measured) < 2000, "\(offset)")
        // --offline: not connected; the offset measured last is kept.
        expectLines(r(srv, ["--offline", "get", "/.info/connected"]), ["false"])
        expectLines(r(srv, ["--offline", "get", "/.info/serverTimeOffset"]), ["\(measured)"])
    }

    /// Scenario 6 through the cache: `watch /.info/connected` follows the connection (never
    /// the cache), and the offset of a killed server is null.
    @Test func scenario6WithACache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        let w = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "watch", "/.info/connected"], name: "info"))
        defer { w.killGroup() }
        func values() -> [Bool] { w.stdout.split(separator: "\n").compactMap { object(String($0))?["value"] as? Bool } }
        #expect(eventually { values() == [false, true] }, "\(w.stdout)")
        srv.kill9()
        #expect(eventually(10) { values() == [false, true, false] }, "\(w.stdout)")
        expectLines(r(srv, ["get", "/.info/serverTimeOffset"]), ["null"])
        #expect(srv.start())
        #expect(eventually(60) { values() == [false, true, false, true] }, "\(w.stdout)")
        expectLines(s.rtdb("--db", s.dir + "/E.db", "get", "/.info/connected"), ["true"])
    }

    /// Each option's environment variable: RTDB_CACHE names the file (no --persist needed),
    /// RTDB_OFFLINE queues without contacting the server, RTDB_CONNECT_TIMEOUT is checked and
    /// named in its error, RTDB_AUTH_COMMAND supplies the credential.
    @Test func environmentVariablesSetTheOptions() throws {
        let srv = try #require(RestartableServer(s, file: serverFile, ["--secret", "env-secret-1"]))
        let env: [String: String?] = ["RTDB_URL": srv.url, "RTDB_CACHE": cacheFile]
        // Without a credential the secret server refuses the write; it is not queued.
        expectError(s.rtdb(["set", "/a", "1"], env: env), status: 4, code: "permission_denied")
        #expect(s.exists(cacheFile))
        #expect(!s.exists(s.dir + "/xdg/rtdb/remote"))
        var auth = env
        auth["RTDB_AUTH_COMMAND"] = "printf %s env-secret-1"
        expectLines(s.rtdb(["set", "/a", "1"], env: auth), [#"{"path":"/a","value":1}"#])
        #expect(server("/a") == "1")
        var offline = auth
        offline["RTDB_OFFLINE"] = "1"
        let queued = s.rtdb(["set", "/b", "2"], env: offline)
        #expect(lines(queued).first?["reason"] as? String == "offline", "\(queued)")
        #expect(server("/b") == "null")
        var bad = auth
        bad["RTDB_CONNECT_TIMEOUT"] = "soon"
        let refused = s.rtdb(["get", "/a"], env: bad)
        expectError(refused, status: 2, code: "usage")
        #expect(refused.stderr.contains("RTDB_CONNECT_TIMEOUT"))
        expectError(s.rtdb(["--auth-command", "", "get", "/a"], env: env), status: 2, code: "usage")
        let sync = s.rtdb(["sync"], env: auth)
        #expect(sync.status == 0, "\(sync)")
        #expect(server("/b") == "2")
    }

    /// Credentials never reach the cache file: queued and acknowledged writes made with a
    /// secret, an ID token and an --auth-command token leave none of them in the file (or
    /// its WAL), only the principal's name.
    @Test func credentialsAreNeverStoredInTheCache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        let token = mockToken(sub: "user-7", exp: 4_000_000_000)
        let secrets = ["plain-secret-XYZ", token, "command-token-QRS"]
        #expect(r(srv, ["--auth", secrets[0], "set", "/a", "1"]).status == 0)
        #expect(r(srv, ["--auth", token, "--offline", "set", "/b", "2"]).status == 0)
        #expect(r(srv, ["--auth-command", "printf %s \(secrets[2])", "get", "/a"]).status == 0)
        let queue = lines(r(srv, ["queue"]))
        #expect(queue.first?["principal"] as? String == "uid:user-7", "\(queue)")
        for file in [cacheFile, cacheFile + "-wal"] where s.exists(file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            for secret in secrets + [String(token.split(separator: ".")[1])] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds a credential")
            }
        }
    }

    /// `sync` with the server away: the queue stays, the last line says what is pending, and
    /// the status is 6.
    @Test func syncWithTheServerAwayIsUnavailable() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        #expect(r(srv, ["set", "/p", "1"]).status == 0)
        let sync = r(srv, ["sync"])
        #expect(sync.status == 6, "\(sync)")
        #expect(["unavailable", "timeout"].contains(sync.error?.code ?? ""), "\(sync)")
        let last = lines(sync).last
        #expect(last?["event"] as? String == "synced" && last?["pending"] as? Int == 1 && last?["acked"] as? Int == 0, "\(sync)")
        #expect(lines(r(srv, ["queue"])).count == 1)
    }

    @Test func onlineReadsNeedTheServer() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectLines(r(srv, ["set", "/o", "1"]), [#"{"path":"/o","value":1}"#])
        expectLines(r(srv, ["--online", "get", "/o"]), ["1"])
        srv.kill9()
        expectError(r(srv, ["--online", "get", "/o"]), status: 6, code: "unavailable")
        expectLines(r(srv, ["get", "/o"]), ["1"])   // auto mode: the cache answers
    }

    @Test func withoutPersistRemoteCommandsTouchNoCache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectLines(s.rtdb("--url", srv.url, "set", "/a", "1"), [#"{"path":"/a","value":1}"#])
        #expect(!s.exists(s.dir + "/xdg/rtdb/remote"))
        // --persist alone uses the default file in the XDG data folder.
        #expect(s.rtdb("--url", srv.url, "--persist", "get", "/a").stdout == "1\n")
        #expect(s.exists(s.dir + "/xdg/rtdb/remote/127.0.0.1%3A\(srv.port)_t.db"))
    }
}
