import RTDBCore

/// Group commit: between `beginBatch()` and `commitBatch()` every write joins one transaction
/// (opened by the first of them), each inside its own savepoint, so a write that fails rolls
/// back alone while the others stay; one COMMIT (one fsync) then makes all of them durable.
/// Nothing in a batch is acknowledged before `commitBatch()` returns: if the COMMIT fails, every
/// write of the batch is lost together and the caller must report each as failed.
extension EmbeddedDatabase {
    public func beginBatch() {
        batching = true
    }

    /// Commits the batch's writes (nothing to do when none was made).
    public func commitBatch() throws {
        defer {
            batching = false
            batchOpen = false
        }
        guard batchOpen else { return }
        let c = try writeConnection()
        do {
            try c.exec("COMMIT")
        } catch {
            if !c.autocommit { try? c.exec("ROLLBACK") }
            throw error
        }
    }

    func writingInBatch<T>(_ body: (Connection) throws -> T) throws -> T {
        if !batchOpen {
            try retryingWhileBusy {
                let c = try writeConnection()
                try c.exec("BEGIN IMMEDIATE")
            }
            batchOpen = true
        }
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
