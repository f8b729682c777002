import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb on-disconnect`: a live session's operations are registered, replaced and cancelled
/// while it runs, from its command (RTDB_SESSION) or from any other process (--session), on the
/// embedded file (its rows) and through --url (its control socket, then the realtime `o`, `om`
/// and `oc`); a killed session runs exactly the operations registered last.
@Suite struct SessionChangeTests {
    /// The session's id from its `connected` line in `events`, once written.
    func sessionID(_ events: String) -> String? {
        lines((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").first?["session"] as? String
    }

    /// `rtdb ARGS… on-disconnect …` as a shell word list for `sh -c`, run from a session's command.
    func shellLine(_ args: [String]) -> String {
        args.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    }

    // MARK: embedded file

    /// From the command (RTDB_SESSION): a cancel and a replacement; kill -9; the reaper runs
    /// what was registered last.
    @Test func embeddedChangesFromTheCommandSurviveKill9() throws {
        let sb = Sandbox()
        let done = sb.dir + "/done"
        let out = sb.dir + "/changes"
        let rtdb = Binary.rtdb
        let script = [
            shellLine([rtdb, "on-disconnect", "cancel", "/status"]),
            shellLine([rtdb, "on-disconnect", "set", "/job", #"{"state":"abandoned","by":"w1"}"#]),
            shellLine([rtdb, "on-disconnect", "set", "/job/state", #""lost""#]),
            shellLine([rtdb, "on-disconnect", "update", "/stats", #"{"w1/gone":true}"#]),
            shellLine([rtdb, "on-disconnect", "remove", "/locks/j7"]),
        ].joined(separator: " >> \(out) && ") + " >> \(out) && touch \(done) && exec sleep 300"
        sb.seed("/locks/j7", "true")
        let events = sb.dir + "/events"
        let session = try #require(sb.background([rtdb, "session", "--on-disconnect-set", "/status", #""offline""#,
                                                  "--last-online", "/lastOnline", "--events", events, "--", "sh", "-c", script],
                                                 name: "session"))
        defer { session.killGroup() }
        #expect(eventually(20) { sb.exists(done) }, "session: \(session.stderr) \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")")
        let id = try #require(sessionID(events))
        let printed = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        #expect(printed == [
            #"{"session":"\#(id)","op":"cancel","path":"/status"}"#,
            #"{"session":"\#(id)","op":"set","path":"/job","value":{"by":"w1","state":"abandoned"}}"#,
            #"{"session":"\#(id)","op":"set","path":"/job/state","value":"lost"}"#,
            #"{"session":"\#(id)","op":"update","path":"/stats","value":{"w1/gone":true}}"#,
            #"{"session":"\#(id)","op":"remove","path":"/locks/j7"}"#,
        ])
        // Nothing ran yet.
        #expect(sb.get("/") == #"{"locks":{"j7":true}}"#)
        let killedAt = nowMillis()
        kill(session.pid, SIGKILL)
        _ = session.wait(timeout: 10)
        #expect(sb.rtdb("set", "/after", "1", "-q").status == 0)   // the next writer reaps it
        let all = try #require(object(sb.get("/")))
        #expect(all["status"] == nil, "the cancelled operation ran: \(all)")
        #expect(all["job"] as? [String: String] == ["by": "w1", "state": "lost"], "\(all)")
        #expect(all["stats"] as? [String: [String: Bool]] == ["w1": ["gone": true]], "\(all)")
        #expect(all["locks"] == nil, "\(all)")
        #expect(((all["lastOnline"] as? NSNumber)?.int64Value ?? 0) >= killedAt, "\(all)")
    }

    /// From another process (--session, the same --db): a set, then a cancel of everything;
    /// SIGTERM ends the session normally and nothing runs.
    @Test func embeddedChangesFromAnotherProcessAndCancelAll() throws {
        let sb = Sandbox()
        let other = sb.dir + "/other.db"
        let session = try #require(sb.background([Binary.rtdb, "--db", other, "session", "--presence", "/online", #""laptop""#],
                                                 name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { lines(session.stdout).count >= 3 })
        let id = try #require(lines(session.stdout).first?["session"] as? String)
        let child = try #require(object(sb.rtdb("--db", other, "get", "/online").stdout.trimmingCharacters(in: .newlines)))
        #expect(child.values.first as? String == "laptop", "\(child)")
        expectLines(sb.rtdb("--db", other, "on-disconnect", "set", "/seen", "--server-timestamp", "--session", id),
                    [#"{"session":"\#(id)","op":"set","path":"/seen","value":{".sv":"timestamp"}}"#])
        // The session is on another file than RTDB_DB: not found there.
        expectError(sb.rtdb("on-disconnect", "set", "/x", "1", "--session", id), status: 3, code: "not_found")
        expectLines(sb.rtdb("--db", other, "on-disconnect", "cancel", "--session", id),
                    [#"{"session":"\#(id)","op":"cancel","path":"/"}"#])
        kill(session.pid, SIGTERM)
        #expect(session.wait(timeout: 10) == 0)
        // Nothing ran: the presence child's removal was cancelled too.
        let after = try #require(object(sb.rtdb("--db", other, "get", "/").stdout.trimmingCharacters(in: .newlines)))
        #expect(after["seen"] == nil && (after["online"] as? [String: Any])?.count == 1, "\(after)")
        // An ended session is not found, and a change to it is refused.
        expectError(sb.rtdb("--db", other, "on-disconnect", "remove", "/x", "--session", id), status: 3, code: "not_found")
    }

    @Test func refusalsAreClearAndChangeNothing() throws {
        let sb = Sandbox()
        // No session named.
        expectError(sb.rtdb("on-disconnect", "set", "/a", "1"), status: 2, code: "usage")
        // Not an id; an id that names no session; bad input.
        expectError(sb.rtdb("on-disconnect", "set", "/a", "1", "--session", "../x"), status: 2, code: "usage")
        expectError(sb.rtdb("on-disconnect", "set", "/a", "1", "--session", "-NoSuchSession000000"), status: 3, code: "not_found")
        #expect(!sb.exists(sb.db), "a refused change created the database file")
        expectError(sb.rtdb("on-disconnect", "set", "/a", "{", "--session", "x"), status: 3, code: "invalid_json")
        expectError(sb.rtdb("on-disconnect", "nope", "/a"), status: 2, code: "usage")
        expectError(sb.rtdb("on-disconnect", "update", "/a", "[1]", "--session", "x"), status: 3, code: "invalid_data")
        expectError(sb.rtdb("on-disconnect", "set", "/.info/x", "1", "--session", "x"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("on-disconnect", "remove", "/a", "--server-timestamp", "--session", "x"), status: 2, code: "usage")
        // A session killed and not reaped yet: gone.
        let session = try #require(sb.background([Binary.rtdb, "session", "--on-disconnect-set", "/a", "1"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { !lines(session.stdout).isEmpty })
        let id = try #require(lines(session.stdout).first?["session"] as? String)
        kill(session.pid, SIGKILL)
        _ = session.wait(timeout: 10)
        let gone = sb.rtdb("on-disconnect", "set", "/b", "2", "--session", id)
        expectError(gone, status: 3, code: "not_found")
        // (This command's own write transaction reaps the dead session first: it has ended.)
        #expect(gone.error?.message.contains("has ended") == true, "\(gone)")
        #expect(sb.rtdb("set", "/c", "3", "-q").status == 0)
        #expect(sb.get("/") == #"{"a":1,"c":3}"#)
    }

    // MARK: --url

    /// Through rtdb serve: the command changes the operations (RTDB_SESSION, no --url: the
    /// control socket is found by the id), another process too (--session); after a cancel and a
    /// replacement, kill -9 makes the server run exactly the operations registered last.
    @Test(arguments: ["cancel", "replace"])
    func remoteChangesSurviveKill9(_ kind: String) throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        let done = sb.dir + "/done"
        let steps = kind == "cancel"
            ? [["on-disconnect", "cancel", "/status"], ["on-disconnect", "set", "/extra", "1"]]
            : [["on-disconnect", "set", "/status", #""crashed""#], ["on-disconnect", "update", "/status", #"{"detail":"kill"}"#]]
        let script = steps.map { shellLine([Binary.rtdb] + $0) + " >/dev/null" }.joined(separator: " && ") + " && touch \(done) && exec sleep 300"
        let events = sb.dir + "/events"
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--on-disconnect-set", "/status", #""offline""#,
                                                  "--presence", "/online", "--events", events, "--", "sh", "-c", script], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(20) { sb.exists(done) }, "session: \(session.stderr)")
        let id = try #require(sessionID(events))
        // Another process, by --session (a command line without --url finds the socket too).
        expectLines(sb.rtdb("on-disconnect", "set", "/by-other", "true", "--session", id),
                    [#"{"session":"\#(id)","op":"set","path":"/by-other","value":true}"#])
        #expect(sb.exists(sb.dir + "/rtdb/" + id + "/control"))
        kill(session.pid, SIGKILL)
        let expected = kind == "cancel" ? #"{"by-other":true,"extra":1}"# : #"{"by-other":true,"status":{"detail":"kill"}}"#
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == expected + "\n" },
                "\(sb.rtdb("--url", url, "get", "/"))")
        // The session is gone: a change is refused, and the stale socket removed.
        let gone = sb.rtdb("on-disconnect", "set", "/late", "1", "--session", id)
        expectError(gone, status: 3, code: "not_found")
        #expect(!sb.exists(sb.dir + "/rtdb/" + id))
    }

    /// A change lives through a reconnection: the session registers its own operations, then
    /// the changes in order, on the new connection; a server restarted on the same port (after
    /// kill -9, which loses what it held) runs what was asked last when the session is killed.
    /// While the session is between connections a change is refused (unavailable) and nothing
    /// changes.
    @Test func remoteChangesAreRegisteredAgainAfterAReconnection() throws {
        let sb = Sandbox()
        let first = try #require(ServeProcess(sb, name: "serve1"))
        let port = Int(first.url.split(separator: ":").last ?? "") ?? 0
        let url = remoteURL(first)
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--on-disconnect-set", "/a", "1",
                                                  "--on-disconnect-set", "/b", "2"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { lines(session.stdout).count >= 3 }, "session: \(session.stdout) \(session.stderr)")
        let id = try #require(lines(session.stdout).first?["session"] as? String)
        #expect(sb.rtdb("on-disconnect", "cancel", "/a", "--session", id).status == 0)
        #expect(sb.rtdb("on-disconnect", "set", "/c", "3", "--session", id).status == 0)
        kill(first.child.pid, SIGKILL)
        _ = first.child.wait(timeout: 10)
        #expect(eventually(10) { lines(session.stdout).contains { $0["event"] as? String == "disconnected" } }, "\(session.stdout)")
        expectError(sb.rtdb("on-disconnect", "set", "/d", "4", "--session", id), status: 6, code: "unavailable")
        let second = try #require(ServeProcess(sb, name: "serve2", port: port))
        #expect(eventually(30) { lines(session.stdout).filter { $0["event"] as? String == "connected" }.count == 2 },
                "session: \(session.stdout) \(session.stderr)")
        // The second connection's session id is the same: the session's, not the connection's.
        #expect(lines(session.stdout).filter { $0["event"] as? String == "connected" }.allSatisfy { $0["session"] as? String == id })
        kill(session.pid, SIGKILL)
        #expect(eventually(10) { sb.rtdb("--url", remoteURL(second), "get", "/").stdout == #"{"b":2,"c":3}"# + "\n" },
                "\(sb.rtdb("--url", remoteURL(second), "get", "/"))")
    }

    /// The server's rules refuse a change: permission_denied, and the operations stay as they
    /// were; a normal end then runs them.
    @Test func remoteRefusalByRules() throws {
        let sb = Sandbox()
        let rules = sb.write("rules.json", #"{"rules":{".read":true,".write":false,"open":{".write":true}}}"#)
        let server = try #require(ServeProcess(sb, ["--rules", rules]))
        let url = remoteURL(server)
        // An unsigned ID token (serve without --project-id takes it as the emulator does).
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let token = part(#"{"alg":"none","typ":"JWT"}"#) + "." + part(#"{"sub":"w1","user_id":"w1","iat":1,"exp":9999999999}"#) + "."
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "--auth", token, "session",
                                                  "--on-disconnect-set", "/open/a", "1"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { lines(session.stdout).count >= 2 }, "session: \(session.stdout) \(session.stderr)")
        let id = try #require(lines(session.stdout).first?["session"] as? String)
        let refused = sb.rtdb("on-disconnect", "set", "/closed", "1", "--session", id)
        expectError(refused, status: 4, code: "permission_denied")
        expectLines(sb.rtdb("on-disconnect", "set", "/open/b", "2", "--session", id),
                    [#"{"session":"\#(id)","op":"set","path":"/open/b","value":2}"#])
        kill(session.pid, SIGTERM)
        #expect(session.wait(timeout: 10) == 0)
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == #"{"open":{"a":1,"b":2}}"# + "\n" },
                "\(sb.rtdb("--url", url, "get", "/"))")
    }

    /// A --client-side session is changed through its holder too: the change joins the
    /// operations kept in the cache, and a normal end sends them.
    @Test func clientSideChanges() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let url = remoteURL(server)
        let session = try #require(sb.background([Binary.rtdb, "--url", url, "session", "--client-side",
                                                  "--on-disconnect-set", "/a", "1", "--on-disconnect-set", "/b", "2"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { lines(session.stdout).count >= 3 }, "session: \(session.stdout) \(session.stderr)")
        let id = try #require(lines(session.stdout).first?["session"] as? String)
        expectLines(sb.rtdb("on-disconnect", "cancel", "/b", "--session", id), [#"{"session":"\#(id)","op":"cancel","path":"/b"}"#])
        expectLines(sb.rtdb("on-disconnect", "set", "/c", "3", "--session", id), [#"{"session":"\#(id)","op":"set","path":"/c","value":3}"#])
        kill(session.pid, SIGTERM)
        #expect(session.wait(timeout: 20) == 0)
        #expect(eventually(10) { sb.rtdb("--url", url, "get", "/").stdout == #"{"a":1,"c":3}"# + "\n" },
                "\(sb.rtdb("--url", url, "get", "/"))")
    }

    // MARK: --presence VALUE

    @Test func presenceWritesTheValueGiven() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        let before = nowMillis()
        for (target, value, check) in [
            ([String](), #""laptop""#, { (v: Any?) in v as? String == "laptop" }),
            (["--url", remoteURL(server)], #"{".sv":"timestamp"}"#, { (v: Any?) in ((v as? NSNumber)?.int64Value ?? 0) >= before }),
        ] {
            let r = sb.rtdb(target + ["session", "--presence", "/online", value, "--",
                                      "sh", "-c", "\"$RTDB\" \(target.joined(separator: " ")) get /online"],
                            env: ["RTDB": Binary.rtdb])
            #expect(r.status == 0, "\(r)")
            let children = try #require(object(r.stdout.trimmingCharacters(in: .newlines)), "\(r)")
            #expect(children.count == 1 && isPushID(children.keys.first ?? "") && check(children.values.first), "\(r)")
            #expect(eventually(10) { sb.rtdb(target + ["get", "/online"]).stdout == "null\n" })
        }
        expectError(sb.rtdb("session", "--presence", "/online", "laptop", "--", "true"), status: 3, code: "invalid_json")
        // Without a value, true, as before; the word after P is its value only when it is no option.
        let r = sb.rtdb("session", "--presence", "/online", "--on-connect-set", "/x", "1", "--", "sh", "-c", "\"$RTDB\" get /online",
                        env: ["RTDB": Binary.rtdb])
        #expect(r.status == 0 && (object(r.stdout.trimmingCharacters(in: .newlines))?.values.first as? Bool) == true, "\(r)")
    }
}
