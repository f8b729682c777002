import Testing
import RTDBCore
@testable import RTDBServer

/// Storage that records what group commit asks of it, with files that fail on demand.
private final class FakeStorage: CommitStorage {
    var log: [String] = []
    var failing: [String: RTDBError] = [:]
    private(set) var touched: [String] = []

    func beginBatch() { log.append("begin") }
    func startRequest() { touched = [] }
    func commitBatch() -> [String: RTDBError] {
        log.append("commit")
        return failing
    }

    /// A write reaching `file` (as ServerNamespaces notes the files a request opens).
    func write(_ name: String, to files: String...) {
        log.append(name)
        for f in files where !touched.contains(f) { touched.append(f) }
    }
}

@Suite("Group commit: one batch per turn, answers after the commit")
struct GroupCommitTests {
    @Test func onDisconnectWritesFirstThenWritesInOrderThenOneCommitThenTheAnswers() {
        let storage = FakeStorage()
        let commit = GroupCommit(storage: storage)
        var answers: [String] = []
        commit.submit {
            storage.write("w1", to: "a.db")
            return { lost in answers.append("w1 \(lost == nil ? "durable" : "lost")") }
        }
        commit.submitDisconnect { storage.write("disconnect", to: "b.db") }
        commit.submit {
            storage.write("w2", to: "a.db", "c.db")
            return { _ in answers.append("w2") }
        }
        #expect(!commit.isEmpty)
        var committedFiles: [String] = []
        commit.run { files in
            committedFiles = files
            storage.log.append("events")
        }
        #expect(storage.log == ["begin", "disconnect", "w1", "w2", "commit", "events"])
        #expect(committedFiles == ["b.db", "a.db", "c.db"])
        #expect(answers == ["w1 durable", "w2"])
        #expect(commit.isEmpty)
    }

    @Test func aWriteToAFileWhoseCommitFailedLearnsWhy() {
        let storage = FakeStorage()
        storage.failing = ["c.db": RTDBError(.ioError, "disk full")]
        let commit = GroupCommit(storage: storage)
        var lost: [String: RTDBError?] = [:]
        commit.submit {
            storage.write("w1", to: "a.db")
            return { lost["w1"] = $0 }
        }
        commit.submit {
            storage.write("w2", to: "a.db", "c.db")
            return { lost["w2"] = $0 }
        }
        var committedFiles: [String] = []
        commit.run { committedFiles = $0 }
        #expect(lost["w1"] == .some(nil))
        #expect(lost["w2"] == .some(RTDBError(.ioError, "disk full")))
        // Streams hear only of what was committed.
        #expect(committedFiles == ["a.db"])
    }

    @Test func writesSubmittedWhileABatchAnswersGoToTheNextBatch() {
        let storage = FakeStorage()
        let commit = GroupCommit(storage: storage)
        var order: [String] = []
        commit.submit {
            storage.write("first", to: "a.db")
            return { _ in
                order.append("first answered")
                // A pipelined write of the same connection, now free to run.
                commit.submit {
                    storage.write("second", to: "a.db")
                    return { _ in order.append("second answered") }
                }
            }
        }
        commit.run { _ in }
        #expect(order == ["first answered"])
        #expect(!commit.isEmpty)
        commit.run { _ in }
        #expect(order == ["first answered", "second answered"])
        #expect(storage.log == ["begin", "first", "commit", "begin", "second", "commit"])
        // Nothing submitted: no batch at all.
        commit.run { _ in Issue.record("an empty batch ran") }
        #expect(storage.log.count == 6)
    }

    @Test func aDetachedWriteStartsAfterTheWritesBeforeItAndHoldsBackTheRest() {
        let storage = FakeStorage()
        let commit = GroupCommit(storage: storage)
        var order: [String] = []
        commit.submit {
            storage.write("before", to: "a.db")
            return { _ in order.append("before answered") }
        }
        commit.submitDetached { order.append("huge started") }
        commit.submit {
            storage.write("after", to: "a.db")
            return { _ in order.append("after answered") }
        }
        commit.run { _ in }
        #expect(order == ["before answered", "huge started"])
        #expect(commit.detachedRunning && !commit.canRun && !commit.isEmpty)
        // While it runs, no batch: the loop never waits for the file's lock.
        commit.run { _ in Issue.record("a batch ran beside the detached write") }
        commit.submitDisconnect { storage.write("disconnect", to: "b.db") }
        commit.run { _ in Issue.record("a batch ran beside the detached write") }
        #expect(storage.log == ["begin", "before", "commit"])
        commit.detachedFinished()
        #expect(commit.canRun)
        commit.run { _ in }
        #expect(order == ["before answered", "huge started", "after answered"])
        #expect(storage.log == ["begin", "before", "commit", "begin", "disconnect", "after", "commit"])
        #expect(commit.isEmpty)
    }

    @Test func aDetachedWriteAloneOpensNoBatch() {
        let storage = FakeStorage()
        let commit = GroupCommit(storage: storage)
        var started = 0
        commit.submitDetached { started += 1 }
        commit.run { _ in Issue.record("an empty batch ran") }
        #expect(started == 1 && storage.log.isEmpty && commit.isEmpty && !commit.canRun)
        commit.detachedFinished()
        #expect(!commit.canRun)
    }
}
