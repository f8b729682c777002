/// What is open on a database handle's connection, and the scopes that decide how the next
/// call runs, as one value: at most one transaction is open (a shared read or a batch's
/// write), a shared read is open only inside `beginSharedReads` … `endSharedReads`, and a
/// batch's transaction only inside `beginBatch` … its end. The transitions are here; the code
/// that runs the SQL (SharedReads.swift, Batch.swift) asks for them.
enum TransactionState {
    /// How a group commit's batch takes the write lock, and what it found.
    struct Batch {
        /// Waits for another process's write lock up to the timeout, or tries once.
        var waitsForLock = true
        /// Tried once and found the lock held by another process.
        var lockBusy = false
    }

    /// No transaction open. `sharing`: reads open a shared one; `batch`: writes join a batch
    /// whose transaction opens with the first of them.
    case idle(sharing: Bool, batch: Batch?)
    /// A read transaction that reads share is open.
    case sharedRead(batch: Batch?)
    /// The batch's write transaction is open.
    case batchOpen(Batch, sharing: Bool)

    static let none = TransactionState.idle(sharing: false, batch: nil)

    /// Inside `beginSharedReads` … `endSharedReads`.
    var sharingReads: Bool {
        switch self {
        case .idle(let sharing, _), .batchOpen(_, let sharing): sharing
        case .sharedRead: true
        }
    }

    /// Inside `beginBatch` … its commit or rollback.
    var batch: Batch? {
        switch self {
        case .idle(_, let batch), .sharedRead(let batch): batch
        case .batchOpen(let batch, _): batch
        }
    }

    var sharedReadOpen: Bool {
        if case .sharedRead = self { true } else { false }
    }

    var batchOpen: Bool {
        if case .batchOpen = self { true } else { false }
    }

    // MARK: transitions

    /// Reads share a transaction from now on (not opened yet).
    mutating func beginSharedReads() {
        if case .idle(_, let batch) = self { self = .idle(sharing: true, batch: batch) }
        if case .batchOpen(let batch, _) = self { self = .batchOpen(batch, sharing: true) }
    }

    /// Reads run transactions of their own again (the shared one is closed first).
    mutating func endSharedReads() {
        if case .idle(_, let batch) = self { self = .idle(sharing: false, batch: batch) }
        if case .batchOpen(let batch, _) = self { self = .batchOpen(batch, sharing: false) }
    }

    /// The shared read transaction was opened on the connection.
    mutating func sharedReadOpened() {
        precondition(sharingReads && !batchOpen, "a shared read opened outside beginSharedReads")
        self = .sharedRead(batch: batch)
    }

    /// The shared read transaction ended (committed, or its connection closed).
    mutating func sharedReadClosed() {
        if case .sharedRead(let batch) = self { self = .idle(sharing: true, batch: batch) }
    }

    /// Writes join one batch from now on.
    mutating func beginBatch(waitingForLock: Bool) {
        let batch = Batch(waitsForLock: waitingForLock)
        switch self {
        case .idle(let sharing, _): self = .idle(sharing: sharing, batch: batch)
        case .sharedRead: self = .sharedRead(batch: batch)
        case .batchOpen(_, let sharing): self = .batchOpen(batch, sharing: sharing)
        }
    }

    /// The batch's write transaction was opened (the shared read, if any, was closed first).
    mutating func batchOpened() {
        guard let batch, !sharedReadOpen else {
            preconditionFailure("a batch's transaction opened outside beginBatch or over a shared read")
        }
        self = .batchOpen(batch, sharing: sharingReads)
    }

    /// The batch tried the write lock once and found it held by another process.
    mutating func batchFoundLockBusy() {
        switch self {
        case .idle(let sharing, var batch?):
            batch.lockBusy = true
            self = .idle(sharing: sharing, batch: batch)
        case .sharedRead(var batch?):
            batch.lockBusy = true
            self = .sharedRead(batch: batch)
        default:
            break
        }
    }

    /// The batch's transaction was rolled back while the batch goes on (its only write
    /// failed): the next write of the batch opens another.
    mutating func batchTransactionRolledBack() {
        if case .batchOpen(let batch, let sharing) = self { self = .idle(sharing: sharing, batch: batch) }
    }

    /// The batch ended (committed or rolled back): its transaction is closed.
    mutating func batchEnded() {
        switch self {
        case .idle(let sharing, _), .batchOpen(_, let sharing): self = .idle(sharing: sharing, batch: nil)
        case .sharedRead: self = .sharedRead(batch: nil)
        }
    }
}
