import Foundation
import Testing
import RTDBCore
@testable import RTDBEngine

/// Transactions on the embedded database never give up to contention: after `lockAfter` stale
/// attempts the next one runs holding the write lock (`LockingDatabase`).
@Suite struct LockedTransactionTests {
    @Test func afterThreeStaleAttemptsTheFourthHoldsTheLockAndCommits() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = EmbeddedDatabase(file: t.file, timeoutSeconds: 0.1)
        var calls = 0
        var blockedWhileLocked: RTDBError? = nil
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: Int.max, lockAfter: 3) { current in
            calls += 1
            if calls <= 3 {
                _ = try other.set(path("/n"), .int(Int64(100 * calls)))   // a writer gets in first, every time
            } else {
                // Holding the lock: another writer waits, up to its timeout, and gives up.
                do { _ = try other.set(path("/n"), .int(-1)) } catch let e as RTDBError { blockedWhileLocked = e }
            }
            guard case .int(let n) = current else { return .int(1) }
            return .int(n + 1)
        }
        #expect(outcome.committed)
        #expect(outcome.attempts == 4)
        #expect(calls == 4)
        #expect(blockedWhileLocked?.code == .timeout, "a write got in while the lock was held")
        #expect(text(try t.db.get(path("/n"))) == "301")
        // A reader is not blocked by the lock: it ran the whole time (checked above through
        // `get` inside the locked attempt); the lock is released afterwards.
        _ = try other.set(path("/n"), .int(7))
        #expect(text(try t.db.get(path("/n"))) == "7")
    }

    @Test func anAbortUnderTheLockWritesNothingAndReleasesIt() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = EmbeddedDatabase(file: t.file, timeoutSeconds: 1)
        var calls = 0
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: Int.max, lockAfter: 1) { _ in
            calls += 1
            if calls == 1 { _ = try other.set(path("/n"), .int(5)) ; return .int(99) }
            return nil
        }
        #expect(!outcome.committed)
        #expect(outcome.attempts == 2)
        #expect(text(outcome.value) == "5")
        _ = try other.set(path("/n"), .int(6))   // the lock is free again
        #expect(text(try t.db.get(path("/n"))) == "6")
    }

    @Test func anErrorUnderTheLockRollsBackAndReleasesIt() throws {
        struct Stop: Error {}
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = EmbeddedDatabase(file: t.file, timeoutSeconds: 1)
        #expect(throws: Stop.self) {
            _ = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: Int.max, lockAfter: 0) { _ in throw Stop() }
        }
        _ = try other.set(path("/n"), .int(3))
        #expect(text(try t.db.get(path("/n"))) == "3")
    }

    @Test func waitingForTheLockIsBoundedByTheTimeout() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = EmbeddedDatabase(file: t.file, timeoutSeconds: 0.2)
        let start = Date()
        var waited: RTDBError? = nil
        _ = try t.db.whileLocked {
            do {
                _ = try TransactionRunner.run(other, path: path("/n"), maxAttempts: Int.max, lockAfter: 0) { _ in .int(1) }
            } catch let e as RTDBError { waited = e }
        }
        #expect(waited?.code == .timeout)
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(text(try t.db.get(path("/n"))) == "0")
    }

    @Test func withoutALockTheBoundStillApplies() throws {
        // lockAfter beyond maxAttempts: every attempt is optimistic, and contention ends it.
        let t = TempDatabase()
        _ = try t.db.set(path("/n"), .int(0))
        let other = t.another()
        var calls = 0
        let outcome = try TransactionRunner.run(t.db, path: path("/n"), maxAttempts: 3, lockAfter: 3) { current in
            calls += 1
            _ = try other.set(path("/n"), .int(Int64(100 * calls)))
            return .int(1)
        }
        #expect(!outcome.committed)
        #expect(outcome.attempts == 3)
        #expect(text(try t.db.get(path("/n"))) == "300")
    }
}
