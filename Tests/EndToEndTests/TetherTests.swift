import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The watchdog stops a command's descendants through /proc, and these tests read /proc: Linux.
#if os(Linux)
/// Process facts read from /proc (Linux): a zombie counts as gone, since it runs nothing.
enum Processes {
    /// The parent and state of `pid`, nil when there is no such process.
    static func stat(_ pid: pid_t) -> (ppid: pid_t, state: Character)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let state = fields[0].first, let ppid = pid_t(fields[1]) else { return nil }
        return (ppid, state)
    }

    static func alive(_ pid: pid_t) -> Bool {
        guard let s = stat(pid) else { return false }
        return s.state != "Z"
    }

    /// The processes whose parent is `pid` now.
    static func children(of pid: pid_t) -> [pid_t] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { pid_t($0) }.filter { stat($0)?.ppid == pid }
    }

    static func commandLine(_ pid: pid_t) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// `tx` and `session` never leave their command running when rtdb dies, `kill -9` included: a
/// watchdog (`rtdb __tether`) stops it; after a normal end the watchdog is gone too.
@Suite struct TetherTests {
    /// The pids a shell command wrote to `file` (its own, then its children's), once it has.
    func pids(_ file: String) -> [pid_t] {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(whereSeparator: { $0 == "\n" || $0 == " " }).compactMap { pid_t($0) }
    }

    /// The watchdog among rtdb's children, once rtdb started it.
    func watchdog(of rtdb: pid_t) -> pid_t? {
        Processes.children(of: rtdb).first { Processes.commandLine($0).last == "__tether" }
    }

    @Test func aSessionsCommandAndWhatItStartedStopWhenRtdbIsKilled() throws {
        let sb = Sandbox()
        let marker = sb.dir + "/pids"
        // A shell that is not its last command's parent by exec: its child is a process of its own.
        let session = try #require(sb.background([Binary.rtdb, "session", "--presence", "/workers", "--",
                                                  "sh", "-c", "sleep 300 & echo $$ $! > \(marker); wait"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { pids(marker).count == 2 })
        let started = pids(marker)
        let dog = try #require(watchdog(of: session.pid), "no watchdog among \(Processes.children(of: session.pid))")
        #expect(started.allSatisfy(Processes.alive))
        kill(session.pid, SIGKILL)
        #expect(eventually(5) { !started.contains(where: Processes.alive) }, "still running: \(started.filter(Processes.alive))")
        #expect(eventually(5) { !Processes.alive(dog) }, "the watchdog outlived its work")
        // The presence entry went with the session (the next writer reaps it).
        #expect(sb.rtdb("set", "/x", "1").status == 0)
        #expect(sb.get("/workers") == "null")
    }

    @Test func aTransactionsCommandGroupStopsWhenRtdbIsKilled() throws {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let marker = sb.dir + "/pids"
        let tx = try #require(sb.background([Binary.rtdb, "tx", "/n", "--",
                                             "sh", "-c", "sleep 300 & echo $$ $! > \(marker); wait; echo 2"], name: "tx"))
        defer { tx.killGroup() }
        #expect(eventually(10) { pids(marker).count == 2 })
        let started = pids(marker)
        let dog = try #require(watchdog(of: tx.pid))
        kill(tx.pid, SIGKILL)
        #expect(eventually(5) { !started.contains(where: Processes.alive) }, "still running: \(started.filter(Processes.alive))")
        #expect(eventually(5) { !Processes.alive(dog) })
        #expect(sb.get("/n") == "1")
    }

    /// After a normal end the watchdog has nothing to stop, and it is gone too.
    @Test(arguments: ["tx", "session"])
    func afterANormalEndTheWatchdogIsGone(_ command: String) throws {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let go = sb.dir + "/go"
        let wait = "while [ ! -e \(go) ]; do sleep 0.05; done"
        let args = command == "tx"
            ? ["tx", "/n", "--", "sh", "-c", "read n; \(wait); echo $((n + 1))"]
            : ["session", "--on-disconnect-set", "/done", "true", "--", "sh", "-c", wait]
        let child = try #require(sb.background([Binary.rtdb] + args, name: command))
        defer { child.killGroup() }
        var dog: pid_t? = nil
        #expect(eventually(10) { dog = watchdog(of: child.pid); return dog != nil })
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(child.wait(timeout: 10) == 0, "\(child.stderr)")
        #expect(sb.get(command == "tx" ? "/n" : "/done") == (command == "tx" ? "2" : "true"))
        if let dog { #expect(eventually(5) { !Processes.alive(dog) }, "the watchdog \(dog) is still there") }
    }

    /// SIGTERM to rtdb is passed on and the session ends normally, its writes run; the
    /// watchdog stops nothing then.
    @Test func aSignalEndsTheSessionNormally() throws {
        let sb = Sandbox()
        let marker = sb.dir + "/ran"
        let session = try #require(sb.background([Binary.rtdb, "session", "--on-disconnect-set", "/end", "\"clean\"", "--",
                                                  "sh", "-c", "touch \(marker); exec sleep 300"], name: "session"))
        defer { session.killGroup() }
        #expect(eventually(10) { sb.exists(marker) })
        kill(session.pid, SIGTERM)
        #expect(session.wait(timeout: 10) == 128 + SIGTERM)
        #expect(sb.get("/end") == "\"clean\"")
    }
}
#endif
