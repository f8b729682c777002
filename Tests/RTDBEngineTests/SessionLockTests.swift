import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The session lock (Sessions.swift) inside one process: what a live session keeps, what a
/// reaper takes, and what the check costs a command when there are no sessions.
@Suite struct SessionLockTests {
    func micros() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
    }

    @Test func aLiveSessionIsNotReapedAndEndsOnce() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/list/a"), json("1"))
        let session = try t.db.beginSession([.remove(path("/list/a")), .set(path("/t"), json(#"{".sv":"timestamp"}"#))])
        // Another connection of this process cannot take the lock: the holder is alive.
        let other = t.another()
        #expect(try other.reapDeadSessions() == 0)
        _ = try other.set(path("/x"), json("1"))
        #expect(text(try t.db.get(path("/list"))) == #"{"a":1}"#)
        let written = try t.db.endSession(session)
        #expect(written.map(\.description) == ["/list/a", "/t"])
        #expect(text(try t.db.get(.root)) == #"{"t":1700000000000,"x":1}"#)
        // Rows and lock file are gone: ending again or reaping finds nothing.
        #expect(try other.reapDeadSessions() == 0)
        #expect((try FileManager.default.contentsOfDirectory(atPath: t.file + ".sessions")).isEmpty)
    }

    @Test func aLockFileWhoseHolderIsGoneIsReapedOnce() throws {
        let t = TempDatabase()
        let session = try t.db.beginSession([.set(path("/gone"), json("true"))])
        // Simulate the holder's death: its descriptor (and with it the flock) goes away.
        close(session.lockFD)
        session.lockFD = -1
        let reaper = t.another()
        #expect(try reaper.reapDeadSessions() == 1)
        #expect(text(try reaper.get(path("/gone"))) == "true")
        #expect(try reaper.reapDeadSessions() == 0)
        #expect(!FileManager.default.fileExists(atPath: session.lockPath))
        // Its own end afterwards runs nothing more.
        #expect(try t.db.endSession(session).isEmpty)
    }

    @Test func aLockFileWithoutRowsIsRemoved() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        try FileManager.default.createDirectory(atPath: t.file + ".sessions", withIntermediateDirectories: true)
        let stray = t.file + ".sessions/-Pstray.lock"
        #expect(FileManager.default.createFile(atPath: stray, contents: nil))
        #expect(try t.another().reapDeadSessions() == 0)
        #expect(!FileManager.default.fileExists(atPath: stray))
        #expect(text(try t.db.get(.root)) == #"{"a":1}"#)
    }

    /// A live command pays for the check when it opens the file for writing: with no session
    /// folder it must stay at or under 0.1 ms (it is one failed opendir).
    @Test func theCheckCostsAtMostATenthOfAMillisecondWithoutSessions() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        let rounds = 2_000
        var best = Double.infinity
        for _ in 0..<5 {
            let start = micros()
            for _ in 0..<rounds { _ = try t.db.reapDeadSessions() }
            best = min(best, (micros() - start) / Double(rounds))
        }
        print("session check without sessions: \(best) µs per call")
        #expect(best <= 100, "the check took \(best) µs")
        // With an empty folder (sessions came and went) it is still cheap.
        try FileManager.default.createDirectory(atPath: t.file + ".sessions", withIntermediateDirectories: true)
        // Each figure is the best of five runs: one run can be slowed by anything else the
        // machine does.
        var empty = Double.infinity
        for _ in 0..<5 {
            let start = micros()
            for _ in 0..<rounds { _ = try t.db.reapDeadSessions() }
            empty = min(empty, (micros() - start) / Double(rounds))
        }
        print("session check with an empty session folder: \(empty) µs per call")
        #expect(empty <= 100, "the check took \(empty) µs")
        // With one live session (its lock held): one open, one refused flock, one close.
        let session = try t.db.beginSession([.remove(path("/a"))])
        let other = t.another()
        _ = try other.get(.root)
        var live = Double.infinity
        for _ in 0..<5 {
            let liveStart = micros()
            for _ in 0..<rounds { #expect(try other.reapDeadSessions() == 0) }
            live = min(live, (micros() - liveStart) / Double(rounds))
        }
        print("session check with one live session: \(live) µs per call")
        #expect(live <= 100, "the check took \(live) µs")
        try t.db.endSession(session)
    }
}
