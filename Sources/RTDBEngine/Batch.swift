import RTDBCore

/// Group commit: between `beginBatch()` and `commitBatch()` every write joins one transaction
/// (opened by the first of them), each inside its own savepoint, so a write that fails rolls
/// back alone while the others stay; one COMMIT (one fsync) then makes all of them durable.
/// Nothing in a batch is acknowledged before `commitBatch()` returns: if the COMMIT fails, every
/// write of the batch is lost together and the caller must report each as failed.
///
/// A batch begun with `waitingForLock: false` never waits for another process's write lock:
/// its transaction is tried once, and when the lock is held the write fails as a wait that
/// gave up would, and `batchFoundLockBusy` says so. The caller may then `rollbackBatch()` and
/// run the same writes again later (rtdb serve, whose loop must keep answering reads).
extension EmbeddedDatabase {
    public func beginBatch(waitingForLock: Bool = true) {
        transaction.beginBatch(waitingForLock: waitingForLock)
    }

    /// A write of this batch found the file's write lock held by another process (only in a
    /// batch that does not wait for it).
    public var batchFoundLockBusy: Bool { transaction.batch?.lockBusy == true }

    /// Commits the batch's writes (nothing to do when none was made).
    public func commitBatch() throws {
        defer { transaction.batchEnded() }
        guard transaction.batchOpen else { return }
        let c = try writeConnection()
        do {
            try c.run("COMMIT")
        } catch {
            if !c.autocommit { try? c.exec("ROLLBACK") }
            throw error
        }
    }

    /// Ends the batch with nothing of it stored.
    public func rollbackBatch() {
        defer { transaction.batchEnded() }
        guard transaction.batchOpen, let c = conn, !c.autocommit else { return }
        try? c.exec("ROLLBACK")
    }

    /// Opens the batch's transaction, if it is not open yet: waits for the write lock up to the
    /// timeout, or tries once (see the type's comment).
    func openBatchTransaction() throws {
        if transaction.batchOpen { return }
        if transaction.batch?.waitsForLock != false {
            try retryingWhileBusy { try writeConnection().run("BEGIN IMMEDIATE") }
        } else {
            do {
                try withoutLockWaits { try writeConnection().run("BEGIN IMMEDIATE") }
            } catch let e as RTDBError where e.code == .timeout {
                // (`timeout` is SQLite's BUSY or LOCKED: the lock is another connection's.)
                transaction.batchFoundLockBusy()
                throw e
            }
        }
        transaction.batchOpened()
    }

    func writingInBatch<T>(_ body: (Connection) throws -> T) throws -> T {
        let opening = !transaction.batchOpen
        try openBatchTransaction()
        let c = try writeConnection()
        if opening {
            // The write that opens the transaction needs no savepoint (most batches hold one
            // write): rolling the transaction back undoes it alone, and the next write of the
            // batch opens another.
            do {
                return try body(c)
            } catch {
                if !c.autocommit { try? c.exec("ROLLBACK") }
                transaction.batchTransactionRolledBack()
                throw error
            }
        }
        try c.run("SAVEPOINT one_write")
        do {
            let result = try body(c)
            try c.run("RELEASE one_write")
            return result
        } catch {
            try? c.exec("ROLLBACK TO one_write")
            try? c.exec("RELEASE one_write")
            throw error
        }
    }
}
