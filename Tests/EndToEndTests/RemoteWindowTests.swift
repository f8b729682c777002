import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `watch --url` with a range or a limit asks the server for its query, as the SDKs' listens
/// do: the stream carries the window, not the list, and rules on `query.*` judge it as they
/// judge the same `query`. Through the offline cache too.
@Suite struct RemoteWindowTests {
    /// The complete lines a background child printed so far.
    func printed(_ c: Child) -> [String] {
        let text = c.stdout
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n").map(String.init)
    }

    /// Bytes the process has read through read(2) and the like (sockets included): Linux's
    /// `/proc/PID/io`; nil elsewhere.
    func bytesRead(_ pid: pid_t) -> Int? {
        #if os(Linux)
        guard let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in io.split(separator: "\n") where line.hasPrefix("rchar:") {
            return Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
        #else
        return nil
        #endif
    }

    static func item(_ i: Int) -> String { "i" + String(format: "%04d", i) }

    /// 3,000 children of about 70 bytes: a `--limit-to-last 3` watch reads a few kilobytes
    /// besides what starting the program reads, where the whole list is over 200 kB; as the
    /// window moves, the children entering it come from the server.
    @Test func aLimitedWatchTransfersTheWindowNotTheList() throws {
        let s = Sandbox()
        let doc = "{" + (0..<3000).map { #""\#(RemoteWindowTests.item($0))":{"n":\#($0),"text":"\#(String(repeating: "x", count: 40))"}"# }
            .joined(separator: ",") + "}"
        expectOK(s.rtdb("-q", "set", "/items", "--file", s.write("items.json", doc)), "")
        let server = try #require(ServeProcess(s))
        let url = remoteURL(server)
        let list = s.rtdb("--url", url, "get", "/items")
        #expect(list.status == 0 && list.stdoutBytes.count > 200_000, "\(list.stdoutBytes.count) bytes")

        let w = try #require(s.background([Binary.rtdb, "--url", url, "watch", "/items", "--order-by-child", "n",
                                           "--limit-to-last", "3", "--child-events"], name: "window"))
        defer { w.killGroup() }
        #expect(eventually(30) { printed(w).count >= 3 }, "\(w.stdout) \(w.stderr)")
        #if os(Linux)
        let read = try #require(bytesRead(w.pid))
        #expect(read < 100_000, "the watch read \(read) bytes")
        #endif
        #expect(printed(w) == (2997...2999).map { i in
            #"{"event":"child_added","path":"/items","key":"\#(RemoteWindowTests.item(i))","prev":\#(i == 2997 ? "null" : "\"" + RemoteWindowTests.item(i - 1) + "\""),"value":{"n":\#(i),"text":"\#(String(repeating: "x", count: 40))"}}"#
        })
        // A child joins at the top: the lowest leaves. It is removed again: the child that
        // left comes back from the server.
        expectOK(s.rtdb("-q", "set", "/items/z", #"{"n":5000}"#), "")
        #expect(eventually(30) { printed(w).count >= 5 }, "\(w.stdout)")
        expectOK(s.rtdb("-q", "remove", "/items/z"), "")
        #expect(eventually(30) { printed(w).count >= 7 }, "\(w.stdout)")
        usleep(300_000)
        let x40 = String(repeating: "x", count: 40)
        #expect(Array(printed(w).dropFirst(3)) == [
            #"{"event":"child_removed","path":"/items","key":"i2997","value":{"n":2997,"text":"\#(x40)"}}"#,
            #"{"event":"child_added","path":"/items","key":"z","prev":"i2999","value":{"n":5000}}"#,
            #"{"event":"child_removed","path":"/items","key":"z","value":{"n":5000}}"#,
            #"{"event":"child_added","path":"/items","key":"i2997","prev":null,"value":{"n":2997,"text":"\#(x40)"}}"#,
        ], "\(w.stdout)")
        #if os(Linux)
        #expect(try #require(bytesRead(w.pid)) < 100_000)
        #endif
    }

    /// Rules that allow only small windows (`query.limitToLast <= 10`) allow a watch of such
    /// a window, direct or through the cache, as they allow the same query; a watch of the
    /// whole list is refused.
    @Test func rulesOnTheQueryJudgeAWatchAsTheyJudgeAQuery() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db"
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/items", #"{"a":1,"b":2,"c":3,"d":4,"e":5}"#), "")
        let rules = s.write("rules.json", #"{"rules":{"items":{".read":"query.limitToLast <= 10"}}}"#)
        let server = try #require(ServeProcess(s, ["--db", serverFile, "--rules", rules]))
        let user = ["--url", remoteURL(server), "--auth", mockToken(sub: "alice", exp: 4_102_444_800)]
        let window = ["/items", "--order-by-value", "--limit-to-last", "3"]
        expectLines(s.rtdb(user + ["query"] + window), [#"{"key":"c","value":3}"#, #"{"key":"d","value":4}"#, #"{"key":"e","value":5}"#])
        let added = [
            #"{"event":"child_added","path":"/items","key":"c","prev":null,"value":3}"#,
            #"{"event":"child_added","path":"/items","key":"d","prev":"c","value":4}"#,
            #"{"event":"child_added","path":"/items","key":"e","prev":"d","value":5}"#,
        ]
        expectLines(s.rtdb(user + ["watch"] + window + ["--child-events", "--count", "3"]), added)
        expectLines(s.rtdb(user + ["--cache", s.dir + "/C.db", "watch"] + window + ["--child-events", "--count", "3"]), added)
        expectLines(s.rtdb(user + ["watch"] + window + ["--count", "1"]), [#"{"event":"value","path":"/items","value":{"c":3,"d":4,"e":5}}"#])
        // More than ten, or the whole list: refused, as the same query is.
        expectError(s.rtdb(user + ["query", "/items", "--order-by-value", "--limit-to-last", "11"]), status: 4, code: "permission_denied")
        expectError(s.rtdb(user + ["watch", "/items", "--order-by-value", "--limit-to-last", "11", "--count", "1"]), status: 4, code: "permission_denied")
        expectError(s.rtdb(user + ["watch", "/items", "--count", "1"]), status: 4, code: "permission_denied")
    }

    /// Through the cache, a window's stream keeps the window fresh, and while it is live the
    /// watch shows the window the server sends, not an older whole copy of the location the
    /// cache holds (a child that left the window may still be in that copy with its old value).
    @Test func aWindowThroughTheCacheShowsTheServersWindow() throws {
        let s = Sandbox()
        let serverFile = s.dir + "/S.db"
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/w", #"{"a":1,"b":2,"c":3}"#), "")
        let server = try #require(ServeProcess(s, ["--db", serverFile]))
        let cached = ["--url", remoteURL(server), "--cache", s.dir + "/C.db"]
        expectLines(s.rtdb(cached + ["get", "/w"]), [#"{"a":1,"b":2,"c":3}"#])   // a whole copy, complete
        let w = try #require(s.background([Binary.rtdb] + cached + ["watch", "/w", "--order-by-value", "--limit-to-last", "2", "--child-events"],
                                          name: "cached-window"))
        defer { w.killGroup() }
        #expect(eventually(30) { printed(w).count >= 3 }, "\(w.stdout) \(w.stderr)")
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/w/d", "10"), "")
        #expect(eventually(30) { printed(w).count >= 5 }, "\(w.stdout) \(w.stderr)")
        // d drops out of the window: the server sends b back, the cache's copy of d stays old.
        expectOK(s.rtdb("--db", serverFile, "-q", "set", "/w/d", "0"), "")
        #expect(eventually(30) { printed(w).count >= 7 }, "\(w.stdout) \(w.stderr)")
        usleep(300_000)
        #expect(printed(w) == [
            #"{"event":"child_added","path":"/w","key":"b","prev":null,"value":2}"#,
            #"{"event":"child_added","path":"/w","key":"c","prev":"b","value":3}"#,
            #"{"event":"value","path":"/w","value":{"b":2,"c":3}}"#,
            #"{"event":"child_removed","path":"/w","key":"b","value":2}"#,
            #"{"event":"child_added","path":"/w","key":"d","prev":"c","value":10}"#,
            #"{"event":"child_removed","path":"/w","key":"d","value":10}"#,
            #"{"event":"child_added","path":"/w","key":"b","prev":null,"value":2}"#,
        ], "\(w.stdout)")
    }
}
