import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The database file itself: not SQLite, or locked by another process.
@Suite struct DatabaseFileTests {
    @Test func fileThatIsNotSQLiteIsAClearErrorAndIsLeftAlone() throws {
        let sb = Sandbox()
        var garbage = Array("this is not an SQLite database, just some bytes\n".utf8)
        var rng = SystemRandomNumberGenerator()
        garbage += (0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let file = sb.write("garbage.db", bytes: garbage)
        for args in [["get", "/"], ["get", "/x", "--shallow"], ["set", "/x", "1"], ["update", "/", "{\"a\":1}"],
                     ["push", "/l", "1"], ["remove", "/x"], ["increment", "/n"], ["query", "/"]] {
            let r = sb.rtdb(args + ["--db", file])
            #expect(r.status != 0, "\(args): \(r)")
            #expect(r.stdout.isEmpty, "\(args): \(r)")
            let e = r.error
            #expect(e != nil, "\(args): stderr must be one JSON error line: \(r)")
            #expect(e?.code == "invalid_database", "\(args): \(r)")
            #expect(r.status == 8, "\(args): \(r)")
            #expect(e?.message.contains("garbage.db") == true, "the message names the file: \(r)")
        }
        let after = try #require(FileManager.default.contents(atPath: file))
        #expect([UInt8](after) == garbage, "the file must not be modified")
        #expect(!sb.exists(file + "-wal") && !sb.exists(file + "-journal"))
    }

    @Test func emptyFileIsAnEmptyDatabase() {
        let sb = Sandbox()
        let file = sb.write("empty.db", "")
        expectOK(sb.rtdb("get", "/", "--db", file), "null\n")
        expectOK(sb.rtdb("set", "/a", "1", "--db", file), "{\"path\":\"/a\",\"value\":1}\n")
        expectOK(sb.rtdb("get", "/", "--db", file), "{\"a\":1}\n")
    }

    /// Holds a write lock on `db` (BEGIN IMMEDIATE) in a python3 process for `seconds`
    /// (or until killed), then rolls back; returns once the lock is held.
    func lockHolder(_ sb: Sandbox, db: String, seconds: Double = 60) throws -> Child {
        let python = try #require(Binary.onPath("python3"), "python3 is needed to hold a lock")
        let script = """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
            c.execute("BEGIN IMMEDIATE")
            print("locked", flush=True)
            time.sleep(float(sys.argv[2]))
            c.execute("ROLLBACK")
            """
        // python3 runs with the test runner's own environment (pyenv shims need the real HOME).
        let child = try #require(Child([python, "-c", script, db, String(seconds)], env: ProcessInfo.processInfo.environment, stdinPath: nil,
                                       stdoutPath: sb.dir + "/lock.out", stderrPath: sb.dir + "/lock.err"))
        let deadline = Spawn.now() + 20
        while !child.stdout.contains("locked") {
            if !child.isRunning || Spawn.now() > deadline {
                Issue.record("lock holder did not start: \(child.stderr)")
                break
            }
            usleep(10_000)
        }
        return child
    }

    @Test func lockedDatabaseTimesOutWithStatus6AndWritesNothing() throws {
        let sb = Sandbox()
        sb.seed("/", "{\"a\":1}")
        let holder = try lockHolder(sb, db: sb.db)
        defer { holder.killGroup(); holder.wait(timeout: 10) }

        let r = sb.rtdb("--timeout", "0.5", "set", "/x", "1", timeout: 30)
        expectError(r, status: 6, code: "timeout")
        #expect(r.elapsed >= 0.45, "it should wait for the lock before giving up (\(r.elapsed)s)")
        #expect(r.elapsed < 8, "it should give up after about 0.5s, not \(r.elapsed)s")

        // The same through RTDB_TIMEOUT, and for the other writers.
        expectError(sb.rtdb("increment", "/n", env: ["RTDB_TIMEOUT": "0.3"], timeout: 30), status: 6, code: "timeout")
        expectError(sb.rtdb("update", "/", "{\"b\":2}", "--timeout", "0.3", timeout: 30), status: 6, code: "timeout")
        expectError(sb.rtdb("push", "/l", "1", "--timeout", "0.3", timeout: 30), status: 6, code: "timeout")
        expectError(sb.rtdb("remove", "/a", "--timeout", "0.3", timeout: 30), status: 6, code: "timeout")
        expectError(sb.rtdb("tx", "/a", "--timeout", "0.3", "--", "echo", "2", timeout: 30), status: 6, code: "timeout")

        // Readers are not blocked by a writer (WAL).
        let g = sb.rtdb("--timeout", "0.5", "get", "/", timeout: 30)
        expectOK(g, "{\"a\":1}\n")

        holder.killGroup()
        holder.wait(timeout: 10)
        // Nothing of the timed-out writes was stored.
        expectOK(sb.rtdb("get", "/"), "{\"a\":1}\n")
        // And the file is usable again.
        expectOK(sb.rtdb("set", "/x", "1"), "{\"path\":\"/x\",\"value\":1}\n")
    }

    @Test func writerWaitsForAShortLockAndThenSucceeds() throws {
        let sb = Sandbox()
        sb.seed("/", "{\"a\":1}")
        // The lock is released after ~0.8 s while rtdb is waiting with a 20 s timeout.
        let holder = try lockHolder(sb, db: sb.db, seconds: 0.8)
        let r = sb.rtdb("--timeout", "20", "set", "/x", "2", timeout: 60)
        holder.wait(timeout: 10)
        expectOK(r, "{\"path\":\"/x\",\"value\":2}\n")
        #expect(r.elapsed >= 0.4, "the write should have waited for the lock (\(r.elapsed)s)")
        expectOK(sb.rtdb("get", "/"), "{\"a\":1,\"x\":2}\n")
    }
}
