import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// watch for scripts: --changes-only, --raw, --exec failures, signals ignored at start.
extension WatchTests {
    /// Writes `write(i)` for i = 1, 2, … every 50 ms until `child` exits, so a watch that prints
    /// nothing at start can be observed without guessing when it is ready.
    func keepWriting(_ sb: Sandbox, until child: Child, _ write: (Int) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        let deadline = Spawn.now() + 20
        var i = 0
        while child.isRunning {
            if Spawn.now() > deadline {
                Issue.record("watch did not end: \(child.stdout) \(child.stderr)", sourceLocation: sourceLocation)
                return
            }
            i += 1
            write(i)
            usleep(50_000)
        }
    }

    @Test func changesOnlySkipsTheCurrentValue() throws {
        let sb = Sandbox()
        sb.seed("/live", "{\"a\":1}")
        for flag in ["--changes-only", "-n"] {
            let w = try #require(sb.background([Binary.rtdb, "watch", "/live", flag, "--count", "1"], name: "w\(flag)"))
            keepWriting(sb, until: w) { sb.seed("/live/b", "\($0)") }
            #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
            let lines = w.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 1, "\(w.stdout)")
            let event = try #require(object(lines.first ?? ""), "\(w.stdout)")
            #expect(event["event"] as? String == "value")
            let value = try #require(event["value"] as? [String: Any], "the initial value was printed: \(w.stdout)")
            #expect(value["b"] is Int, "the first line is not a change: \(w.stdout)")
            #expect(w.stderr == "")
        }
    }

    @Test func changesOnlySkipsTheExistingChildren() throws {
        let sb = Sandbox()
        sb.seed("/l", "{\"a\":1,\"b\":2}")
        let w = try #require(sb.background([Binary.rtdb, "watch", "/l", "--child-events", "-n", "--count", "1"], name: "w"))
        keepWriting(sb, until: w) { sb.seed("/l/c\($0)", "\($0)") }
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        let lines = w.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 1, "\(w.stdout)")
        let event = try #require(object(lines.first ?? ""), "\(w.stdout)")
        #expect(event["event"] as? String == "child_added")
        #expect((event["key"] as? String)?.hasPrefix("c") == true, "an existing child was printed: \(w.stdout)")
    }

    @Test func rawPrintsEachEventsValueAlone() throws {
        let sb = Sandbox()
        sb.seed("/s", "\"hello\"")
        let w = try startWatch(sb, ["/s", "--raw", "--count", "3"], ready: 1)
        sb.seed("/s", "{\"a\":\"x\"}")
        waitForLines(w, 2)
        sb.seed("/s", "\"two words\"")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == "hello\n{\"a\":\"x\"}\ntwo words\n")

        sb.seed("/c", "{\"k1\":\"v1\",\"k2\":2}")
        let c = try startWatch(sb, ["/c", "-r", "--child-events", "--count", "2"], ready: 2)
        #expect(c.wait(timeout: 20) == 0, "\(c.stderr)")
        #expect(c.stdout == "v1\n2\n")
    }

    @Test func execWithRawGivesTheHandlerTheBareValue() throws {
        let sb = Sandbox()
        sb.seed("/s", "\"hi there\"")
        let got = sb.dir + "/got"
        let w = try #require(sb.background([Binary.rtdb, "watch", "/s", "-r", "--count", "1", "--exec", "--",
                                            "sh", "-c", "cat >> \"$0\"", got], name: "w"))
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect((try? String(contentsOfFile: got, encoding: .utf8)) == "hi there\n")
    }

    /// A handler exiting with 3 for values containing "bad"; it appends every line it is given
    /// to `handled`.
    func handler(_ sb: Sandbox) -> (argv: [String], handled: String) {
        let handled = sb.dir + "/handled"
        return (["sh", "-c", "read -r line; printf '%s\\n' \"$line\" >> \"$0\"; case $line in *bad*) exit 3;; esac", handled], handled)
    }

    func handledKeys(_ file: String) -> [String] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { object(String($0))?["key"] as? String }
    }

    @Test func failingHandlerIsReportedAndTheWatchGoesOn() throws {
        let sb = Sandbox()
        sb.seed("/j", "{\"a\":\"ok\"}")
        let h = handler(sb)
        let w = try #require(sb.background([Binary.rtdb, "watch", "/j", "--child-events", "--count", "3", "--exec", "--"] + h.argv, name: "w"))
        let deadline = Spawn.now() + 20
        while handledKeys(h.handled).count < 1 && Spawn.now() < deadline { usleep(10_000) }
        sb.seed("/j/b", "\"bad\"")
        while handledKeys(h.handled).count < 2 && Spawn.now() < deadline { usleep(10_000) }
        sb.seed("/j/c", "\"ok\"")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(handledKeys(h.handled) == ["a", "b", "c"])
        #expect(w.stdout == "")
        let lines = w.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines.last == "", "one report line expected: \(w.stderr)")
        let report = try #require(object(String(lines.first ?? "")), "\(w.stderr)")
        let failed = try #require(report["exec_failed"] as? [String: Any], "\(w.stderr)")
        #expect(report.count == 1)
        #expect(failed["status"] as? Int == 3)
        #expect(failed["command"] as? String == "sh")
        let event = try #require(failed["event"] as? [String: Any])
        #expect(event["event"] as? String == "child_added")
        #expect(event["key"] as? String == "b")
        #expect(event["value"] as? String == "bad")
    }

    @Test func execFailStopEndsTheWatchWithTheHandlersStatus() throws {
        let sb = Sandbox()
        sb.seed("/j", "{\"a\":\"ok\"}")
        let h = handler(sb)
        let w = try #require(sb.background([Binary.rtdb, "watch", "/j", "--child-events", "--exec-fail", "stop", "--exec", "--"] + h.argv, name: "w"))
        let deadline = Spawn.now() + 20
        while handledKeys(h.handled).count < 1 && Spawn.now() < deadline { usleep(10_000) }
        sb.seed("/j/b", "\"bad\"")
        #expect(w.wait(timeout: 20) == 3, "\(w.stderr)")
        #expect(handledKeys(h.handled) == ["a", "b"])
        let lines = w.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one report line and no error line expected: \(w.stderr)")
        let failed = object(String(lines.first ?? ""))?["exec_failed"] as? [String: Any]
        #expect(failed?["status"] as? Int == 3, "\(w.stderr)")

        // continue, named explicitly, is the default.
        let c = try startWatch(sb, ["/j", "--count", "1", "--exec-fail", "continue", "--exec", "--", "sh", "-c", "exit 9"], ready: 0)
        #expect(c.wait(timeout: 20) == 0, "\(c.stderr)")
        #expect((object(c.stderr)?["exec_failed"] as? [String: Any])?["status"] as? Int == 9, "\(c.stderr)")
    }

    /// A signal ignored when rtdb starts (a background job of a script) stays ignored.
    @Test func signalIgnoredAtStartStaysIgnored() throws {
        let sb = Sandbox()
        let w = try #require(sb.background(["sh", "-c", "trap '' INT; exec \"$RTDB\" watch /x"], name: "w"))
        waitForLines(w, 1)
        kill(w.pid, SIGINT)
        usleep(300_000)
        #expect(w.isRunning, "SIGINT ended a watch that started with SIGINT ignored")
        kill(w.pid, SIGTERM)
        #expect(w.wait(timeout: 20) == 143, "\(w.stderr)")
    }
}
