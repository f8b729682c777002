import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reliability: a tx command never outlives rtdb and never commits after rtdb was told to stop:
/// SIGINT and SIGTERM stop it (status 130, 143), and so does --command-timeout (status 6).
@Suite struct TxSignalTests {
    /// A command that records its own pid and a background child's pid, then waits; it would
    /// print 99 if it ever finished.
    static func slowCommand(_ sb: Sandbox, trapTerm: Bool = false) -> [String] {
        let trap = trapTerm ? "trap '' TERM INT; " : ""
        return ["sh", "-c", trap + "echo $$ > \"$0/cmd.pid\"; sleep 30 & echo $! > \"$0/sleep.pid\"; wait; echo 99", sb.dir]
    }

    func pid(_ file: String) -> pid_t? {
        (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Waits until the command has written both pid files.
    func waitForCommand(_ sb: Sandbox, _ child: Child) -> Bool {
        let deadline = Spawn.now() + 20
        while Spawn.now() < deadline && child.isRunning {
            if pid(sb.dir + "/cmd.pid") != nil && pid(sb.dir + "/sleep.pid") != nil { return true }
            usleep(10_000)
        }
        return false
    }

    func expectGone(_ sb: Sandbox, sourceLocation: SourceLocation = #_sourceLocation) {
        for name in ["cmd.pid", "sleep.pid"] {
            guard let p = pid(sb.dir + "/" + name) else { continue }
            var alive = TxSignalTests.running(p)
            if alive {   // it may be exiting right now
                usleep(300_000)
                alive = TxSignalTests.running(p)
            }
            #expect(!alive, "\(name): process \(p) is still running", sourceLocation: sourceLocation)
        }
    }

    /// True while `pid` runs: not a zombie waiting to be reaped by init (Linux: /proc/PID/stat).
    static func running(_ pid: pid_t) -> Bool {
        #if os(Linux)
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) {
            guard let close = stat.lastIndex(of: ")") else { return true }
            let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
            return state != "Z" && state != "X"
        }
        return false
        #else
        return kill(pid, 0) == 0
        #endif
    }

    func interrupt(with signal: Int32, trapTerm: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let child = try #require(sb.background([Binary.rtdb, "tx", "/n", "--"] + TxSignalTests.slowCommand(sb, trapTerm: trapTerm),
                                               name: "tx"), sourceLocation: sourceLocation)
        try #require(waitForCommand(sb, child), "the command did not start: \(child.stderr)", sourceLocation: sourceLocation)
        let sent = Spawn.now()
        kill(child.pid, signal)   // rtdb only, as `kill PID` would do
        let status = child.wait(timeout: 20)
        #expect(status == 128 + signal, "status \(status); stderr: \(child.stderr)", sourceLocation: sourceLocation)
        #expect(Spawn.now() - sent < 5, "rtdb took \(Spawn.now() - sent)s to stop", sourceLocation: sourceLocation)
        #expect(child.stdout.isEmpty, sourceLocation: sourceLocation)
        let line = object(child.stderr)?["error"] as? [String: Any]
        #expect(line?["code"] as? String == "not_committed", "\(child.stderr)", sourceLocation: sourceLocation)
        #expect((line?["message"] as? String)?.contains(signal == SIGINT ? "SIGINT" : "SIGTERM") == true, "\(child.stderr)",
                sourceLocation: sourceLocation)
        expectGone(sb, sourceLocation: sourceLocation)
        #expect(sb.get("/n") == "1", "nothing may be committed", sourceLocation: sourceLocation)
    }

    @Test func sigintStopsTheCommandCommitsNothingAndExits130() throws {
        try interrupt(with: SIGINT)
    }

    @Test func sigtermStopsTheCommandCommitsNothingAndExits143() throws {
        try interrupt(with: SIGTERM)
    }

    @Test func aCommandThatIgnoresSIGTERMIsKilled() throws {
        try interrupt(with: SIGTERM, trapTerm: true)
    }

    @Test func commandTimeoutStopsAHangingCommand() throws {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let r = sb.rtdb(["tx", "/n", "--command-timeout", "0.5", "--"] + TxSignalTests.slowCommand(sb), timeout: 30)
        expectError(r, status: 6, code: "timeout")
        #expect(r.error?.message.contains("0.5 seconds") == true, "\(r)")
        #expect(r.elapsed >= 0.45 && r.elapsed < 5, "\(r.elapsed)s")
        expectGone(sb)
        #expect(sb.get("/n") == "1")
    }

    @Test func aOneSecondTimeoutSaysSecondInTheSingular() throws {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let r = sb.rtdb(["tx", "/n", "--command-timeout", "1", "--"] + TxSignalTests.slowCommand(sb), timeout: 30)
        expectError(r, status: 6, code: "timeout")
        #expect(r.error?.message.contains("did not finish within 1 second;") == true, "\(r)")
        expectGone(sb)
    }

    @Test func commandTimeoutCoversACommandThatClosedItsOutput() {
        let sb = Sandbox()
        sb.seed("/n", "1")
        let r = sb.rtdb(["tx", "/n", "--command-timeout", "0.5", "--", "sh", "-c", "exec >&- <&-; sleep 30"], timeout: 30)
        expectError(r, status: 6, code: "timeout")
        #expect(r.elapsed < 5, "\(r.elapsed)s")
        #expect(sb.get("/n") == "1")
    }

    @Test func aQuickCommandIsNotAffectedByTheTimeout() {
        let sb = Sandbox()
        sb.seed("/n", "1")
        expectOK(sb.rtdb("tx", "/n", "--command-timeout", "20", "--", "echo", "2"),
                 #"{"path":"/n","committed":true,"value":2,"attempts":1}"# + "\n")
    }

    @Test func commandTimeoutNeedsPositiveSeconds() {
        let sb = Sandbox()
        for bad in ["0", "-1", "abc", "nan", "inf", ""] {
            let r = sb.rtdb("tx", "/n", "--command-timeout", bad, "--", "echo", "1")
            expectError(r, status: 2, code: "usage")
        }
        #expect(!sb.exists(sb.db), "nothing may be opened for a usage error")
    }
}
