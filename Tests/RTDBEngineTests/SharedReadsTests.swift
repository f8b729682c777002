import Testing
import RTDBCore
@testable import RTDBEngine

/// Reads that share one transaction (`beginSharedReads` … `endSharedReads`): one snapshot for
/// all of them, which a write through the same handle ends before it starts its own.
@Suite struct SharedReadsTests {
    @Test func readsInsideShareOneSnapshotAndTheNextOneSeesNewCommits() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        let other = t.another()
        t.db.beginSharedReads()
        #expect(try text(t.db.get(path("/a"))) == "1")
        #expect(t.db.sharedReadOpen)
        _ = try other.set(path("/a"), .int(2))   // another process commits meanwhile
        #expect(try text(t.db.get(path("/a"))) == "1", "the snapshot of the first read")
        t.db.endSharedReads()
        #expect(!t.db.sharedReadOpen)
        #expect(try text(t.db.get(path("/a"))) == "2")
    }

    @Test func aWriteThroughTheSameHandleEndsTheSharedTransactionFirst() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/a"), .int(1))
        t.db.beginSharedReads()
        defer { t.db.endSharedReads() }
        #expect(try text(t.db.get(path("/a"))) == "1")
        _ = try t.db.set(path("/a"), .int(3))
        #expect(!t.db.sharedReadOpen)
        #expect(try text(t.db.get(path("/a"))) == "3")
        #expect(t.db.sharedReadOpen, "the next read opens a new shared transaction")
    }

    @Test func aFileNotYetCreatedReadsAsNothing() throws {
        let t = TempDatabase()
        t.db.beginSharedReads()
        #expect(try text(t.db.get(path("/a"))) == "null")
        t.db.endSharedReads()
        _ = try t.db.set(path("/a"), .int(4))
        #expect(try text(t.db.get(path("/a"))) == "4")
    }
}
