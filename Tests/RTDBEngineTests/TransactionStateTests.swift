import Testing
@testable import RTDBEngine

/// The transaction open on a handle's connection is one value: its transitions keep at most
/// one transaction open, and the scopes (shared reads, a batch) apart from it.
@Suite struct TransactionStateTests {
    @Test func aSharedReadClosesBeforeABatchOpensAndSharingOutlivesTheBatch() {
        var s = TransactionState.none
        s.beginSharedReads()
        s.sharedReadOpened()
        #expect(s.sharedReadOpen && s.sharingReads && s.batch == nil)
        s.beginBatch(waitingForLock: false)
        #expect(s.sharedReadOpen && s.batch?.waitsForLock == false)
        s.sharedReadClosed()
        s.batchOpened()
        #expect(s.batchOpen && !s.sharedReadOpen && s.sharingReads)
        s.batchEnded()
        #expect(!s.batchOpen && s.batch == nil && s.sharingReads)
        s.endSharedReads()
        #expect(!s.sharingReads && !s.sharedReadOpen && s.batch == nil)
    }

    @Test func aBusyLockIsRememberedUntilTheBatchEnds() {
        var s = TransactionState.none
        s.beginBatch(waitingForLock: false)
        s.batchFoundLockBusy()
        #expect(s.batch?.lockBusy == true && !s.batchOpen)
        s.batchEnded()
        #expect(s.batch == nil)
        s.beginBatch(waitingForLock: true)
        #expect(s.batch?.lockBusy == false && s.batch?.waitsForLock == true)
    }

    @Test func aBatchWhoseTransactionWasRolledBackGoesOnWithoutOne() {
        var s = TransactionState.none
        s.beginBatch(waitingForLock: false)
        s.batchOpened()
        s.batchTransactionRolledBack()
        #expect(!s.batchOpen && s.batch?.waitsForLock == false)
        s.batchOpened()
        #expect(s.batchOpen)
    }
}
