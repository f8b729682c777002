import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `sync --follow` with kept locations and queries: it sends (and reports) every write queued
/// while it runs, its streams send none, and a kept query streams its window.
@Suite struct SyncFollowTests {
    func lines(_ c: Child) -> [[String: Any]] {
        let text = c.stdout
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n").compactMap { object(String($0)) }
    }

    @Test func everyWriteItSendsIsReportedWhileLocationsAreKept() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db", cacheFile = s.dir + "/C.db"
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/k", #"{"x":1}"#), "")
        let server = try #require(ServeProcess(s, ["--db", serverFile]))
        let r = ["--url", remoteURL(server), "--cache", cacheFile]
        #expect(s.rtdb(r + ["keep", "add", "/k"]).status == 0)
        let follow = try #require(s.background([Binary.rtdb] + r + ["sync", "--follow"], name: "follow"))
        defer { follow.killGroup() }
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 1 }, "\(follow.stdout) \(follow.stderr)")
        // Writes queued by other processes, inside and outside the kept location, one by one.
        var ids: [Int] = []
        for (i, write) in [["set", "/k/y", "2"], ["set", "/other", "3"], ["update", "/k", #"{"z":4}"#], ["remove", "/k/x"]].enumerated() {
            let queued = s.rtdb(r + ["--offline"] + write)
            let id = try #require(object(queued.stdout)?["id"] as? Int, "\(queued)")
            ids.append(id)
            #expect(eventually(30) { lines(follow).filter { $0["event"] as? String == "acked" }.count == i + 1 },
                    "write \(id): \(follow.stdout) \(follow.stderr)")
        }
        let acked = lines(follow).filter { $0["event"] as? String == "acked" }
        #expect(acked.compactMap { $0["id"] as? Int } == ids)
        #expect(acked.compactMap { $0["path"] as? String } == ["/k/y", "/other", "/k", "/k/x"])
        #expect(s.rtdb("--db", serverFile, "get", "/").stdout == #"{"k":{"y":2,"z":4},"other":3}"# + "\n")
        kill(follow.pid, SIGTERM)
        #expect(follow.wait(timeout: 30) == 0, "\(follow.stderr)")
    }

    /// A kept query with a limit, under rules that allow only small windows: its stream asks
    /// for the window, so the rules allow it, and the cache follows the window.
    @Test func aKeptQueryStreamsItsWindow() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db", cacheFile = s.dir + "/C.db"
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/items", #"{"a":1,"b":2,"c":3}"#), "")
        let rules = s.write("rules.json", #"{"rules":{"items":{".read":"query.limitToLast <= 10"}}}"#)
        let server = try #require(ServeProcess(s, ["--db", serverFile, "--rules", rules]))
        let r = ["--url", remoteURL(server), "--cache", cacheFile, "--auth", mockToken(sub: "alice", exp: 4_102_444_800)]
        let window = ["/items", "--order-by-value", "--limit-to-last", "2"]
        #expect(s.rtdb(r + ["keep", "add"] + window).status == 0)
        let follow = try #require(s.background([Binary.rtdb] + r + ["sync", "--follow"], name: "follow"))
        defer { follow.killGroup() }
        #expect(eventually(30) { liveSessionLocks(of: cacheFile) == 1 }, "\(follow.stdout) \(follow.stderr)")
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/items/d", "9"), "")
        #expect(eventually(30) { s.rtdb(r + ["--offline", "query"] + window).stdout == #"{"key":"c","value":3}"# + "\n" + #"{"key":"d","value":9}"# + "\n" },
                "\(follow.stdout) \(follow.stderr)")
        kill(follow.pid, SIGTERM)
        #expect(follow.wait(timeout: 30) == 0, "\(follow.stderr)")
    }
}
