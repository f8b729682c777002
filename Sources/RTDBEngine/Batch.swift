import RTDBCore

/// Group commit: between `beginBatch()` and `commitBatch()` every write joins one transaction
/// (opened by the first of them), each inside its own savepoint, so a write that fails rolls
/// back alone while the others stay; one COMMIT (one fsync) then makes all of them durable.
/// Nothing in a batch is acknowledged before `commitBatch()` returns: if the COMMIT fails, every
/// write of the batch is lost together and the caller must report each as failed.
///
/// With `deferringSync`, the COMMIT does not wait for its fsync (the batch runs at
/// `synchronous=NORMAL`, which in WAL mode writes the log without syncing it): the caller makes
/// it durable with a `WALSync` of this file, off its own thread, and must not acknowledge any
/// write of the batch before that returns. Every other transaction of the handle stays at
/// `synchronous=FULL`.
extension EmbeddedDatabase {
    public func beginBatch(deferringSync: Bool = false) {
        batching = true
        batchDefersSync = deferringSync
    }

    /// Commits the batch's writes (nothing to do when none was made).
    public func commitBatch() throws {
        defer {
            batching = false
            batchOpen = false
        }
        guard batchOpen else { return }
        let c = try writeConnection()
        // SQLite refuses to change the safety level inside a transaction: back to FULL after it.
        defer { if batchDefersSync { try? c.run("PRAGMA synchronous=FULL") } }
        do {
            try c.exec("COMMIT")
        } catch {
            if !c.autocommit { try? c.exec("ROLLBACK") }
            throw error
        }
    }

    /// Opens the batch's transaction (taking the write lock) unless it is open already.
    func openBatch() throws {
        if batchOpen { return }
        try retryingWhileBusy {
            let c = try writeConnection()
            if batchDefersSync { try c.run("PRAGMA synchronous=NORMAL") }
            do { try c.exec("BEGIN IMMEDIATE") } catch {
                if batchDefersSync { try? c.run("PRAGMA synchronous=FULL") }
                throw error
            }
        }
        batchOpen = true
    }

    func writingInBatch<T>(_ body: (Connection) throws -> T) throws -> T {
        try openBatch()
        let c = try writeConnection()
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
