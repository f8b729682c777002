import Testing
import RTDBCore
@testable import RTDBServer

/// Storage whose files are locked by another process for as long as `locked` says.
private final class LockedStorage: CommitStorage {
    var log: [String] = []
    var locked = true
    private(set) var touched: [String] = []
    private(set) var lockWasBusy = false
    var lockTimeoutSeconds: Double { 1 }

    func beginBatch() { log.append("begin") }
    func startRequest() { touched = [] }
    func commitBatch() -> [String: RTDBError] {
        log.append("commit")
        lockWasBusy = false
        return [:]
    }
    func rollbackBatch() {
        log.append("rollback")
        lockWasBusy = false
    }

    /// A write reaching `a.db`: it fails at once while the file is locked.
    func write(_ name: String) -> RTDBError? {
        log.append(name)
        if !touched.contains("a.db") { touched.append("a.db") }
        if locked {
            lockWasBusy = true
            return RTDBError(.timeout, "locked")
        }
        return nil
    }
}

@Suite("Group commit: another process's lock sends the batch back to wait")
struct GroupCommitRetryTests {
    final class Clock {
        var nanos: UInt64 = 1_000_000_000
        func advance(millis: UInt64) { nanos += millis * 1_000_000 }
    }

    @Test func aLockedBatchIsRolledBackAndRunAgainInOrderAfterAGrowingPause() {
        let storage = LockedStorage()
        let clock = Clock()
        let commit = GroupCommit(storage: storage, clock: { clock.nanos })
        var answers: [String] = []
        for name in ["w1", "w2"] {
            commit.submit {
                let error = storage.write(name)
                return { lost in answers.append("\(name) \((lost ?? error)?.message ?? "stored")") }
            }
        }
        commit.submitDisconnect { _ = storage.write("d") }
        commit.run { _ in storage.log.append("events") }
        // The first write to find the lock ends the batch: nobody is answered.
        #expect(storage.log == ["begin", "d", "rollback"])
        #expect(answers.isEmpty)
        #expect(commit.takeRetryDelay() == 2)
        #expect(commit.takeRetryDelay() == nil)
        #expect(!commit.canRun)
        clock.advance(millis: 2)
        #expect(commit.canRun)
        commit.run { _ in }
        #expect(commit.takeRetryDelay() == 4)
        clock.advance(millis: 4)
        storage.locked = false
        storage.log = []
        commit.run { _ in storage.log.append("events") }
        #expect(storage.log == ["begin", "d", "w1", "w2", "commit", "events"])
        #expect(answers == ["w1 stored", "w2 stored"])
        #expect(commit.isEmpty)
    }

    @Test func writesThatWaitedPastTheTimeoutFailAsAWaitThatGaveUp() {
        let storage = LockedStorage()
        let clock = Clock()
        let commit = GroupCommit(storage: storage, clock: { clock.nanos })
        var answers: [String] = []
        commit.submit {
            let error = storage.write("old")
            return { _ in answers.append("old \(error?.message ?? "stored")") }
        }
        commit.run { _ in }
        #expect(answers.isEmpty)
        // A write that comes later has its own timeout.
        clock.advance(millis: 600)
        commit.submit {
            let error = storage.write("young")
            return { _ in answers.append("young \(error?.message ?? "stored")") }
        }
        clock.advance(millis: 400)
        storage.log = []
        commit.run { _ in }
        #expect(storage.log == ["begin", "old", "commit"])
        #expect(answers == ["old locked"])
        // The young one keeps waiting, and is stored once the lock is free.
        commit.run { _ in }
        #expect(answers == ["old locked"])
        storage.locked = false
        clock.advance(millis: 100)
        commit.run { _ in }
        #expect(answers == ["old locked", "young stored"])
    }
}
