import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rejections of queued writes are never silent: whichever process sends a queued write that
/// the server refuses tells of it (`sync` on stdout, any other command on stderr), and `sync`
/// exits 4 until `queue --rejected` has listed them. Against `rtdb serve` with rules that
/// refuse writes to `/locked`.
@Suite struct QueuedRejectionTests {
    let s = Sandbox()
    var serverFile: String { s.dir + "/S.db" }
    var cacheFile: String { s.dir + "/C.db" }
    let auth = ["--auth", mockToken(sub: "alice", exp: 4_102_444_800)]

    func serve() throws -> ServeProcess {
        let rules = s.write("rules.json", #"{"rules":{".read":true,"open":{".write":true},"locked":{".write":false}}}"#)
        return try #require(ServeProcess(s, ["--db", serverFile, "--rules", rules]))
    }

    /// `$R …`: the remote database through the cache file, as alice.
    func r(_ server: ServeProcess, _ args: [String]) -> RunResult {
        s.rtdb(["--url", remoteURL(server), "--cache", cacheFile] + auth + args, timeout: 120)
    }

    /// The `rejected` lines of a text (stdout or stderr).
    func rejected(_ text: String) -> [[String: Any]] {
        lines(text).filter { $0["event"] as? String == "rejected" }
    }

    /// Queues a write without sending it; its id.
    func queue(_ server: ServeProcess, _ write: [String]) throws -> Int {
        let queued = r(server, ["--offline"] + write)
        return try #require(object(queued.stdout)?["id"] as? Int, "\(queued)")
    }

    @Test func aReadThatSendsTheQueueTellsOfARejectionOnStderr() throws {
        let server = try serve()
        let id = try queue(server, ["set", "/locked/x", "1"])
        let read = r(server, ["get", "/open"])
        #expect(read.status == 0 && read.stdout == "null\n", "\(read)")
        let told = rejected(read.stderr)
        #expect(told.count == 1, "\(read)")
        #expect(told.first?["id"] as? Int == id && told.first?["path"] as? String == "/locked/x"
                && told.first?["error"] as? String == "permission_denied" && told.first?["message"] is String, "\(read)")
        #expect(s.rtdb("--db", serverFile, "get", "/locked").stdout == "null\n")
    }

    @Test func aWriteTellsOfTheRejectionsOfRowsQueuedBeforeIt() throws {
        let server = try serve()
        _ = try queue(server, ["set", "/locked/x", "1"])
        let write = r(server, ["set", "/open/y", "2"])
        #expect(write.status == 0 && write.stdout == #"{"path":"/open/y","value":2}"# + "\n", "\(write)")
        #expect(rejected(write.stderr).first?["path"] as? String == "/locked/x", "\(write)")
        // Its own rejection is its error, told once.
        let own = r(server, ["set", "/locked/z", "3"])
        expectError(own, status: 4, code: "permission_denied")
        #expect(rejected(own.stderr).isEmpty, "\(own)")
        // The earlier row's rejection, told on the way, is unseen; the write's own is not.
        let sync = r(server, ["sync"])
        #expect(sync.status == 4 && sync.stderr.contains("/locked/x") && !sync.stderr.contains("/locked/z"), "\(sync)")
        #expect(lines(r(server, ["queue", "--rejected"]).stdout).count == 2)
        expectError(r(server, ["set", "/locked/q", "4"]), status: 4, code: "permission_denied")
        #expect(r(server, ["sync"]).status == 0)
    }

