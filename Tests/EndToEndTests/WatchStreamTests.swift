import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// watch as a stream: bursts from many processes, replay, pipes and --exec.
@Suite struct WatchStreamTests {
    func start(_ sb: Sandbox, _ args: [String], name: String) throws -> Child {
        try #require(sb.background([Binary.rtdb, "watch"] + args, name: name))
    }

    /// Waits until `child`'s stdout satisfies `done`, for at most 30 s.
    func waitFor(_ child: Child, sourceLocation: SourceLocation = #_sourceLocation, _ done: (String) -> Bool) {
        let deadline = Spawn.now() + 30
        while !done(child.stdout) {
            if !child.isRunning || Spawn.now() > deadline {
                Issue.record("watch output never got there: \(child.stdout.suffix(400)) \(child.stderr)", sourceLocation: sourceLocation)
                return
            }
            usleep(10_000)
        }
    }

    /// Replays child events into an ordered list of (key, value), using the prev keys.
    func replay(_ events: [[String: Any]], sourceLocation: SourceLocation = #_sourceLocation) -> [(String, Any)] {
        var list: [(String, Any)] = []
        func place(_ key: String, _ value: Any, after prev: Any?) {
            list.removeAll { $0.0 == key }
            if let p = prev as? String, let i = list.firstIndex(where: { $0.0 == p }) {
                list.insert((key, value), at: i + 1)
            } else {
                if prev is String { Issue.record("prev key \(prev!) is not in the view", sourceLocation: sourceLocation) }
                list.insert((key, value), at: 0)
            }
        }
        for e in events {
            guard let type = e["event"] as? String, let key = e["key"] as? String else { continue }
            switch type {
            case "child_added", "child_moved", "child_changed":
                place(key, e["value"] ?? NSNull(), after: e["prev"] is NSNull ? nil : e["prev"])
            case "child_removed":
                #expect(list.contains { $0.0 == key }, "removed \(key) was not in the view", sourceLocation: sourceLocation)
                list.removeAll { $0.0 == key }
            default:
                Issue.record("unexpected event \(type)", sourceLocation: sourceLocation)
            }
        }
        return list
    }

    /// Deep equality of two parsed JSON values.
    func same(_ a: Any, _ b: Any) -> Bool {
        NSArray(object: a).isEqual(to: [b])
    }

