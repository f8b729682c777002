import Testing
import RTDBCore
import RTDBNet
@testable import RTDBServer

/// Storage whose commits write the files their writes touched (or fail on demand).
private final class Files: CommitStorage {
    var failing: [String: RTDBError] = [:]
    private(set) var touched: [String] = []
    func beginBatch() {}
    func startRequest() { touched = [] }
    func commitBatch() -> [String: RTDBError] { failing }
    func write(to files: String...) { for f in files where !touched.contains(f) { touched.append(f) } }
}

/// A syncer the test answers by hand.
private final class Syncer: CommitSyncing {
    var requests: [(files: [String], mark: UInt64)] = []
    func request(files: [String], upTo mark: UInt64) { requests.append((files, mark)) }
}

@Suite("Group commit with its fsync on another thread: events at once, held; answers once durable")
struct GroupCommitSyncTests {
    @Test func theWritersAreAnsweredWhenTheirBatchIsDurableNotAtTheCommit() {
        let files = Files(), syncer = Syncer()
        let commit = GroupCommit(storage: files, syncer: syncer)
        var log: [String] = []
        commit.submit {
            files.write(to: "a.db")
            return { lost in log.append("w1 answered \(lost == nil ? "durable" : "lost") as \(commit.gate.current)") }
        }
        commit.run { committed in log.append("events of \(committed) as \(commit.gate.current)") }
        // The events are made at once (the gate holds them); the answer waits for the sync.
        #expect(log == ["events of [\"a.db\"] as 1"])
        #expect(syncer.requests.count == 1 && syncer.requests[0].files == ["a.db"] && syncer.requests[0].mark == 1)
        #expect(commit.isSyncing && commit.isEmpty)

        // The next batch commits while the first one's sync runs.
        commit.submit {
            files.write(to: "a.db", "b.db")
            return { _ in log.append("w2 answered as \(commit.gate.current)") }
        }
        commit.run { committed in log.append("events of \(committed) as \(commit.gate.current)") }
        #expect(syncer.requests.map(\.mark) == [1, 2])
        #expect(log.count == 2 && log[1] == "events of [\"a.db\", \"b.db\"] as 2")

        commit.synced(upTo: 1, failed: [:])
        #expect(commit.gate.durable == 1)
        #expect(log.last == "w1 answered durable as 1")
        #expect(commit.isSyncing)
        commit.synced(upTo: 2, failed: [:])
        #expect(log.last == "w2 answered as 2")
        #expect(!commit.isSyncing && commit.gate.durable == 2 && commit.gate.current == 2)
    }

    @Test func oneSyncCanCoverSeveralBatches() {
        let files = Files(), syncer = Syncer()
        let commit = GroupCommit(storage: files, syncer: syncer)
        var answered: [String] = []
        for name in ["w1", "w2"] {
            commit.submit {
                files.write(to: "a.db")
                return { _ in answered.append(name) }
            }
            commit.run { _ in }
        }
        commit.synced(upTo: 2, failed: [:])
        #expect(answered == ["w1", "w2"])
        #expect(!commit.isSyncing)
    }

    @Test func aWriteToAFileWhoseSyncFailedLearnsWhyTheOthersAreDurable() {
        let files = Files(), syncer = Syncer()
        let commit = GroupCommit(storage: files, syncer: syncer)
        var lost: [String: RTDBError?] = [:]
        commit.submit {
            files.write(to: "a.db")
            return { lost["a"] = $0 }
        }
        commit.submit {
            files.write(to: "b.db")
            return { lost["b"] = $0 }
        }
        commit.run { _ in }
        let failure = RTDBError(.ioError, "fsync b.db-wal: Input/output error")
        commit.synced(upTo: 1, failed: ["b.db": failure])
        #expect(lost["a"] == .some(nil))
        #expect(lost["b"] == .some(failure))
    }

    @Test func aBatchWithNothingCommittedIsAnsweredAtOnceWithoutASync() {
        let files = Files(), syncer = Syncer()
        files.failing = ["a.db": RTDBError(.ioError, "disk full")]
        let commit = GroupCommit(storage: files, syncer: syncer)
        var lost: RTDBError?? = .none
        commit.submit {
            files.write(to: "a.db")
            return { lost = .some($0) }
        }
        commit.run { committed in #expect(committed.isEmpty) }
        #expect(lost == .some(RTDBError(.ioError, "disk full")))
        #expect(syncer.requests.isEmpty && !commit.isSyncing && commit.gate.current == 0)
    }

    @Test func aCommitFailureInOneFileIsReportedAfterTheSyncOfTheOthers() {
        let files = Files(), syncer = Syncer()
        files.failing = ["b.db": RTDBError(.ioError, "disk full")]
        let commit = GroupCommit(storage: files, syncer: syncer)
        var lost: [String: RTDBError?] = [:]
        commit.submit {
            files.write(to: "a.db")
            return { lost["a"] = $0 }
        }
        commit.submit {
            files.write(to: "a.db", "b.db")
            return { lost["ab"] = $0 }
        }
        commit.run { committed in #expect(committed == ["a.db"]) }
        #expect(syncer.requests.count == 1 && syncer.requests[0].files == ["a.db"])
        #expect(lost.isEmpty)
        commit.synced(upTo: 1, failed: [:])
        #expect(lost["a"] == .some(nil))
        #expect(lost["ab"] == .some(RTDBError(.ioError, "disk full")))
    }
}
