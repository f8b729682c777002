import Foundation
import Testing
import RTDBNet
@testable import RTDBServer

/// While another process holds the file's write lock (an `rtdb set` importing, an `rtdb tx`),
/// rtdb serve keeps answering reads at once; the writes that arrived meanwhile are committed
/// once the lock is free, and answered only then; a write that waits past the timeout fails
/// with the error a wait that gave up has always given.
@Suite(.serialized) struct ForeignWriteLockTests {
    /// Holds `file`'s write lock from another process (Python's sqlite3) for `seconds`, once it
    /// has said so on stdout.
    final class LockHolder {
        let process = Process()
        let output = Pipe()

        init(file: String, seconds: Double) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", """
                import sqlite3, sys, time
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                c.execute('BEGIN IMMEDIATE')
                print('locked', flush=True)
                time.sleep(float(sys.argv[2]))
                c.execute('COMMIT')
                """, file, String(seconds)]
            process.standardOutput = output
            try process.run()
            // The lock is held once the line arrives.
            let line = output.fileHandleForReading.availableData
            #expect(String(decoding: line, as: UTF8.self).hasPrefix("locked"))
        }

        func wait() { process.waitUntilExit() }
    }

    /// A server on a fresh file that holds `/seed`, run for `body`.
    func withServer(timeoutSeconds: Double, _ body: (Server, String) throws -> Void) throws {
        try withServerOnFreshFile(timeoutSeconds: timeoutSeconds) { server, file in
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "PUT", "/seed.json", "1") == (200, "1"))
            try body(server, file)
        }
    }

    /// Reads on their own connection for `seconds`; the slowest answer, in milliseconds, and
    /// how many there were (each must be the seed).
    func readWhile(_ server: Server, seconds: Double) throws -> (slowest: Double, count: Int) {
        let s = try connect(server)
        defer { s.close() }
        let end = Date().addingTimeInterval(seconds)
        var slowest = 0.0
        var count = 0
        while Date() < end {
            let started = Date()
            let answer = try exchange(s, "GET", "/seed.json")
            slowest = max(slowest, Date().timeIntervalSince(started) * 1000)
            #expect(answer == (200, "1"))
            count += 1
            Thread.sleep(forTimeInterval: 0.05)
        }
        return (slowest, count)
    }

    /// A write sent on a thread of its own: its answer, and when it came.
    final class PendingWrite: @unchecked Sendable {
        var answer: (Int, String) = (0, "")
        var answeredAt = Date.distantFuture
        let done = DispatchSemaphore(value: 0)
    }

    func write(_ server: Server, _ path: String, _ body: String) -> PendingWrite {
        let pending = PendingWrite()
        let port = server.port
        Thread.detachNewThread {
            defer { pending.done.signal() }
            guard let s = try? TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 5_000) else { return }
            defer { s.close() }
            if let answer = try? exchange(s, "PUT", path, body) {
                pending.answer = answer
                pending.answeredAt = Date()
            }
        }
        return pending
    }

    @Test func readsAreAnsweredAtOnceAndWritesCommittedAfterAnotherProcessReleasesTheLock() throws {
        try withServer(timeoutSeconds: 10) { server, file in
            let holder = try LockHolder(file: file, seconds: 2)
            let locked = Date()
            let put = write(server, "/x.json", "42")
            let reads = try readWhile(server, seconds: 1.5)
            holder.wait()
            let released = Date()
            #expect(reads.count >= 10)
            #expect(reads.slowest < 100, "a read took \(reads.slowest) ms while another process held the lock")
            #expect(put.done.wait(timeout: .now() + 15) == .success)
            #expect(put.answer == (200, "42"))
            // Acknowledged only once committed, which the lock allowed only after its release.
            #expect(put.answeredAt.timeIntervalSince(locked) > 1.5)
            #expect(put.answeredAt.timeIntervalSince(released) > -0.2)
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "GET", "/x.json") == (200, "42"))
        }
    }

    @Test func aWriteThatWaitsPastTheTimeoutFailsAsAWaitThatGaveUp() throws {
        try withServer(timeoutSeconds: 0.5) { server, file in
            let holder = try LockHolder(file: file, seconds: 2)
            let locked = Date()
            let put = write(server, "/x.json", "42")
            let reads = try readWhile(server, seconds: 1)
            #expect(reads.slowest < 100, "a read took \(reads.slowest) ms while another process held the lock")
            #expect(put.done.wait(timeout: .now() + 15) == .success)
            let waited = put.answeredAt.timeIntervalSince(locked)
            holder.wait()
            #expect(put.answer.0 == 503)
            #expect(put.answer.1.contains("database \(file) is locked by another process (gave up waiting)"))
            #expect(waited >= 0.45 && waited < 1.8, "answered after \(waited) s")
            let s = try connect(server)
            defer { s.close() }
            #expect(try exchange(s, "GET", "/x.json") == (200, "null"))
        }
    }
}