    @Test func burstsFromSeveralProcessesLoseNothing() throws {
        let sb = Sandbox()
        sb.seed("/b", #"{"k0":{"n":0},"k1":{"n":1},"k2":{"n":2}}"#)
        let children = try start(sb, ["/b", "--child-events"], name: "children")
        let values = try start(sb, ["/b"], name: "values")
        let window = try start(sb, ["/b", "--child-events", "--order-by-child", "n", "--limit-to-last", "4"], name: "window")
        waitFor(children) { $0.split(separator: "\n").count >= 3 }
        waitFor(values) { $0.split(separator: "\n").count >= 1 }
        waitFor(window) { $0.split(separator: "\n").count >= 3 }

        let r = "\"$RTDB\""
        let loops: [[String]] = (0..<4).map { w in
            ConcurrencyTests.loop(25, """
                case $((i % 5)) in \
                0) \(r) set /b/k$(((i + \(w)) % 7)) "{\\"n\\":$((i * 7 % 23))}" -q ;; \
                1) \(r) update /b "{\\"k$((i % 5))/n\\":$((i * \(w + 3) % 19)),\\"k$((i % 3 + 4))\\":null}" -q ;; \
                2) \(r) remove /b/k$(((i + \(w)) % 6)) -q ;; \
                3) \(r) push /b "{\\"n\\":$((i + \(w) * 10))}" -q ;; \
                4) \(r) increment /b/k$((\(w) % 3))/n 5 -q ;; \
                esac
                """)
        }
        let writers = loops.enumerated().compactMap { sb.background($0.element, name: "writer\($0.offset)") }
        #expect(writers.count == 4)
        for w in writers { #expect(w.wait(timeout: 120) == 0, "\(w.stderr)") }
        // A last write every watcher must see; after it the streams are complete.
        sb.seed("/b/zz", #"{"n":1000}"#)
        waitFor(children) { $0.contains("\"key\":\"zz\"") }
        waitFor(values) { $0.contains("\"zz\":{\"n\":1000}") }
        waitFor(window) { $0.contains("\"key\":\"zz\"") }
        usleep(200_000)
        for c in [children, values, window] {
            c.killGroup(SIGTERM)
            #expect(c.wait(timeout: 10) == 143)     // 128 + SIGTERM: the stream was ended, not finished
        }

        let stored = try #require(parseJSON(sb.get("/b")) as? [String: Any])
        // Child events replayed give exactly what get returns, in key order.
        let replayed = replay(lines(children.stdout))
        #expect(replayed.map(\.0) == stored.keys.sorted { a, b in
            // Every key here is k<digit>, zz or a push ID: plain order is key order.
            a < b
        })
        #expect(replayed.allSatisfy { same($0.1, stored[$0.0] ?? NSNull()) })
        // The last value event equals get.
        let lastValue = try #require(lines(values.stdout).last)
        #expect(same(lastValue["value"] ?? NSNull(), stored))
        // The limited window replays to the query's answer, in query order.
        let query = sb.rtdb("query", "/b", "--order-by-child", "n", "--limit-to-last", "4")
        let expected = lines(query.stdout).map { ($0["key"] as? String ?? "?", $0["value"] ?? NSNull()) }
        let windowed = replay(lines(window.stdout))
        #expect(windowed.map(\.0) == expected.map(\.0))
        #expect(zip(windowed, expected).allSatisfy { same($0.1, $1.1) })
    }

    @Test func aClosedStdoutEndsTheStreamWithStatus0() {
        let sb = Sandbox()
        sb.seed("/q", "1")
        // No further events arrive: the watcher must notice on its own that head has gone.
        let r = sb.program(["bash", "-c", "\"$RTDB\" watch /q | head -1; echo \"status ${PIPESTATUS[0]}\""], timeout: 20)
        #expect(r.stdout == "{\"event\":\"value\",\"path\":\"/q\",\"value\":1}\nstatus 0\n")
        #expect(r.elapsed < 10)
    }

    @Test func eachLineIsFlushedAtOnceIntoAPipe() throws {
        let sb = Sandbox()
        // The reader sees the first line while the watcher is still running (no buffering).
        let w = try #require(sb.background(["sh", "-c", "\"$RTDB\" watch /p | cat"], name: "piped"))
        waitFor(w) { $0 == "{\"event\":\"value\",\"path\":\"/p\",\"value\":null}\n" }
        sb.seed("/p", "2")
        waitFor(w) { $0.hasSuffix("{\"event\":\"value\",\"path\":\"/p\",\"value\":2}\n") }
        #expect(w.isRunning)
        w.killGroup(SIGTERM)
        w.wait(timeout: 10)
    }

    @Test func execRunsACommandPerEventWithTheLineOnStdin() throws {
        let sb = Sandbox()
        let out = sb.dir + "/events.txt"
        sb.seed("/jobs/a", "1")
        let w = try start(sb, ["/jobs", "--child-events", "--count", "3", "--exec", "--", "sh", "-c", "cat >> '\(out)'; echo >> '\(out)'"], name: "exec")
        waitFor(w) { _ in FileManager.default.fileExists(atPath: out) }
        sb.seed("/jobs/b", "2")
        // The watcher sees each write on its own only if it looks between them: wait for it
        // (the portable back-end looks every 250 ms when idle, and two writes can come sooner).
        waitFor(w) { _ in ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains(#""key":"b""#) }
        #expect(sb.rtdb("remove", "/jobs/a", "-q").status == 0)
        #expect(w.wait(timeout: 20) == 0, "\(w.stderr)")
        #expect(w.stdout == "")
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        #expect(text.split(separator: "\n", omittingEmptySubsequences: true) == [
            #"{"event":"child_added","path":"/jobs","key":"a","prev":null,"value":1}"#,
            #"{"event":"child_added","path":"/jobs","key":"b","prev":"a","value":2}"#,
            #"{"event":"child_removed","path":"/jobs","key":"a","value":1}"#,
        ])
    }

    @Test func execNeedsACommand() {
        let sb = Sandbox()
        expectError(sb.rtdb("watch", "/x", "--exec"), status: 2, code: "usage")
        expectError(sb.rtdb("watch", "/x", "--exec", "--"), status: 2, code: "usage")
    }
}
