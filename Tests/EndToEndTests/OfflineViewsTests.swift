import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The JSON lines a background child printed so far (complete lines only).
private func printed(_ c: Child) -> [String] {
    let text = c.stdout
    guard let end = text.lastIndex(of: "\n") else { return [] }
    return text[..<end].split(separator: "\n").map(String.init)
}

/// `watch` through the offline cache, `rtdb keep`, `rtdb cache` and the LRU purge
/// (Part 3 scenarios 3's watch line, 4 and 5).
@Suite(.serialized) struct OfflineViewsTests {
    let s = Sandbox()
    var serverFile: String { s.dir + "/S.db" }
    var cacheFile: String { s.dir + "/C.db" }

    func r(_ server: RestartableServer, _ args: [String]) -> RunResult {
        s.rtdb(["--url", server.url, "--cache", cacheFile] + args, timeout: 120)
    }

    func watch(_ server: RestartableServer, _ args: [String], name: String) -> Child? {
        s.background([Binary.rtdb, "--url", server.url, "--cache", cacheFile, "watch"] + args, name: name)
    }

    func lines(_ r: RunResult) -> [[String: Any]] { r.stdout.split(separator: "\n").compactMap { object(String($0)) } }

    func serverHas(_ path: String) -> String {
        s.rtdb("--db", serverFile, "get", path).stdout.trimmingCharacters(in: .newlines)
    }

    static let scores = #"{"bruhathkayosaurus":55,"lambeosaurus":21,"linhenykus":80,"pterodactyl":93,"stegosaurus":5,"triceratops":22}"#

    @Test func scenario4TheDinosaurScoresEventForEvent() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/scores", OfflineViewsTests.scores, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        let q4 = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "4"])
        #expect(lines(q4).compactMap { $0["key"] as? String } == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"], "\(q4)")
        srv.kill9()

