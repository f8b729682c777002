import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// watch: the stream's shapes, seen across processes.
@Suite struct WatchTests {
    /// Starts `rtdb watch ARGS` in the background and waits until it has printed `ready` lines.
    func startWatch(_ sb: Sandbox, _ args: [String], ready: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> Child {
        let child = try #require(sb.background([Binary.rtdb, "watch"] + args, name: "watch-\(UUID().uuidString.prefix(8))"),
                                 sourceLocation: sourceLocation)
        waitForLines(child, ready, sourceLocation: sourceLocation)
        return child
    }

    /// Waits until the watch has printed `count` lines (a change is seen before the next write,
    /// so two writes are never reported as one).
    func waitForLines(_ child: Child, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let deadline = Spawn.now() + 20
        while child.stdout.filter({ $0 == "\n" }).count < count {
            if !child.isRunning || Spawn.now() > deadline {
                Issue.record("watch did not print \(count) line(s): \(child.stdout) \(child.stderr)", sourceLocation: sourceLocation)
                return
            }
            usleep(10_000)
        }
    }

    @Test func valueEventsFromOtherProcesses() throws {
        let sb = Sandbox()
        sb.seed("/live", "{\"a\":1}")
        let w = try startWatch(sb, ["/live", "--count", "4"], ready: 1)
        sb.seed("/live/b", "2")
        waitForLines(w, 2)
        sb.seed("/other", "1")               // not under /live: no event
        sb.seed("/live/b", "2")              // unchanged data: no event
        sb.seed("/live/b", "3")
        waitForLines(w, 3)
        #expect(sb.rtdb("remove", "/live", "-q").status == 0)
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            "{\"event\":\"value\",\"path\":\"/live\",\"value\":{\"a\":1}}",
            "{\"event\":\"value\",\"path\":\"/live\",\"value\":{\"a\":1,\"b\":2}}",
            "{\"event\":\"value\",\"path\":\"/live\",\"value\":{\"a\":1,\"b\":3}}",
            "{\"event\":\"value\",\"path\":\"/live\",\"value\":null}",
        ].map { $0 + "\n" }.joined())
        #expect(w.stderr == "")
    }

    @Test func initialValueOfNothingIsNull() throws {
        let sb = Sandbox()
        let w = try startWatch(sb, ["/nothing", "--count", "2"], ready: 1)
        sb.seed("/nothing/x", "\"é\"")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == "{\"event\":\"value\",\"path\":\"/nothing\",\"value\":null}\n"
                + "{\"event\":\"value\",\"path\":\"/nothing\",\"value\":{\"x\":\"é\"}}\n")
    }

    @Test func childEventsInRemovedAddedMovedChangedOrder() throws {
        let sb = Sandbox()
        sb.seed("/live", "{\"a\":1,\"b\":2}")
        let w = try startWatch(sb, ["/live", "--child-events", "--count", "5"], ready: 2)
        // One write: a removed, c added, b changed.
        #expect(sb.rtdb("update", "/live", "{\"a\":null,\"c\":3,\"b\":5}", "-q").status == 0)
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            "{\"event\":\"child_added\",\"path\":\"/live\",\"key\":\"a\",\"prev\":null,\"value\":1}",
            "{\"event\":\"child_added\",\"path\":\"/live\",\"key\":\"b\",\"prev\":\"a\",\"value\":2}",
            "{\"event\":\"child_removed\",\"path\":\"/live\",\"key\":\"a\",\"value\":1}",
            "{\"event\":\"child_added\",\"path\":\"/live\",\"key\":\"c\",\"prev\":\"b\",\"value\":3}",
            "{\"event\":\"child_changed\",\"path\":\"/live\",\"key\":\"b\",\"prev\":null,\"value\":5}",
        ].map { $0 + "\n" }.joined())
    }

    @Test func childMovedWithAnOrderedQuery() throws {
        let sb = Sandbox()
        sb.seed("/s", "{\"a\":1,\"b\":2,\"c\":3}")
        let w = try startWatch(sb, ["/s", "--child-events", "--order-by-value", "--count", "5"], ready: 3)
        sb.seed("/s/a", "10")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"a\",\"prev\":null,\"value\":1}",
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"b\",\"prev\":\"a\",\"value\":2}",
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"c\",\"prev\":\"b\",\"value\":3}",
            "{\"event\":\"child_moved\",\"path\":\"/s\",\"key\":\"a\",\"prev\":\"c\",\"value\":10}",
            "{\"event\":\"child_changed\",\"path\":\"/s\",\"key\":\"a\",\"prev\":\"c\",\"value\":10}",
        ].map { $0 + "\n" }.joined())
    }

    @Test func anObjectChildThatChangesMovesUnderValueOrder() throws {
        let sb = Sandbox()
        sb.seed("/s", "{\"a\":{\"x\":5},\"b\":1}")
        let w = try startWatch(sb, ["/s", "--child-events", "--order-by-value", "--count", "4"], ready: 2)
        sb.seed("/s/a/x", "13")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"b\",\"prev\":null,\"value\":1}",
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"a\",\"prev\":\"b\",\"value\":{\"x\":5}}",
            "{\"event\":\"child_moved\",\"path\":\"/s\",\"key\":\"a\",\"prev\":\"b\",\"value\":{\"x\":13}}",
            "{\"event\":\"child_changed\",\"path\":\"/s\",\"key\":\"a\",\"prev\":\"b\",\"value\":{\"x\":13}}",
        ].map { $0 + "\n" }.joined())
    }

    @Test func orderByPriorityMovesOnAPriorityChangeAndValueFiresForPriorityAlone() throws {
        let sb = Sandbox()
        sb.seed("/p", #"{"a":{".value":1,".priority":1},"b":{".value":2,".priority":2}}"#)
        let w = try startWatch(sb, ["/p", "--child-events", "--order-by-priority", "--count", "4"], ready: 2)
        sb.seed("/p/a/.priority", "3")
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            #"{"event":"child_added","path":"/p","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_added","path":"/p","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_moved","path":"/p","key":"a","prev":"b","value":1}"#,
            #"{"event":"child_changed","path":"/p","key":"a","prev":"b","value":1}"#,
        ].map { $0 + "\n" }.joined())
        let v = try startWatch(sb, ["/p", "--count", "2"], ready: 1)
        sb.seed("/p/.priority", #""top""#)
        #expect(v.wait(timeout: 20) == 0, "\(v.stderr)")
        #expect(v.stdout == [
            #"{"event":"value","path":"/p","value":{"a":1,"b":2}}"#,
            #"{"event":"value","path":"/p","value":{"a":1,"b":2}}"#,
        ].map { $0 + "\n" }.joined())
    }

    @Test func limitedWindowAddsAndRemoves() throws {
        let sb = Sandbox()
        sb.seed("/s", "{\"a\":1,\"b\":2,\"c\":3}")
        let w = try startWatch(sb, ["/s", "--child-events", "--order-by-value", "--limit-to-last", "2", "--count", "4"], ready: 2)
        sb.seed("/s/d", "4")      // d enters the window, b leaves it
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == [
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"b\",\"prev\":null,\"value\":2}",
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"c\",\"prev\":\"b\",\"value\":3}",
            "{\"event\":\"child_removed\",\"path\":\"/s\",\"key\":\"b\",\"value\":2}",
            "{\"event\":\"child_added\",\"path\":\"/s\",\"key\":\"d\",\"prev\":\"c\",\"value\":4}",
        ].map { $0 + "\n" }.joined())
    }

    /// With an index the watch reads its window from the index; the lines are the same.
    @Test func limitedWindowFromAnIndexPrintsTheSameLines() throws {
        var outputs: [String] = []
        for indexed in [false, true] {
            let sb = Sandbox()
            sb.seed("/s", #"{"a":{"x":1},"b":{"x":2},"c":{"x":3}}"#)
            if indexed { #expect(sb.rtdb("index", "add", "/s", "x").status == 0) }
            let w = try startWatch(sb, ["/s", "--child-events", "--order-by-child", "x", "--limit-to-last", "2", "--count", "9"], ready: 2)
            sb.seed("/s/d", #"{"x":4}"#)          // d enters, b leaves
            waitForLines(w, 4)
            sb.seed("/s/b/x", "9")                // b comes back on top, c leaves
            waitForLines(w, 6)
            sb.seed("/s/d", "null")               // d leaves, c comes back
            waitForLines(w, 8)
            sb.seed("/s/b/y", "true")             // b changes in place
            #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
            outputs.append(w.stdout)
            if indexed {
                // Entries emptied behind rtdb's back: the window follows them, so they are read.
                #expect(sb.program(["sqlite3", sb.db, "DELETE FROM index_entries"]).status == 0)
                let v = sb.rtdb("watch", "/s", "--order-by-child", "x", "--limit-to-last", "2", "--count", "1")
                #expect(v.stdout == #"{"event":"value","path":"/s","value":null}"# + "\n")
            }
        }
        #expect(outputs[0] == outputs[1])
        #expect(outputs[1] == [
            #"{"event":"child_added","path":"/s","key":"b","prev":null,"value":{"x":2}}"#,
            #"{"event":"child_added","path":"/s","key":"c","prev":"b","value":{"x":3}}"#,
            #"{"event":"child_removed","path":"/s","key":"b","value":{"x":2}}"#,
            #"{"event":"child_added","path":"/s","key":"d","prev":"c","value":{"x":4}}"#,
            #"{"event":"child_removed","path":"/s","key":"c","value":{"x":3}}"#,
            #"{"event":"child_added","path":"/s","key":"b","prev":"d","value":{"x":9}}"#,
            #"{"event":"child_removed","path":"/s","key":"d","value":{"x":4}}"#,
            #"{"event":"child_added","path":"/s","key":"c","prev":null,"value":{"x":3}}"#,
            #"{"event":"child_changed","path":"/s","key":"b","prev":"c","value":{"x":9,"y":true}}"#,
        ].map { $0 + "\n" }.joined())
    }

    /// The shell's convention: 128 + the signal, so `rtdb watch … && next` does not run `next`.
    @Test func sigintExits130AndSigtermExits143() throws {
        let sb = Sandbox()
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let w = try startWatch(sb, ["/x"], ready: 1)
            kill(w.pid, signal)
            #expect(w.wait(timeout: 20) == status, "signal \(signal): \(w.stderr)")
            #expect(w.stdout == "{\"event\":\"value\",\"path\":\"/x\",\"value\":null}\n")
            #expect(w.stderr == "")
        }
    }

    @Test func watchUsageErrors() {
        let sb = Sandbox()
        expectError(sb.rtdb("watch"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "/b"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "--count", "0"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "--limit-to-first", "1", "--limit-to-last", "1"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "--limit-to-first", "0"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "--limit-to-last", "0"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a", "--exec-fail", "stop"), status: 2, code: "usage")       // without --exec
        expectError(sb.rtdb("watch", "/a", "--exec-fail", "maybe", "--exec", "--", "true"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/a.b"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("watch", "/a", "--url", "http://127.0.0.1:1?ns=demo"), status: 6, code: "unavailable")
    }
}