    @Test func aWatchThatSendsTheQueueTellsOfARejectionOnStderr() throws {
        let server = try serve()
        let watch = try #require(s.background([Binary.rtdb, "--url", remoteURL(server), "--cache", cacheFile] + auth + ["watch", "/open"],
                                              name: "watch"))
        defer { watch.killGroup() }
        #expect(eventually { !watch.stdout.isEmpty }, "\(watch.stderr)")
        _ = try queue(server, ["set", "/locked/w", "1"])
        #expect(eventually { rejected(watch.stderr).first?["path"] as? String == "/locked/w" }, "\(watch.stdout) \(watch.stderr)")
    }

    /// `sync` exits 4 (`rejected`) for rejections any process met since the last
    /// `queue --rejected`, also when it sent nothing itself; listing them clears that.
    @Test func syncExitsFourUntilTheRejectionsAreListed() throws {
        let server = try serve()
        _ = try queue(server, ["set", "/locked/x", "1"])
        #expect(r(server, ["get", "/open"]).status == 0)   // sends (and rejects) it
        let sync = r(server, ["sync"])
        #expect(sync.status == 4 && sync.error?.code == "rejected", "\(sync)")
        #expect(sync.stderr.contains("/locked/x") && sync.stderr.contains("permission_denied"), "\(sync)")
        #expect(lines(sync.stdout).last?["event"] as? String == "synced" && lines(sync.stdout).last?["rejected"] as? Int == 0, "\(sync)")
        let still = r(server, ["sync"])
        #expect(still.status == 4 && still.error?.code == "rejected", "\(still)")
        let listed = r(server, ["queue", "--rejected"])
        #expect(listed.status == 0 && lines(listed.stdout).count == 1, "\(listed)")
        #expect(r(server, ["sync"]).status == 0)
        // The log is kept; only a new rejection makes sync fail again, and sync tells of it.
        #expect(lines(r(server, ["queue", "--rejected"]).stdout).count == 1)
        _ = try queue(server, ["set", "/locked/y", "1"])
        _ = try queue(server, ["set", "/open/y", "1"])
        let again = r(server, ["sync"])
        #expect(again.status == 4 && again.error?.code == "rejected", "\(again)")
        #expect(rejected(again.stdout).map { $0["path"] as? String } == ["/locked/y"], "\(again)")
        #expect(lines(again.stdout).contains { $0["event"] as? String == "acked" && $0["path"] as? String == "/open/y" }, "\(again)")
        #expect(rejected(again.stderr).isEmpty, "sync tells on stdout alone: \(again)")
    }

    /// `sync --follow` with a kept location prints an `acked` or `rejected` line for every
    /// write it sends, those queued while the server was away too, after its `connected` line.
    @Test func syncFollowTellsOfEveryWriteItSendsWhileALocationIsKept() throws {
        let rules = s.write("rules.json", #"{"rules":{".read":true,"open":{".write":true},"locked":{".write":false}}}"#)
        let server = try #require(RestartableServer(s, file: serverFile, ["--rules", rules]))
        let r = ["--url", server.url, "--cache", cacheFile] + auth
        #expect(s.rtdb(r + ["keep", "add", "/open"]).status == 0)
        let follow = try #require(s.background([Binary.rtdb] + r + ["sync", "--follow"], name: "follow"))
        defer { follow.killGroup() }
        func events() -> [String] { lines(follow.stdout).compactMap { $0["event"] as? String } }
        #expect(eventually { events().contains("connected") }, "\(follow.stdout) \(follow.stderr)")
        func queue(_ write: [String]) throws -> Int {
            let queued = s.rtdb(r + ["--offline"] + write)
            return try #require(object(queued.stdout)?["id"] as? Int, "\(queued)")
        }
        let first = try queue(["set", "/open/a", "1"])
        #expect(eventually { lines(follow.stdout).contains { $0["event"] as? String == "acked" && $0["id"] as? Int == first } },
                "\(follow.stdout) \(follow.stderr)")
        server.kill9()
        #expect(eventually { events().contains("disconnected") }, "\(follow.stdout)")
        let locked = try queue(["set", "/locked/f", "1"])
        let open = try queue(["set", "/open/f", "2"])
        #expect(server.start())
        #expect(eventually(60) { lines(follow.stdout).contains { $0["event"] as? String == "acked" && $0["id"] as? Int == open } },
                "\(follow.stdout) \(follow.stderr)")
        #expect(rejected(follow.stdout).map { $0["id"] as? Int } == [locked], "\(follow.stdout)")
        // After the server came back: connected first, then the line of each write.
        let after = Array(events().drop { $0 != "disconnected" })
        #expect(after.filter { $0 == "connected" || $0 == "acked" || $0 == "rejected" }.prefix(3) == ["connected", "rejected", "acked"],
                "\(follow.stdout)")
        #expect(s.rtdb("--db", serverFile, "get", "/open").stdout == #"{"a":1,"f":2}"# + "\n")
        kill(follow.pid, SIGTERM)
        #expect(follow.wait(timeout: 30) == 0, "\(follow.stderr)")
    }

    /// An offline increment of a number the cache does not hold says that its estimate
    /// stands on an unknown base; one of a number it holds does not.
    @Test func anEstimateSaysWhenItsBaseIsUnknown() throws {
        let server = try serve()
        expectOK(r(server, ["set", "/open/k", "5"]), #"{"path":"/open/k","value":5}"# + "\n")   // now held by the cache
        let known = try #require(object(r(server, ["--offline", "increment", "/open/k"]).stdout))
        #expect(known["value"] as? Int == 6 && known["estimated"] as? Bool == true && known["base"] == nil, "\(known)")
        let unknown = try #require(object(r(server, ["--offline", "increment", "/open/n", "3"]).stdout))
        #expect(unknown["value"] as? Int == 3 && unknown["estimated"] as? Bool == true && unknown["base"] as? String == "unknown",
                "\(unknown)")
        let inside = try #require(object(r(server, ["--offline", "set", "/open/o", #"{"hits":{".sv":{"increment":1}}}"#]).stdout))
        #expect(inside["estimated"] as? Bool == true && inside["base"] as? String == "unknown", "\(inside)")
        // A timestamp stands on no stored value.
        let stamp = try #require(object(r(server, ["--offline", "set", "/open/t", "--server-timestamp"]).stdout))
        #expect(stamp["estimated"] as? Bool == true && stamp["base"] == nil, "\(stamp)")
    }
}
