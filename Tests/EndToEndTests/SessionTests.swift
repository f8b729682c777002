import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb session` on the embedded file: writes registered to run when the session ends, run by
/// the session itself when it ends normally and by the next writer, `watch` or `serve` when its
/// process died (the session lock).
@Suite struct SessionTests {
    func lockFiles(_ sb: Sandbox) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: sb.db + ".sessions")) ?? []).filter { $0.hasSuffix(".lock") }
    }

    /// The presence recipe with `-- sleep 30`, killed with kill -9: a watch sees the child
    /// removed and lastOnline set within a second, without any other process writing.
    @Test func presenceWithCommandKilledByKill9IsSeenByWatchWithinOneSecond() throws {
        let sb = Sandbox()
        sb.seed("/users/joe/name", "\"Joe\"")
        let watch = try #require(sb.background([Binary.rtdb, "watch", "/users/joe"], name: "watch"))
        #expect(eventually(10) { lines(watch.stdout).count == 1 })
        let events = sb.dir + "/events"
        let session = try #require(sb.background([Binary.rtdb, "session", "--presence", "/users/joe/connections",
                                                  "--last-online", "/users/joe/lastOnline", "--events", events,
                                                  "--", "sleep", "30"], name: "session"))
        // The child is written once the removal is registered: then the watch shows it.
        var child = ""
        #expect(eventually(10) {
            guard let v = lastValue(watch) as? [String: Any], let c = v["connections"] as? [String: Any], c.count == 1 else { return false }
            child = c.keys.first ?? ""
            return c.values.first as? Bool == true
        }, "watch: \(watch.stdout) session: \(session.stderr)")
        #expect(isPushID(child))
        // The event lines follow the writes: the watch may see the child a moment before they are in the file.
        #expect(eventually(10) { lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").count == 4 })
        let ev = lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "")
        #expect(ev.first?["event"] as? String == "connected" && isPushID(ev.first?["session"] as? String ?? ""))
        #expect(ev.contains { $0["event"] as? String == "registered" && $0["op"] as? String == "remove"
                              && $0["path"] as? String == "/users/joe/connections/" + child })
        #expect(ev.contains { $0["event"] as? String == "registered" && $0["op"] as? String == "set"
                              && $0["path"] as? String == "/users/joe/lastOnline" })
        #expect(lockFiles(sb).count == 1)

        let killedAt = nowMillis()
        kill(session.pid, SIGKILL)
        let start = Spawn.now()
        var seen = false
        #expect(eventually(3) {
            guard let v = lastValue(watch) as? [String: Any] else { return false }
            seen = v["connections"] == nil && v["lastOnline"] != nil
            return seen
        }, "watch: \(watch.stdout)")
        let elapsed = Spawn.now() - start
        #expect(seen && elapsed <= 1.0, "the watch saw the dead session's writes after \(elapsed) s")
        let last = try #require(lastValue(watch) as? [String: Any])
        let lastOnline = try #require((last["lastOnline"] as? NSNumber)?.int64Value)
        #expect(lastOnline >= killedAt)
        #expect(last["name"] as? String == "Joe")
        #expect(lockFiles(sb).isEmpty)
        session.killGroup()   // the orphaned sleep
    }

    /// a session without CMD, killed; the watch of the list
    /// shows null within 2 s and lastOnline is a number ≥ the kill time.
    @Test func scenario8PresenceEmbeddedCrash() throws {
        let sb = Sandbox()
        let watch = try #require(sb.background([Binary.rtdb, "watch", "/users/joe/connections"], name: "w"))
        #expect(eventually(10) { lines(watch.stdout).count == 1 })
        let session = try #require(sb.background([Binary.rtdb, "session", "--presence", "/users/joe/connections",
                                                  "--last-online", "/users/joe/lastOnline"], name: "session"))
        #expect(eventually(10) { lines(session.stdout).first?["event"] as? String == "connected" })
        #expect(eventually(10) { (lastValue(watch) as? [String: Any])?.count == 1 }, "w: \(watch.stdout)")
        let killedAt = nowMillis()
        kill(session.pid, SIGKILL)
        #expect(eventually(2) { lines(watch.stdout).count >= 3 && lastValue(watch) is NSNull }, "w: \(watch.stdout)")
        let lastOnline = Int64(sb.get("/users/joe/lastOnline")) ?? 0
        #expect(lastOnline >= killedAt)
    }

    /// Normal end: the command sees the on-connect writes and none of the disconnect writes;
    /// when it exits they run together, the rows and the lock file go, and rtdb exits with 0.
    @Test func normalEndRunsTheOperationsOnceAndCleansUp() throws {
        let sb = Sandbox()
        sb.seed("/b", "{\"d\":1}")
        let events = sb.dir + "/ev"
        let r = sb.rtdb("session", "--on-disconnect-set", "/a", "{\"x\":1,\"y\":2}", "--on-disconnect-remove", "/b",
                        "--on-connect-set", "/status", "\"online\"", "--on-disconnect-set", "/status", "\"offline\"",
                        "--events", events, "--", "sh", "-c", "\"$RTDB\" get /; echo", env: ["RTDB": Binary.rtdb])
        #expect(r.status == 0, "\(r)")
        // CMD's stdout is rtdb's: what CMD saw while the session lived.
        #expect(r.stdout == "{\"b\":{\"d\":1},\"status\":\"online\"}\n\n", "\(r)")
        #expect(sb.get("/") == "{\"a\":{\"x\":1,\"y\":2},\"status\":\"offline\"}")
        let ev = lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").map { $0["event"] as? String ?? "?" }
        #expect(ev == ["connected", "registered", "registered", "registered", "set", "ended"])
        #expect(lockFiles(sb).isEmpty)
        // Nothing is left to reap: a later write changes nothing else.
        sb.seed("/z", "1")
        #expect(sb.get("/") == "{\"a\":{\"x\":1,\"y\":2},\"status\":\"offline\",\"z\":1}")
    }

    @Test func commandExitStatusPassesThrough() {
        let sb = Sandbox()
        let r = sb.rtdb("session", "--on-disconnect-set", "/done", "true", "--", "sh", "-c", "exit 7")
        #expect(r.status == 7, "\(r)")
        #expect(sb.get("/done") == "true")
        let s = sb.rtdb("session", "--on-disconnect-set", "/signalled", "1", "--", "sh", "-c", "kill -TERM $$")
        #expect(s.status == 143, "\(s)")
        #expect(sb.get("/signalled") == "1")
        let missing = sb.rtdb("session", "--on-disconnect-set", "/m", "1", "--", sb.dir + "/no-such-command")
        #expect(missing.status == 1 && missing.stderr.contains("no-such-command"), "\(missing)")
    }

    /// Firebase's sparse-tree semantics: a later operation at an ancestor replaces (cancels)
    /// earlier ones below it; one below an earlier path changes that path's value.
    @Test func laterOperationsReplaceOrChangeEarlierOnes() {
        let sb = Sandbox()
        sb.seed("/", "{\"a\":{\"keep\":true},\"b\":{\"c\":0,\"d\":0}}")
        let r = sb.rtdb("session",
                        "--on-disconnect-set", "/b/c", "1",                           // replaced by the remove of /b
                        "--on-disconnect-remove", "/b",
                        "--on-disconnect-set", "/b/e", "5",                           // changes the stored remove
                        "--on-disconnect-set", "/s", "{\"x\":1,\"y\":2}",
                        "--on-disconnect-set", "/s/y", "3",                           // changes the stored set
                        "--on-disconnect-update", "/a", "{\"n/m\":1,\"k\":{\".sv\":\"timestamp\"}}",
                        "--", "true")
        #expect(r.status == 0, "\(r)")
        let v = object(sb.get("/")) ?? [:]
        #expect(JSONSerialization.isValidJSONObject(v))
        #expect((v["b"] as? [String: Any])?.count == 1 && (v["b"] as? [String: Any])?["e"] as? Int == 5, "\(v)")
        #expect((v["s"] as? [String: Any])?["y"] as? Int == 3 && (v["s"] as? [String: Any])?["x"] as? Int == 1)
        let a = v["a"] as? [String: Any] ?? [:]
        #expect(a["keep"] as? Bool == true && (a["n"] as? [String: Any])?["m"] as? Int == 1)
        #expect(((a["k"] as? NSNumber)?.int64Value ?? 0) > 1_600_000_000_000)
    }

    /// Without CMD: SIGTERM (and SIGINT) end the session normally, with status 0.
    @Test func withoutCommandASignalEndsTheSession() throws {
        for sig in [SIGTERM, SIGINT] {
            let sb = Sandbox()
            let session = try #require(sb.background([Binary.rtdb, "session", "--on-disconnect-set", "/gone", "true",
                                                      "--on-connect-set", "/here", "true"], name: "s"))
            #expect(eventually(10) { lines(session.stdout).count == 3 }, "\(session.stdout) \(session.stderr)")
            #expect(sb.get("/") == "{\"here\":true}")
            kill(session.pid, sig)
            #expect(session.wait(timeout: 10) == 0)
            #expect(lines(session.stdout).last?["event"] as? String == "ended")
            #expect(sb.get("/") == "{\"gone\":true,\"here\":true}")
            #expect(lockFiles(sb).isEmpty)
        }
    }

    /// -q: no event lines on stdout, the session still works; --events still gets them.
    @Test func quietPrintsNoEventLines() throws {
        let sb = Sandbox()
        let session = try #require(sb.background([Binary.rtdb, "-q", "session", "--on-connect-set", "/up", "true",
                                                  "--on-disconnect-remove", "/up"], name: "q"))
        #expect(eventually(10) { sb.get("/up") == "true" })
        kill(session.pid, SIGTERM)
        #expect(session.wait(timeout: 10) == 0)
        #expect(session.stdout.isEmpty && session.stderr.isEmpty, "\(session.stdout) \(session.stderr)")
        #expect(sb.get("/up") == "null")
        let events = sb.dir + "/ev"
        #expect(sb.rtdb("-q", "session", "--events", events, "--", "true").status == 0)
        #expect(lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").map { $0["event"] as? String ?? "" } == ["connected", "ended"])
    }

    /// Two sessions at once; the dead one is reaped by the next process that writes the file,
    /// the live one is left alone until it ends.
    /// Sessions started together on a file that does not exist yet all start and all end
    /// cleanly. (Two processes meeting in a new file's switch to WAL get a busy answer that
    /// SQLite does not wait on; session start retries it. That meeting is rare: a shell loop
    /// of 150 pairs hit it once before the retry, so this test seldom reaches it.)
    @Test func sessionsStartingTogetherOnANewFileAllStart() throws {
        for round in 0..<8 {
            let sb = Sandbox()
            let sessions = (0..<6).compactMap { sb.background([Binary.rtdb, "session", "--presence", "/online"], name: "s\(round)-\($0)") }
            #expect(sessions.count == 6)
            #expect(eventually(30) { sessions.allSatisfy { lines($0.stdout).count == 3 } },
                    "\(sessions.map { $0.stderr }.joined(separator: " | "))")
            #expect((object(sb.get("/online")) ?? [:]).count == 6)
            for s in sessions { s.killGroup(SIGTERM) }
            for s in sessions { #expect(s.wait(timeout: 20) == 0, "\(s.stderr)") }
            #expect(sb.get("/online") == "null")
        }
    }

    @Test func twoSessionsOneDiesTheOtherLives() throws {
        let sb = Sandbox()
        let first = try #require(sb.background([Binary.rtdb, "session", "--presence", "/online"], name: "one"))
        let second = try #require(sb.background([Binary.rtdb, "session", "--presence", "/online"], name: "two"))
        #expect(eventually(30) { lines(first.stdout).count == 3 && lines(second.stdout).count == 3 },
                "one: \(first.stdout) \(first.stderr) two: \(second.stdout) \(second.stderr)")
        #expect((object(sb.get("/online")) ?? [:]).count == 2)
        #expect(lockFiles(sb).count == 2)
        let secondChild = (lines(second.stdout).last?["path"] as? String ?? "").split(separator: "/").last.map(String.init) ?? ""
        kill(first.pid, SIGKILL)
        _ = first.wait(timeout: 5)
        // A reader does not reap; a writer does, before its own write.
        usleep(100_000)
        #expect((object(sb.get("/online")) ?? [:]).count == 2)
        sb.seed("/other", "1")
        #expect(sb.get("/online") == "{\"\(secondChild)\":true}")
        #expect(lockFiles(sb).count == 1)
        kill(second.pid, SIGTERM)
        #expect(second.wait(timeout: 10) == 0)
        #expect(sb.get("/online") == "null")
        #expect(lockFiles(sb).isEmpty)
    }

    /// `rtdb serve` reaps within its one-second beat, with no other process writing.
    @Test func serveReapsADeadSession() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        #expect(curl(sb, [server.url + "/.json?ns=test"]).code == "200")   // opens the file
        let session = try #require(sb.background([Binary.rtdb, "session", "--presence", "/online"], name: "s"))
        #expect(eventually(10) { lines(session.stdout).count == 3 })
        #expect(curl(sb, [server.url + "/online.json?shallow=true"]).body.contains("true"))
        kill(session.pid, SIGKILL)
        #expect(eventually(3) { curl(sb, [server.url + "/online.json"]).body == "null" })
    }

    @Test func badInputChangesNothing() {
        let sb = Sandbox()
        expectError(sb.rtdb("session", "--on-disconnect-set", "/a", "nope", "--", "true"), status: 3, code: "invalid_json")
        expectError(sb.rtdb("session", "--on-disconnect-update", "/a", "1"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("session", "--on-disconnect-update", "/a", "{\"x\":1,\"x/y\":2}"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("session", "--on-disconnect-set", "/.info/x", "1"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("session", "--on-disconnect-set", "/a"), status: 2, code: "usage")
        expectError(sb.rtdb("session", "extra"), status: 2, code: "usage")
        expectError(sb.rtdb("session", "--presence", "/a", "--presence", "/b"), status: 2, code: "usage")
        #expect(!sb.exists(sb.db) && !sb.exists(sb.db + ".sessions"))
        // A remote target over REST: unsupported, nothing run.
        let remote = sb.rtdb("--url", "http://127.0.0.1:9?ns=x", "session", "--transport", "rest", "--presence", "/p",
                             "--", "touch", sb.dir + "/ran")
        expectError(remote, status: 7, code: "unsupported")
        #expect(!sb.exists(sb.dir + "/ran"))
    }
}
