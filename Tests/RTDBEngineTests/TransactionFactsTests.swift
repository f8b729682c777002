import Testing
import RTDBCore
@testable import RTDBEngine

/// A group commit's writes share one transaction, which remembers what it learned of the file
/// (TransactionFacts): whether there are priorities, which indexes exist. A write of the batch
/// that changes those must be seen by the writes after it.
@Suite struct TransactionFactsTests {
    func exported(_ db: EmbeddedDatabase, _ p: String) throws -> String {
        JSONWriter.string(try db.export(path(p)), export: true)
    }

    @Test func aPriorityWrittenInABatchIsClearedByALaterWriteOfTheBatch() throws {
        let t = TempDatabase()
        t.db.beginBatch()
        _ = try t.db.set(path("/a"), .int(1))            // the batch sees no priorities
        _ = try t.db.set(path("/b"), json(#"{"x":1,".priority":5}"#))
        _ = try t.db.set(path("/b"), json(#"{"y":2}"#))   // replaces the node and its priority
        _ = try t.db.set(path("/c"), .int(1))
        _ = try t.db.set(path("/c/.priority"), .int(3))
        _ = try t.db.set(path("/c"), .int(2))
        _ = try t.db.set(path("/d"), json(#"{"e":{"f":1,".priority":"p"}}"#))
        _ = try t.db.set(path("/d/e/f"), .null)          // the emptied node loses its priority
        try t.db.commitBatch()
        let other = t.another()
        #expect(try exported(other, "/") == #"{"a":1,"b":{"y":2},"c":2}"#)
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try raw.integer("SELECT count(*) FROM priorities") == 0)
    }

    @Test func aPriorityOfAnEarlierBatchIsSeenByTheNext() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/b"), json(#"{"x":1,".priority":5}"#))
        t.db.beginBatch()
        _ = try t.db.set(path("/a"), .int(1))
        _ = try t.db.set(path("/b"), .int(2))
        try t.db.commitBatch()
        #expect(try exported(t.another(), "/") == #"{"a":1,"b":2}"#)
    }

    @Test func anIndexAddedInABatchIsKeptByTheLaterWritesOfTheBatch() throws {
        let t = TempDatabase()
        let byX = try IndexDefinition(location: "/list", child: "x")
        t.db.beginBatch()
        _ = try t.db.set(path("/list/a"), json(#"{"x":2}"#))   // the batch sees no indexes
        #expect(try t.db.addIndex(byX))
        _ = try t.db.set(path("/list/b"), json(#"{"x":1}"#))
        _ = try t.db.set(path("/list/c"), json(#"{"x":3}"#))
        try t.db.commitBatch()
        let q = Query(order: .child(path("x")), limit: .first(2))
        #expect(try t.another().query(path("/list"), q).map(\.key) == ["b", "a"])
        // And one removed in a batch is no longer kept.
        t.db.beginBatch()
        _ = try t.db.set(path("/list/d"), json(#"{"x":0}"#))
        #expect(try t.db.removeIndex(byX))
        _ = try t.db.set(path("/list/e"), json(#"{"x":-1}"#))
        try t.db.commitBatch()
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try raw.integer("SELECT count(*) FROM index_entries") == 0)
        #expect(try t.another().query(path("/list"), q).map(\.key) == ["e", "d"])
    }

    @Test func aWriteRolledBackInABatchLeavesNoFactBehind() throws {
        let t = TempDatabase()
        t.db.beginBatch()
        _ = try t.db.set(path("/a"), .int(1))
        #expect(throws: RTDBError.self) {
            _ = try t.db.writingInBatch { c in
                try t.db.write(c, path("/p"), json(#"{"x":1,".priority":1}"#))
                throw RTDBError(.internal, "failed halfway")
            }
        }
        _ = try t.db.set(path("/q"), json(#"{"y":1,".priority":2}"#))
        _ = try t.db.set(path("/q"), .int(3))
        try t.db.commitBatch()
        #expect(try exported(t.another(), "/") == #"{"a":1,"q":3}"#)
    }

    /// The write that opens a batch's transaction runs without a savepoint: when it fails, the
    /// transaction is rolled back (nothing else is in it), and the batch's next write opens
    /// another, which commits.
    @Test func aFailedFirstWriteOfABatchIsUndoneAloneAndTheBatchGoesOn() throws {
        let t = TempDatabase()
        _ = try t.db.set(path("/kept"), .int(0))
        t.db.beginBatch()
        #expect(throws: RTDBError.self) {
            _ = try t.db.writingInBatch { c in
                try t.db.write(c, path("/p"), json(#"{"x":1,".priority":1}"#))
                throw RTDBError(.internal, "failed halfway")
            }
        }
        _ = try t.db.set(path("/q"), .int(3))
        #expect(throws: RTDBError.self) {
            _ = try t.db.writingInBatch { c in
                try t.db.write(c, path("/r"), .int(1))
                throw RTDBError(.internal, "failed halfway")
            }
        }
        try t.db.commitBatch()
        #expect(try exported(t.another(), "/") == #"{"kept":0,"q":3}"#)
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try raw.integer("SELECT count(*) FROM priorities") == 0)
    }

    /// A connection takes over what its last write transaction knew only while nobody else
    /// wrote the file: a priority, an index and a large value another handle wrote in between
    /// are seen by its next write.
    @Test func factsOfAnEarlierTransactionLastOnlyUntilAnotherConnectionWrites() throws {
        let t = TempDatabase()
        t.db.sizeThreshold = 100
        for n in 0..<3 { _ = try t.db.set(path("/a"), .int(Int64(n))) }   // no priorities, no indexes
        let other = t.another()
        other.sizeThreshold = 100
        _ = try other.set(path("/b"), json(#"{"x":1,".priority":5}"#))
        #expect(try other.addIndex(IndexDefinition(location: "/list", child: "x")))
        _ = try other.set(path("/big"), .string(String(repeating: "z", count: 300)))
        _ = try t.db.set(path("/b"), json(#"{"y":2}"#))                  // replaces its priority
        _ = try t.db.set(path("/list/c"), json(#"{"x":3}"#))              // kept in the index
        _ = try t.db.set(path("/big2"), .string(String(repeating: "z", count: 300)))
        #expect(try exported(t.another(), "/b") == #"{"y":2}"#)
        let raw = try Connection(file: t.file, create: false, timeoutSeconds: 1)
        #expect(try raw.integer("SELECT count(*) FROM priorities") == 0)
        #expect(try raw.integer("SELECT count(*) FROM index_entries") == 1)
        try StoredSizesTests.expectExact(t.db, "after writes on both handles")
        #expect(try raw.integer("SELECT count(*) FROM sizes") == 3)   // the root and both strings
    }
}
