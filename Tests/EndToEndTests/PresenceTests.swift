import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Presence on a `--url` target (`rtdb serve` started by each test on a free port): `rtdb
/// session` over the realtime protocol, where the server runs the operations when the
/// connection ends; `--client-side` over REST; `watch /.info/connected`.
@Suite struct PresenceTests {
    func port(_ server: ServeProcess) -> Int { Int(server.url.split(separator: ":").last ?? "") ?? 0 }

    /// The presence children the watch of /users/joe shows last.
    func connections(_ watch: Child) -> [String: Any]? {
        (lastValue(watch) as? [String: Any])?["connections"] as? [String: Any]
    }

    /// The seed's presence system: a session with `-- sleep 30` killed with kill -9; a watch
    /// sees the server remove the child and set lastOnline within a second.
    func presenceSurvivesKill9(_ sb: Sandbox, url: String, extra: [String]) throws {
        let watch = try #require(sb.background([Binary.rtdb, "--url", url] + extra + ["watch", "/users/joe"], name: "watch"))
        #expect(eventually(20) { lines(watch.stdout).count == 1 }, "watch: \(watch.stdout) \(watch.stderr)")
        let events = sb.dir + "/events"
        let session = try #require(sb.background([Binary.rtdb, "--url", url] + extra
                                                  + ["session", "--presence", "/users/joe/connections", "--last-online",
                                                     "/users/joe/lastOnline", "--events", events, "--", "sleep", "30"], name: "session"))
        defer { session.killGroup() }
        var child = ""
        #expect(eventually(20) {
            guard let c = connections(watch), c.count == 1 else { return false }
            child = c.keys.first ?? ""
            return c.values.first as? Bool == true
        }, "watch: \(watch.stdout) session: \(session.stderr)")
        #expect(isPushID(child))
        #expect(eventually(10) { lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").count == 4 })
        let ev = lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "")
        #expect(ev.first?["event"] as? String == "connected" && !(ev.first?["session"] as? String ?? "").isEmpty, "\(ev)")
        #expect(ev.contains { $0["event"] as? String == "registered" && $0["op"] as? String == "remove"
                              && $0["path"] as? String == "/users/joe/connections/" + child }, "\(ev)")
        #expect(ev.contains { $0["event"] as? String == "registered" && $0["op"] as? String == "set"
                              && $0["path"] as? String == "/users/joe/lastOnline" }, "\(ev)")

        let killedAt = nowMillis()
        kill(session.pid, SIGKILL)
        let start = Spawn.now()
        #expect(eventually(10) {
            guard let v = lastValue(watch) as? [String: Any] else { return false }
            return v["connections"] == nil && v["lastOnline"] != nil
        }, "watch: \(watch.stdout)")
        let elapsed = Spawn.now() - start
        #expect(elapsed <= 1.0, "the watch saw the server's writes \(elapsed) s after the kill")
        let last = try #require(lastValue(watch) as? [String: Any])
        let lastOnline = try #require((last["lastOnline"] as? NSNumber)?.int64Value)
        #expect(lastOnline >= killedAt)
    }

    @Test func presenceOverWebSocketSurvivesKill9() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        try presenceSurvivesKill9(sb, url: remoteURL(server), extra: [])
    }

    @Test func presenceOverSecureWebSocketSurvivesKill9() throws {
        let sb = Sandbox()
        let tls = ServeTLSTests()
        let pki = tls.pki(sb)
        let server = try #require(tls.serve(sb, pki))
        #expect(server.url.hasPrefix("https://"))
        try presenceSurvivesKill9(sb, url: tls.localhost(server.url) + "?ns=test", extra: ["--cacert", pki + "/ca.pem"])
    }

    /// Later operations replace earlier ones at or below their path, a set below an earlier
    /// path changes that path's value; the server runs them when the session ends normally.
    @Test func laterOperationsReplaceEarlierOnesOnTheServer() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        let r = sb.rtdb("--url", url, "session",
                        "--on-disconnect-set", "/status/x", "\"offline\"", "--on-disconnect-remove", "/status",
                        "--on-disconnect-set", "/s", #"{"a":1,"b":2}"#, "--on-disconnect-set", "/s/b", "3",
                        "--on-disconnect-set", "/t", "1", "--on-disconnect-update", "/t", #"{"u":2}"#,
                        "--on-connect-set", "/status", #"{"x":"online","y":"kept?"}"#, "--", "true")
        #expect(r.status == 0, "\(r)")
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == #"{"s":{"a":1,"b":3},"t":{"u":2}}"# + "\n" },
                "\(sb.rtdb("--url", url, "get", "/"))")
    }

    /// kill -9 of the server loses the operations (as in Firebase); the session reconnects to
    /// the restarted server, registers again and writes a new presence child; killing the
    /// session then removes both children (the first registration is sent again too).
    @Test func reRegistersAfterTheServerRestarts() throws {
        let sb = Sandbox()
        let first = try #require(ServeProcess(sb, name: "serve1"))
        let p = port(first)
        let url = remoteURL(first)
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--presence", "/users/joe/connections",
                                                  "--last-online", "/users/joe/lastOnline"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(20) { lines(session.stdout).count == 4 }, "session: \(session.stdout) \(session.stderr)")
        let firstChild = (lines(session.stdout).last?["path"] as? String ?? "").split(separator: "/").last.map(String.init) ?? ""
        #expect(isPushID(firstChild))
        kill(first.child.pid, SIGKILL)
        _ = first.child.wait(timeout: 10)
        #expect(eventually(10) { lines(session.stdout).contains { $0["event"] as? String == "disconnected" } },
                "session: \(session.stdout)")
        let second = try #require(ServeProcess(sb, name: "serve2", port: p))
        #expect(eventually(30) { lines(session.stdout).filter { $0["event"] as? String == "connected" }.count == 2 },
                "session: \(session.stdout) \(session.stderr)")
        let sets = lines(session.stdout).filter { $0["event"] as? String == "set" }
        #expect(sets.count == 2)
        let secondChild = (sets.last?["path"] as? String ?? "").split(separator: "/").last.map(String.init) ?? ""
        #expect(isPushID(secondChild) && secondChild != firstChild)
        let children = sb.rtdb("--url", remoteURL(second), "get", "/users/joe/connections", "--shallow")
        #expect(object(children.stdout)?.keys.sorted() == [firstChild, secondChild].sorted(), "\(children)")

        let killedAt = nowMillis()
        kill(session.pid, SIGKILL)
        #expect(eventually(10) { sb.rtdb("--url", remoteURL(second), "get", "/users/joe/connections").stdout == "null\n" })
        let lastOnline = Int64(sb.rtdb("--url", remoteURL(second), "get", "/users/joe/lastOnline").stdout
                                  .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(lastOnline >= killedAt)
    }

    /// A server that cannot be reached at the start: CMD runs at once, and the registration
    /// and the presence child follow when the server comes up.
    @Test func offlineAtStartRunsTheCommandAndRegistersOnConnect() throws {
        let sb = Sandbox()
        let probe = try #require(ServeProcess(sb, name: "probe"))
        let p = port(probe)
        let url = remoteURL(probe)
        kill(probe.child.pid, SIGKILL)
        _ = probe.child.wait(timeout: 10)
        let marker = sb.dir + "/ran"
        let events = sb.dir + "/events"
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--presence", "/c", "--events", events,
                                                  "--", "sh", "-c", "touch \(marker); sleep 30"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { sb.exists(marker) })
        #expect(((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").isEmpty)
        let server = try #require(ServeProcess(sb, name: "serve", port: p))
        #expect(eventually(30) {
            (object(sb.rtdb("--url", remoteURL(server), "get", "/c").stdout)?.count ?? 0) == 1
        }, "session: \(session.stderr)")
        // The event line is written once the registration is answered, which another client
        // may see a moment before.
        #expect(eventually(10) {
            lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").first?["event"] as? String == "connected"
        }, "events: \((try? String(contentsOfFile: events, encoding: .utf8)) ?? "")")
    }

    /// Rules that deny the registration: exit 4 before CMD runs, nothing registered or written.
    @Test func aRefusedRegistrationEndsWithStatus4AndCMDDoesNotRun() throws {
        let sb = Sandbox()
        let rules = sb.write("rules.json", #"{"rules":{".read":true,"users":{".write":true},"locked":{".write":false}}}"#)
        let server = try #require(ServeProcess(sb, ["--rules", rules]))
        let url = remoteURL(server)
        // An unsigned ID token (serve without --project-id takes it as the emulator does).
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let token = part(#"{"alg":"none","typ":"JWT"}"#) + "." + part(#"{"sub":"joe","user_id":"joe","iat":1,"exp":9999999999}"#) + "."
        let marker = sb.dir + "/ran"
        let r = sb.rtdb("--url", url, "--auth", token, "session", "--presence", "/users/joe/connections",
                        "--on-disconnect-set", "/locked/x", "1", "--", "touch", marker)
        expectError(r, status: 4, code: "permission_denied")
        #expect(!sb.exists(marker))
        #expect(sb.rtdb("--url", url, "get", "/").stdout == "null\n")
        // The same session without the denied path works.
        let ok = sb.rtdb("--url", url, "--auth", token, "session", "--presence", "/users/joe/connections", "--", "touch", marker)
        #expect(ok.status == 0, "\(ok)")
        #expect(sb.exists(marker))
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == "null\n" })
        // An on-connect write the rules refuse after the presence child was written: status 4,
        // CMD not run, and closing the connection removes the child again.
        let late = sb.rtdb("--url", url, "--auth", token, "session", "--presence", "/users/joe/connections",
                           "--on-connect-set", "/locked/y", "1", "--", "touch", marker + "2")
        expectError(late, status: 4, code: "permission_denied")
        #expect(!sb.exists(marker + "2"))
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == "null\n" })
        // The same with --client-side over REST: a refused first write writes nothing at all.
        let rest = sb.rtdb("--url", url, "--auth", token, "session", "--client-side", "--on-connect-set", "/locked/z", "1",
                           "--last-online", "/users/joe/lastOnline", "--", "touch", marker + "3")
        expectError(rest, status: 4, code: "permission_denied")
        #expect(!sb.exists(marker + "3"))
        #expect(sb.rtdb("--url", url, "get", "/").stdout == "null\n")
    }

    /// over REST (`--transport rest`) a session is unsupported
    /// (7) and CMD does not run; with --client-side the session writes the child itself and
    /// makes its operations over REST when CMD ends.
    @Test func scenario7PresenceOverREST() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        let start = nowMillis()
        let marker = sb.dir + "/ran"
        let r = sb.rtdb("--url", url, "session", "--transport", "rest", "--presence", "/users/joe/connections",
                        "--last-online", "/users/joe/lastOnline", "--", "sh", "-c", "touch \(marker); sleep 1")
        expectError(r, status: 7, code: "unsupported")
        #expect(r.stderr.contains("--client-side"))
        #expect(!sb.exists(marker))

        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--transport", "rest", "--client-side",
                                                  "--presence", "/users/joe/connections", "--last-online", "/users/joe/lastOnline",
                                                  "--", "sleep", "3"], name: "session"))
        defer { session.killGroup() }
        var during: [String: Any]? = nil
        #expect(eventually(20) {
            during = object(sb.rtdb("--url", url, "get", "/users/joe/connections").stdout)
            return during?.count == 1
        })
        #expect(during?.values.first as? Bool == true && isPushID(during?.keys.first ?? ""))
        #expect(session.wait(timeout: 30) == 0, "\(session.stderr)")
        #expect(sb.rtdb("--url", url, "get", "/users/joe/connections").stdout == "null\n")
        let lastOnline = Int64(sb.rtdb("--url", url, "get", "/users/joe/lastOnline").stdout
                                  .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(lastOnline >= start)
    }

    /// --client-side without CMD: SIGTERM ends it normally and the operations run; after
    /// kill -9 the next rtdb process that opens the cache queues them (they are listed by
    /// `queue`) and a flush sends them; a server that is down at the end leaves them queued,
    /// which the `ended` line says.
    @Test func clientSideOperationsSurviveTheSessionsDeath() throws {
        let sb = Sandbox()
        var server = try #require(ServeProcess(sb, name: "serve"))
        let p = port(server)
        let url = remoteURL(server)
        let a = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--client-side", "--presence", "/a"], name: "a"))
        #expect(eventually(20) { lines(a.stdout).count == 3 }, "\(a.stdout) \(a.stderr)")
        kill(a.pid, SIGTERM)
        #expect(a.wait(timeout: 20) == 0)
        #expect(lines(a.stdout).last?["event"] as? String == "ended")
        #expect(lines(a.stdout).last?["queued"] == nil)
        #expect(sb.rtdb("--url", url, "get", "/a").stdout == "null\n")

        let b = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--client-side", "--presence", "/b",
                                            "--last-online", "/seen"], name: "b"))
        #expect(eventually(20) { lines(b.stdout).count == 4 })
        kill(b.pid, SIGKILL)
        _ = b.wait(timeout: 10)
        let killed = nowMillis()
        #expect((object(sb.rtdb("--url", url, "get", "/b").stdout)?.count ?? 0) == 1)
        let queue = lines(sb.rtdb("--url", url, "--persist", "queue").stdout)
        #expect(queue.count == 1 && queue.first?["cmd"] as? String == "session", "\(queue)")
        let sync = sb.rtdb("--url", url, "--persist", "sync")
        #expect(sync.status == 0, "\(sync)")
        #expect(sb.rtdb("--url", url, "get", "/b").stdout == "null\n")
        #expect((Int64(sb.rtdb("--url", url, "get", "/seen").stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= killed)

        // The server goes away during the session: the operations stay queued, and are sent
        // once it is back.
        let events = sb.dir + "/events"
        let c = sb.rtdb("--url", url, "session", "--client-side", "--presence", "/c", "--events", events,
                        "--", "kill", "-9", "\(server.child.pid)")
        #expect(c.status == 0, "\(c)")
        let ended = lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").last
        #expect(ended?["event"] as? String == "ended" && ended?["queued"] as? Bool == true, "\(String(describing: ended))")
        server = try #require(ServeProcess(sb, name: "serve2", port: p))
        #expect((object(sb.rtdb("--url", url, "get", "/c").stdout)?.count ?? 0) == 1)
        #expect(sb.rtdb("--url", url, "--persist", "sync").status == 0)
        #expect(sb.rtdb("--url", url, "get", "/c").stdout == "null\n")
        withExtendedLifetime(server) {}
    }

    /// Without CMD over the realtime protocol: the event lines on stdout, SIGTERM ends the
    /// session with status 0 and `ended`, and the server runs the writes once the socket closes.
    @Test func withoutCommandSIGTERMEndsTheSessionAndTheServerRunsTheWrites() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        let s = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--presence", "/here",
                                            "--on-disconnect-set", "/status", "\"gone\""], name: "s"))
        #expect(eventually(20) { lines(s.stdout).count == 4 }, "\(s.stdout) \(s.stderr)")
        #expect(lines(s.stdout).map { $0["event"] as? String ?? "" } == ["connected", "registered", "registered", "set"])
        #expect((object(sb.rtdb("--url", url, "get", "/here").stdout)?.count ?? 0) == 1)
        kill(s.pid, SIGTERM)
        #expect(s.wait(timeout: 20) == 0)
        #expect(lines(s.stdout).last?["event"] as? String == "ended")
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == #"{"status":"gone"}"# + "\n" })
    }

    /// `watch /.info/connected` follows the realtime connection
    /// through a kill -9 and a restart of the server on the same port; serverTimeOffset from the
    /// handshake, null when unreachable; the database file is connected.
    @Test func scenario6InfoFollowsTheConnection() throws {
        let sb = Sandbox()
        let first = try #require(ServeProcess(sb, name: "serve1"))
        let p = port(first)
        let url = remoteURL(first)
        let watch = try #require(sb.background([Binary.rtdb, "--url", url, "watch", "/.info/connected"], name: "watch"))
        func values() -> [Bool] { lines(watch.stdout).compactMap { $0["value"] as? Bool } }
        #expect(eventually(20) { values() == [false, true] }, "watch: \(watch.stdout) \(watch.stderr)")
        let offset = sb.rtdb("--url", url, "get", "/.info/serverTimeOffset")
        #expect(abs(Int(offset.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 99_999) < 2000, "\(offset)")
        kill(first.child.pid, SIGKILL)
        _ = first.child.wait(timeout: 10)
        #expect(eventually(10) { values() == [false, true, false] }, "watch: \(watch.stdout)")
        #expect(sb.rtdb("--url", url, "get", "/.info/serverTimeOffset").stdout == "null\n")
        let second = try #require(ServeProcess(sb, name: "serve2", port: p))
        #expect(eventually(30) { values() == [false, true, false, true] }, "watch: \(watch.stdout)")
        kill(watch.pid, SIGTERM)
        #expect(watch.wait(timeout: 10) == 143)
        _ = second

        let counted = sb.rtdb("--url", url, "watch", "/.info/connected", "--count", "2")
        expectLines(counted, [#"{"event":"value","path":"/.info/connected","value":false}"#,
                              #"{"event":"value","path":"/.info/connected","value":true}"#])
        let offsets = sb.rtdb("--url", url, "watch", "/.info/serverTimeOffset", "--count", "2", "--raw")
        #expect(offsets.stdout.split(separator: "\n").first == "null" && offsets.status == 0, "\(offsets)")
        #expect(abs(Int(offsets.stdout.split(separator: "\n").last ?? "") ?? 99_999) < 2000, "\(offsets)")

        expectOK(sb.rtdb("--db", sb.dir + "/E.db", "get", "/.info/connected"), "true\n")
        expectOK(sb.rtdb("--db", sb.dir + "/E.db", "watch", "/.info/connected", "--count", "1"),
                 #"{"event":"value","path":"/.info/connected","value":true}"# + "\n")
    }

    /// A server without the realtime protocol (it answers the WebSocket upgrade with 404) is a
    /// REST target: a session is unsupported and CMD does not run; /.info/connected comes from
    /// a REST probe.
    @Test func aServerThatRefusesTheUpgradeIsUsedOverREST() throws {
        let sb = Sandbox()
        let scripted = try #require(ScriptedServer(sb))
        let marker = sb.dir + "/ran"
        let r = sb.rtdb("--url", scripted.url, "session", "--presence", "/p", "--", "touch", marker)
        expectError(r, status: 7, code: "unsupported")
        #expect(r.stderr.contains("refused the realtime connection (HTTP 404)"), "\(r)")
        #expect(!sb.exists(marker))
        let w = sb.rtdb("--url", scripted.url, "watch", "/.info/connected", "--count", "2")
        expectLines(w, [#"{"event":"value","path":"/.info/connected","value":false}"#,
                        #"{"event":"value","path":"/.info/connected","value":true}"#])
    }

    @Test func badInputIsRefusedBeforeAnythingIsWritten() throws {
        let sb = Sandbox()
        expectError(sb.rtdb("session", "--client-side", "--presence", "/p"), status: 2, code: "usage")
        expectError(sb.rtdb("session", "--transport", "rest", "--presence", "/p"), status: 2, code: "usage")
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        expectError(sb.rtdb("--url", url, "session", "--transport", "carrier-pigeon", "--presence", "/p"), status: 2, code: "usage")
        expectError(sb.rtdb("--url", url, "session", "--on-disconnect-set", "/p", "{bad", "--", "true"), status: 3, code: "invalid_json")
        #expect(sb.rtdb("--url", url, "get", "/").stdout == "null\n")
    }
}