        // limitToLast(2) from the cached limitToLast(4): two child_added, no value.
        let two = try #require(watch(srv, ["/scores", "--order-by-value", "--limit-to-last", "2", "--child-events"], name: "w2"))
        #expect(eventually(30) { printed(two).count >= 2 }, "\(two.stdout) \(two.stderr)")
        usleep(1_000_000)   // the scenario's second: nothing more may come
        two.killGroup(SIGTERM)
        #expect(two.wait(timeout: 10) == 143)
        #expect(printed(two) == [
            #"{"event":"child_added","path":"/scores","key":"linhenykus","prev":null,"value":80}"#,
            #"{"event":"child_added","path":"/scores","key":"pterodactyl","prev":"linhenykus","value":93}"#,
        ], "\(two.stderr)")
        let again = r(srv, ["query", "/scores", "--order-by-value", "--limit-to-last", "4"])
        #expect(again.status == 0, "\(again)")
        #expect(lines(again).compactMap { $0["key"] as? String } == ["triceratops", "bruhathkayosaurus", "linhenykus", "pterodactyl"], "\(again)")

        // limitToLast(6): the four known at once, the two others and value when the server is back.
        let six = try #require(watch(srv, ["/scores", "--order-by-value", "--limit-to-last", "6", "--child-events"], name: "w6"))
        #expect(eventually(30) { printed(six).count >= 4 }, "\(six.stdout) \(six.stderr)")
        usleep(300_000)
        #expect(printed(six).count == 4, "no value while incomplete: \(six.stdout)")
        #expect(srv.start())
        let started = Spawn.now()
        #expect(eventually(60) { printed(six).count >= 7 }, "\(six.stdout) \(six.stderr)")
        // The scenario's 5 s: the watch retries after about 1 s, then 1.3 s, … (jittered).
        #expect(Spawn.now() - started <= 5, "caught up after \(Spawn.now() - started) s")
        usleep(300_000)
        six.killGroup(SIGTERM)
        #expect(six.wait(timeout: 10) == 143)
        #expect(printed(six) == [
            #"{"event":"child_added","path":"/scores","key":"triceratops","prev":null,"value":22}"#,
            #"{"event":"child_added","path":"/scores","key":"bruhathkayosaurus","prev":"triceratops","value":55}"#,
            #"{"event":"child_added","path":"/scores","key":"linhenykus","prev":"bruhathkayosaurus","value":80}"#,
            #"{"event":"child_added","path":"/scores","key":"pterodactyl","prev":"linhenykus","value":93}"#,
            #"{"event":"child_added","path":"/scores","key":"stegosaurus","prev":null,"value":5}"#,
            #"{"event":"child_added","path":"/scores","key":"lambeosaurus","prev":"stegosaurus","value":21}"#,
            // The value lists its members in the query's order, as snapshot.children walks them.
            #"{"event":"value","path":"/scores","value":{"stegosaurus":5,"lambeosaurus":21,"triceratops":22,"bruhathkayosaurus":55,"linhenykus":80,"pterodactyl":93}}"#,
        ], "\(six.stderr)")
    }

    /// The read fast path: while an auto-mode watch streams /a, reads at or
    /// below /a answer from the cache without a request (the server's request log does not
    /// grow) and still see the server's latest data; a read elsewhere, a read with writes
    /// queued, and any read after the watch ended go to the server.
    @Test func aLiveWatchAnswersReadsBelowItWithoutARequest() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/a", #"{"b":1,"c":{"d":2}}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile, ["--log"]))
        func gets() -> Int { (srv.child?.stderr ?? "").components(separatedBy: "\"method\":\"GET\"").count - 1 }
        let w = try #require(watch(srv, ["/a"], name: "w"))
        defer { w.killGroup() }
        #expect(eventually(30) { printed(w).count == 1 }, "\(w.stdout) \(w.stderr)")
        // The stream is marked live just after its first value is stored: from then on a read
        // below it makes no request.
        #expect(eventually(30) {
            let b = gets()
            return r(srv, ["get", "/a/b"]).stdout == "1\n" && gets() == b
        }, "\(srv.child?.stderr ?? "")")
        let before = gets()
        #expect(r(srv, ["get", "/a/c"]).stdout == #"{"d":2}"# + "\n")
        #expect(r(srv, ["query", "/a", "--order-by-key", "--limit-to-last", "1"]).stdout == #"{"key":"c","value":{"d":2}}"# + "\n")
        #expect(gets() == before, "\(srv.child?.stderr ?? "")")
        // A change on the server reaches the cache through the stream.
        #expect(s.rtdb("--db", serverFile, "set", "/a/c/d", "5", "-q").status == 0)
        #expect(eventually(30) { r(srv, ["get", "/a/c/d"]).stdout == "5\n" })
        #expect(gets() == before)
        // Outside the streamed location: a request.
        #expect(r(srv, ["get", "/x"]).stdout == "null\n")
        #expect(gets() == before + 1)
        // With a write queued (sent first by the read), the read goes to the server too. The
        // watch sends queued writes when the cache changes, so it may send this one before the
        // read starts: then nothing is queued and the live stream answers. Either way the read
        // sees the write.
        #expect(r(srv, ["--offline", "set", "/a/b", "7"]).status == 0)
        #expect(r(srv, ["get", "/a/b"]).stdout == "7\n")
        let afterQueued = gets()
        #expect(afterQueued == before + 1 || afterQueued == before + 2, "\(srv.child?.stderr ?? "")")
        // The watch ends: the next read asks the server.
        w.killGroup(SIGTERM)
        _ = w.wait(timeout: 20)
        #expect(r(srv, ["get", "/a/c/d"]).stdout == "5\n")
        #expect(gets() == afterQueued + 1)
    }

    /// `sync --follow` streams each kept location (a kept location inside another rides on
    /// it): the server's changes reach the cache with no read, reads of them make no request,
    /// a location kept while it runs is picked up, and the streams end with sync, kill -9
    /// included (their sessions leave the cache's session folder).
    @Test func syncFollowKeepsTheKeptLocationsLive() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/k", #"{"x":1,"in":{"y":2}}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile, ["--log"]))
        func gets() -> Int { (srv.child?.stderr ?? "").components(separatedBy: "\"method\":\"GET\"").count - 1 }
        #expect(r(srv, ["keep", "add", "/k"]).status == 0)
        #expect(r(srv, ["keep", "add", "/k/in"]).status == 0)
        let follow = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync", "--follow"], name: "follow"))
        defer { follow.killGroup() }
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 1 }, "one stream for /k and /k/in: \(follow.stdout) \(follow.stderr)")
        #expect(s.rtdb("--db", serverFile, "set", "/k/in/y", "3", "-q").status == 0)
        #expect(eventually(30) { r(srv, ["--offline", "get", "/k/in/y"]).stdout == "3\n" })
        let before = gets()
        #expect(r(srv, ["get", "/k"]).stdout == #"{"in":{"y":3},"x":1}"# + "\n")
        #expect(gets() == before, "a read of a live kept location made a request")
        // Kept while it runs: a second stream.
        #expect(s.rtdb("--db", serverFile, "set", "/m", "7", "-q").status == 0)
        #expect(r(srv, ["keep", "add", "/m"]).status == 0)
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 2 })
        #expect(s.rtdb("--db", serverFile, "set", "/m", "8", "-q").status == 0)
        #expect(eventually(30) { r(srv, ["--offline", "get", "/m"]).stdout == "8\n" })
        // Unkept: its stream stops.
        #expect(r(srv, ["keep", "rm", "/m"]).status == 0)
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 1 })
        // sync killed with kill -9: the streams notice and end.
        kill(follow.pid, SIGKILL)   // sync alone, not its process group
        _ = follow.wait(timeout: 10)
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 0 }, "streams outlived sync --follow")
        // SIGTERM: sync ends its streams cleanly (their sessions end, no lock file left) and exits 0.
        let again = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "sync", "--follow"], name: "follow2"))
        defer { again.killGroup() }
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 1 })
        kill(again.pid, SIGTERM)
        #expect(again.wait(timeout: 30) == 0, "\(again.stderr)")
        let left = ((try? FileManager.default.contentsOfDirectory(atPath: cacheFile + ".sessions")) ?? []).filter { $0.hasSuffix(".lock") }
        #expect(left.isEmpty, "lock files left: \(left)")
    }

    @Test func scenario3AnOfflineWatchShowsAQueuedWriteAndItsRevert() throws {
        let rules = s.write("rules.json", #"{"rules":{".read":true,"open":{".write":true}}}"#)
        let srv = try #require(RestartableServer(s, file: serverFile, ["--rules", rules]))
        // A signed-in user (an unsigned token, as rtdb serve trusts without --project-id): the rules apply.
        let auth = ["--auth", mockToken(sub: "alice", exp: 4_102_444_800)]
        srv.kill9()
        let w = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile] + auth
                                          + ["--offline", "watch", "/locked", "--child-events"], name: "w"))
        // The watch is up once it holds its session; a write made before that shows all the same.
        let x = r(srv, auth + ["set", "/locked/x", "1"])
        #expect(lines(x).first?["queued"] as? Bool == true, "\(x)")
        #expect(eventually(30) { printed(w).count >= 1 }, "\(w.stdout) \(w.stderr)")
        #expect(printed(w).first == #"{"event":"child_added","path":"/locked","key":"x","prev":null,"value":1}"#)
        #expect(r(srv, auth + ["set", "/open/y", "1"]).status == 0)
        #expect(srv.start())
        let sync = r(srv, auth + ["sync"])
        #expect(sync.status == 4, "\(sync)")
        #expect(eventually(30) { printed(w).count >= 2 }, "\(w.stdout) \(w.stderr)")
        w.killGroup(SIGTERM)
        _ = w.wait(timeout: 10)
        #expect(printed(w) == [
            #"{"event":"child_added","path":"/locked","key":"x","prev":null,"value":1}"#,
            #"{"event":"child_removed","path":"/locked","key":"x","value":1}"#,
        ], "\(w.stderr)")
        #expect(serverHas("/open/y") == "1" && serverHas("/locked") == "null")
    }

    @Test func anAutoWatchShowsOfflineWritesThenCatchesUpAndSendsThem() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/r", #"{"a":1}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        let w = try #require(watch(srv, ["/r", "--child-events"], name: "auto"))
        #expect(eventually(30) { printed(w).count >= 2 }, "\(w.stdout) \(w.stderr)")
        #expect(printed(w) == [
            #"{"event":"child_added","path":"/r","key":"a","prev":null,"value":1}"#,
            #"{"event":"value","path":"/r","value":{"a":1}}"#,
        ])
        srv.kill9()
        // Queued by another process while the server is away: shown at once.
        let b = r(srv, ["set", "/r/b", "2"])
        #expect(lines(b).first?["queued"] as? Bool == true, "\(b)")
        #expect(eventually(30) { printed(w).count >= 3 }, "\(w.stdout) \(w.stderr)")
        // Changed on the server meanwhile: shown when the watch is connected again, and the
        // queued write is sent by the watch.
        #expect(s.rtdb("--db", serverFile, "set", "/r/c", "3", "-q").status == 0)
        #expect(srv.start())
        #expect(eventually(60) { printed(w).count >= 4 }, "\(w.stdout) \(w.stderr)")
        #expect(eventually(60) { serverHas("/r/b") == "2" })
        w.killGroup(SIGTERM)
        _ = w.wait(timeout: 10)
        #expect(printed(w) == [
            #"{"event":"child_added","path":"/r","key":"a","prev":null,"value":1}"#,
            #"{"event":"value","path":"/r","value":{"a":1}}"#,
            #"{"event":"child_added","path":"/r","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_added","path":"/r","key":"c","prev":"b","value":3}"#,
        ], "\(w.stderr)")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
    }

    @Test func anAutoWatchPrintsTheCacheAtOnceWhileTheServerDoesNotAnswer() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/r", #"{"a":1}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        #expect(r(srv, ["get", "/r"]).status == 0)
        srv.kill9()
        // A listener that takes connections and never answers, on the server's port.
        let silent = try #require(s.background(["python3", "-c", """
            import socket, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", \(srv.port))); s.listen(16); print("listening", flush=True); time.sleep(300)
            """], name: "silent"))
        defer { silent.killGroup() }
        #expect(eventually(30) { silent.stdout.contains("listening") }, "\(silent.stderr)")
        let w = try #require(s.background([Binary.rtdb, "--url", srv.url, "--cache", cacheFile, "--connect-timeout", "120",
                                           "watch", "/r", "--child-events"], name: "silentwatch"))
        defer { w.killGroup() }
        // The server would take 120 s to give up on; the cache answers long before.
        #expect(eventually(60) { printed(w).count >= 2 }, "\(w.stdout) \(w.stderr)")
        #expect(printed(w) == [
            #"{"event":"child_added","path":"/r","key":"a","prev":null,"value":1}"#,
            #"{"event":"value","path":"/r","value":{"a":1}}"#,
        ])
    }

    @Test func aWatchOfInfoNeverGoesThroughTheCache() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        // Whatever the connection's state prints as, it is not read from or kept in the cache.
        let w = s.rtdb(["--url", srv.url, "--cache", cacheFile, "watch", "/.info/connected", "--count", "1"], timeout: 60)
        #expect(!w.timedOut, "\(w)")
        #expect(!s.exists(cacheFile), "\(w)")
    }

    @Test func aValueWatchPrintsNothingUntilTheCacheIsComplete() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/v", #"{"a":1,"b":2}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        #expect(r(srv, ["get", "/v/a"]).status == 0)   // only a child is cached
        srv.kill9()
        let w = try #require(watch(srv, ["/v", "--count", "1"], name: "value"))
        usleep(1_000_000)
        #expect(printed(w).isEmpty, "\(w.stdout)")
        #expect(srv.start())
        #expect(w.wait(timeout: 60) == 0, "\(w.stderr)")
        #expect(printed(w) == [#"{"event":"value","path":"/v","value":{"a":1,"b":2}}"#])
    }

    @Test func scenario5KeptQueriesSurviveThePurgeAndQueuedWritesStay() throws {
        var big: [String] = []
        for i in 0..<30 { big.append("\"\(i)\":\"\(String(repeating: "x", count: 100_000))\"") }
        #expect(s.rtdb(["--db", serverFile, "set", "/big", "--file", s.write("big.json", "{" + big.joined(separator: ",") + "}"), "-q"]).status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        let size = ["--cache-size", "1048576"]
        let kept = r(srv, size + ["keep", "add", "/big/0"])
        expectLines(kept, [#"{"event":"kept","path":"/big/0","query":null,"complete":true}"#])
        for i in 1...29 { #expect(r(srv, size + ["get", "/big/\(i)"]).status == 0) }
        #expect(r(srv, size + ["--offline", "set", "/q", "1"]).status == 0)   // a queued write
        let before = try #require(lines(r(srv, size + ["cache", "info"])).first)
        #expect((before["bytes"] as? Int ?? 0) > 1_048_576, "\(before)")
        let pruned = r(srv, size + ["cache", "prune"])
        #expect(pruned.status == 0, "\(pruned)")
        let paths = lines(pruned).compactMap { $0["path"] as? String }
        #expect(!paths.isEmpty && !paths.contains("/big/0") && !paths.contains("/big/29"), "\(pruned)")
        #expect(paths.first == "/big/1", "the least recently used go first: \(paths)")
        // Then what went, in all.
        let done = try #require(lines(pruned).last)
        #expect(done["event"] as? String == "prune_done" && done["queries"] as? Int == paths.count, "\(pruned)")
        #expect((done["bytes_before"] as? Int ?? 0) > 1_048_576 && (done["bytes_after"] as? Int ?? .max) <= 1_048_576
                && done["limit"] as? Int == 1_048_576, "\(pruned)")
        srv.kill9()
        #expect(r(srv, ["--offline", "get", "/big/0"]).status == 0)
        #expect(r(srv, ["--offline", "get", "/big/29"]).status == 0)
        expectError(r(srv, ["--offline", "get", "/big/1"]), status: 6, code: "unavailable")
        let info = try #require(lines(r(srv, size + ["cache", "info"])).first)
        #expect((info["bytes"] as? Int ?? .max) <= 1_048_576 && info["limit"] as? Int == 1_048_576, "\(info)")
        #expect(info["kept"] as? Int == 1 && info["pending"] as? Int == 1, "\(info)")
        #expect(lines(r(srv, ["queue"])).first?["path"] as? String == "/q")
        // ls marks the kept query.
        let ls = lines(r(srv, ["cache", "ls"]))
        #expect(ls.contains { $0["path"] as? String == "/big/0" && $0["kept"] as? Bool == true }, "\(ls)")
        // Within the limit nothing goes, and it says so.
        let again = r(srv, size + ["cache", "prune", "--vacuum"])
        #expect(again.status == 0)
        #expect(lines(again).count == 1 && lines(again).first?["event"] as? String == "prune_done"
                && lines(again).first?["queries"] as? Int == 0, "\(again)")
    }

    @Test func theAutomaticCheckPurgesAfterALargeStoreButNeverAKeptQuery() throws {
        var big: [String] = []
        for i in 0..<15 { big.append("\"\(i)\":\"\(String(repeating: "y", count: 100_000))\"") }
        #expect(s.rtdb(["--db", serverFile, "set", "/big", "--file", s.write("big.json", "{" + big.joined(separator: ",") + "}"), "-q"]).status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        let size = ["--cache-size", "1048576"]
        #expect(r(srv, size + ["keep", "add", "/big/3"]).status == 0)
        #expect(r(srv, size + ["get", "/big/1"]).status == 0)
        // One read stores 1.5 MB: the purge runs by itself, sparing the answer being stored
        // (the read still prints it) …
        let whole = r(srv, size + ["get", "/big"])
        #expect(whole.status == 0 && whole.stdout.count > 1_400_000, "\(whole.stderr)")
        // … which the next store's check purges, since the cache is still above the limit.
        #expect(r(srv, size + ["get", "/big/2"]).status == 0)
        let info = try #require(lines(r(srv, size + ["cache", "info"])).first)
        #expect((info["bytes"] as? Int ?? .max) <= 1_048_576, "\(info)")
        srv.kill9()
        #expect(r(srv, ["--offline", "get", "/big/3"]).status == 0)
        #expect(r(srv, ["--offline", "get", "/big/2"]).status == 0)
        expectError(r(srv, ["--offline", "get", "/big/1"]), status: 6, code: "unavailable")
        expectError(r(srv, ["--offline", "get", "/big"]), status: 6, code: "unavailable")
    }

    @Test func keepAddRmLsAndCacheClear() throws {
        #expect(s.rtdb("--db", serverFile, "set", "/k", #"{"a":1}"#, "-q").status == 0)
        let srv = try #require(RestartableServer(s, file: serverFile))
        expectLines(r(srv, ["keep", "add", "/k"]), [#"{"event":"kept","path":"/k","query":null,"complete":true}"#])
        expectLines(r(srv, ["keep", "add", "/s", "--order-by-value", "--limit-to-last", "2"]),
                    [#"{"event":"kept","path":"/s","query":{"limitToLast":"2","orderBy":"\"$value\""},"complete":true}"#])
        srv.kill9()
        // Offline: recorded, not fetched; exit 0.
        expectLines(r(srv, ["keep", "add", "/z"]), [#"{"event":"kept","path":"/z","query":null,"complete":false}"#])
        expectLines(r(srv, ["keep", "ls"]), [
            #"{"path":"/k","query":null}"#,
            #"{"path":"/s","query":{"limitToLast":"2","orderBy":"\"$value\""}}"#,
            #"{"path":"/z","query":null}"#,
        ])
        expectLines(r(srv, ["keep", "rm", "/z"]), [#"{"event":"unkept","path":"/z","query":null,"found":true}"#])
        expectLines(r(srv, ["keep", "rm", "/z"]), [#"{"event":"unkept","path":"/z","query":null,"found":false}"#])
        expectLines(r(srv, ["--offline", "get", "/k"]), [#"{"a":1}"#])
        #expect(r(srv, ["--offline", "set", "/w", "1"]).status == 0)
        expectLines(r(srv, ["cache", "clear"]), [#"{"event":"cleared","queries":2}"#])
        expectError(r(srv, ["--offline", "get", "/k"]), status: 6, code: "unavailable")
        #expect(r(srv, ["keep", "ls"]).lines.count == 2, "kept queries stay kept")
        #expect(r(srv, ["queue"]).lines.count == 1, "clear keeps the queue")
        let all = r(srv, ["cache", "clear", "--all"])
        #expect(all.status == 0 && all.lines.count == 2 && all.lines[0].contains(#""event":"dropped""#), "\(all)")
        #expect(r(srv, ["queue"]).stdout.isEmpty)
    }

    @Test func badKeepAndCacheInputIsAUsageErrorAndChangesNothing() throws {
        let srv = try #require(RestartableServer(s, file: serverFile))
        srv.kill9()
        #expect(r(srv, ["keep", "add", "/a"]).status == 0)
        for args in [["keep"], ["keep", "bogus"], ["keep", "add"], ["keep", "add", "/a", "/b"], ["keep", "rm"],
                     ["keep", "ls", "extra"], ["keep", "ls", "--limit-to-first", "2"], ["keep", "add", "/a", "--limit-to-first", "0"],
                     ["keep", "add", "/b", "--limit-to-first", "1", "--limit-to-last", "1"],
                     ["cache"], ["cache", "nope"], ["cache", "info", "extra"], ["cache", "info", "--vacuum"],
                     ["cache", "prune", "--all"], ["cache", "clear", "--vacuum"], ["--cache-size", "5", "cache", "prune"]] {
            expectError(r(srv, args), status: 2, code: "usage")
        }
        expectError(s.rtdb("keep", "ls"), status: 2, code: "usage")                        // no --url
        expectError(s.rtdb("--url", srv.url, "cache", "info"), status: 2, code: "usage")  // no cache
        expectLines(r(srv, ["keep", "ls"]), [#"{"path":"/a","query":null}"#])
        #expect(lines(r(srv, ["cache", "info"])).first?["queries"] as? Int == 0)
    }
}
