import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// watch wakes on commit: it sleeps until the database's write-ahead log changes (inotify),
/// keeps a slow safety beat, and loses nothing when notifications coalesce.
@Suite struct WatchWakeTests {
    func lines(_ child: Child) -> [String] {
        child.stdout.components(separatedBy: "\n").filter { !$0.isEmpty }
    }

    /// Waits until `child` has printed a line for which `match` holds; returns the seconds waited.
    @discardableResult
    func waitFor(_ child: Child, timeout: Double = 30, _ match: (String) -> Bool) -> Double? {
        let start = Spawn.now()
        while Spawn.now() - start < timeout {
            if lines(child).contains(where: match) { return Spawn.now() - start }
            if !child.isRunning { return nil }
            usleep(1_000)
        }
        return nil
    }

    /// Applies child events to a dictionary, as a client rebuilding the location would.
    func replay(_ events: [String]) -> [String: Any] {
        var state: [String: Any] = [:]
        for line in events {
            guard let e = object(line), let type = e["event"] as? String, let key = e["key"] as? String else { continue }
            switch type {
            case "child_added", "child_changed": state[key] = e["value"]
            case "child_removed": state[key] = nil
            default: break
            }
        }
        return state
    }

    /// Property: 1,000 writes from 4 processes (sets, removes and multi-path updates of 40 keys,
    /// committed as fast as they come), then a last marker write. Once the watcher has reported
    /// the marker, replaying its child events gives exactly what `get` reads.
    @Test(.timeLimit(.minutes(4)))
    func aBurstFromFourProcessesReplaysToTheStoredValue() throws {
        let sb = Sandbox()
        sb.seed("/burst", #"{"k0":"start"}"#)
        let w = try #require(sb.background([Binary.rtdb, "watch", "/burst", "--child-events"], name: "watch"))
        try #require(waitFor(w) { $0.contains(#""key":"k0""#) } != nil, "\(w.stderr)")
        let writers = (0..<4).compactMap { n -> Child? in
            let script = """
                i=0
                while [ $i -lt 250 ]; do
                  k=$(( (i * 7 + \(n) * 13) % 40 ))
                  case $(( i % 5 )) in
                    0) "$RTDB" remove /burst/k$k -q ;;
                    1) "$RTDB" update /burst "{\\"k$k\\":{\\"w\\":\(n),\\"i\\":$i},\\"k$(( (k + 1) % 40 ))\\":$i}" -q ;;
                    *) "$RTDB" set /burst/k$k "\\"w\(n)-$i\\"" -q ;;
                  esac || exit 1
                  i=$((i + 1))
                done
                """
            return sb.background(["sh", "-c", script], name: "writer\(n)")
        }
        try #require(writers.count == 4)
        for c in writers { #expect(c.wait(timeout: 200) == 0, "a writer failed: \(c.stderr)") }
        sb.seed("/burst/zz", "\"done\"")
        #expect(waitFor(w) { $0.contains(#""key":"zz""#) } != nil, "the marker never arrived: \(w.stderr)")
        w.killGroup(SIGTERM)
        w.wait(timeout: 10)
        let stored = try #require(parseJSON(sb.get("/burst")) as? [String: Any])
        let replayed = replay(lines(w))
        #expect(stored.count > 1)
        #expect(lines(w).count > 50, "the burst reached the watcher as only \(lines(w).count) events")
        #expect(NSDictionary(dictionary: replayed).isEqual(to: stored),
                "replay \(replayed.count) keys, stored \(stored.count) keys")
    }

    /// Regression for the wake-up: each commit reaches the watcher long before the one-second
    /// safety beat would (the median is far below what polling on that beat could give).
    @Test func aCommitWakesTheWatcherAtOnce() throws {
        let sb = Sandbox()
        sb.seed("/lat", "0")
        let w = try #require(sb.background([Binary.rtdb, "watch", "/lat"], name: "watch"))
        try #require(waitFor(w) { $0.contains(#""value":0"#) } != nil, "\(w.stderr)")
        var delays: [Double] = []
        for i in 1...15 {
            #expect(sb.rtdb("set", "/lat", "\(i)", "-q").status == 0)
            let start = Spawn.now()
            let seen = waitFor(w, timeout: 10) { $0.contains("\"value\":\(i)}") }
            delays.append(seen.map { _ in Spawn.now() - start } ?? 10)
            usleep(20_000)
        }
        let median = delays.sorted()[delays.count / 2]
        #expect(median < 0.15, "median delay \(median) s: \(delays)")
    }

    #if os(Linux)
    /// An idle watcher sleeps: it wakes on its safety beat (every two seconds), where polling
    /// woke it hundreds of times. With RTDB_IO_BACKEND=posix it also looks at the file every
    /// 250 ms when idle (the stat check): about 15 wake-ups in 3 s.
    @Test func anIdleWatcherWakesOnlyOnItsSafetyBeat() throws {
        let portable = ProcessInfo.processInfo.environment["RTDB_IO_BACKEND"] == "posix"
        let sb = Sandbox()
        sb.seed("/idle", "1")
        let w = try #require(sb.background([Binary.rtdb, "watch", "/idle"], name: "watch"))
        try #require(waitFor(w) { $0.contains(#""value":1"#) } != nil, "\(w.stderr)")
        usleep(500_000)
        func switches() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(w.pid)/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").filter { $0.hasPrefix("voluntary_ctxt_switches") || $0.hasPrefix("nonvoluntary_ctxt_switches") }
                .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }.reduce(0, +)
        }
        let before = switches()
        usleep(3_000_000)
        let woke = switches() - before
        #expect(w.isRunning)
        #expect(woke <= (portable ? 24 : 12), "\(woke) wake-ups in 3 s")
    }
    #endif

    /// The reader of stdout going away ends the watch at once, not at the next beat.
    @Test func aClosedReaderEndsTheWatchAtOnce() {
        let sb = Sandbox()
        sb.seed("/h", "1")
        let r = sb.program(["sh", "-c", "\"$RTDB\" watch /h | head -n 1"], timeout: 20)
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == "{\"event\":\"value\",\"path\":\"/h\",\"value\":1}\n")
        #expect(r.elapsed < 0.8, "took \(r.elapsed) s")
    }
}
