import Foundation
import Testing
import RTDBCore
import RTDBNet
@testable import RTDBEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The commit signal on each back-end this system has: the native notifications (inotify
/// here, kqueue on macOS and the BSDs) and the portable stat check. Each says "look now" when
/// another connection commits, and "the file itself changed" when it is replaced.
@Suite struct CommitSignalTests {
    static let backends: [IOBackend] = [.native, .posix]

    /// Waits (up to `seconds`) for a wake that `accept` takes; returns it and the time taken.
    func waitFor(_ signal: CommitSignal, seconds: Double = 5, _ accept: (CommitSignal.Wake) -> Bool) -> (CommitSignal.Wake, Double)? {
        let start = RTDBNet.monotonicNanos()
        while Double(RTDBNet.monotonicNanos() - start) / 1e9 < seconds {
            let wake = signal.wait(nanos: 200_000_000)
            if accept(wake) { return (wake, Double(RTDBNet.monotonicNanos() - start) / 1e9) }
        }
        return nil
    }

    @Test func eachBackendRunsItsMechanism() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        #expect(CommitSignal(file: t.file, backend: .posix).mechanism == "stat check")
        #if os(Linux)
        #expect(CommitSignal(file: t.file, backend: .native).mechanism == "inotify")
        #elseif canImport(Darwin) || os(FreeBSD)
        #expect(CommitSignal(file: t.file, backend: .native).mechanism == "kqueue")
        #endif
    }

    @Test(arguments: backends)
    func aCommitByAnotherConnectionWakesTheSignal(_ backend: IOBackend) throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        let signal = CommitSignal(file: t.file, backend: backend)
        // Nothing happens: a wait lasts its time and reports nothing.
        let quiet = signal.wait(nanos: 150_000_000)
        #expect(!quiet.written && !quiet.fileEvent && !quiet.hangup)
        let other = t.another()
        for i in 2...4 {
            _ = try other.set(path("/a"), json("\(i)"))
            let seen = waitFor(signal) { $0.written }
            #expect(seen != nil, "commit \(i) was not signalled")
            // The first look after a quiet spell comes within the idle interval (250 ms); the
            // next ones within 10 ms. Generous bounds: the machine is shared.
            if let seen { #expect(seen.1 < 2.0, "took \(seen.1) s") }
        }
    }

    @Test(arguments: backends)
    func aReplacedFileIsAFileEvent(_ backend: IOBackend) throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        let signal = CommitSignal(file: t.file, backend: backend)
        let fresh = t.dir + "/sub/fresh.db"
        let other = EmbeddedDatabase(file: fresh, timeoutSeconds: 5)
        _ = try other.set(path("/b"), json("2"))
        other.closeConnection()
        #expect(rename(fresh, t.file) == 0)
        let seen = waitFor(signal) { $0.fileEvent }
        #expect(seen != nil, "the replacement was not signalled")
    }

    @Test(arguments: backends)
    func aClosedReaderIsAHangup(_ backend: IOBackend) throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        let signal = CommitSignal(file: t.file, backend: backend)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        fds.forEach(setCloseOnExec)
        defer { _ = close(fds[1]) }
        _ = close(fds[0])
        let wake = signal.wait(nanos: 2_000_000_000, hangup: fds[1])
        #expect(wake.hangup)
    }

    /// The stat check's cost is its interval: quick while commits come, slower as it stays quiet.
    @Test func theCheckLooksOftenOnlyAfterAChange() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), json("1"))
        let check = CommitCheck(file: t.file)
        #expect(check.checkInterval == CommitCheck.idleInterval)
        var wake = CommitSignal.Wake()
        check.collect(into: &wake)
        #expect(!wake.written && !wake.fileEvent)
        _ = try t.another().set(path("/a"), json("2"))
        check.collect(into: &wake)
        #expect(wake.written && !wake.fileEvent)
        #expect(check.checkInterval == 10_000_000)
        #expect(CommitCheck.ladder.map(\.span) == [1_000_000_000, 10_000_000_000])
        #expect(CommitCheck.ladder.map(\.interval) == [10_000_000, 50_000_000])
        #expect(CommitCheck.idleInterval == 250_000_000)
    }
}
