import RTDBCore

extension EmbeddedDatabase {
    /// Runs `body` inside one write transaction in which this database's own calls (`get`,
    /// `set`, `update`, conditional writes) take part: what `body` reads is what its write
    /// replaces, with no other writer in between. `body` reads, decides, and then makes at most
    /// one write call (itself all or nothing); if it throws, nothing of it is stored. Inside a
    /// group-commit batch it opens the batch's transaction if needed and runs in it; otherwise
    /// it is a transaction of its own, committed on return. (Security rules check a write
    /// against the data it replaces this way.)
    public func atomically<T>(_ body: () throws -> T) throws -> T {
        if transaction.batch != nil {
            try openBatchTransaction()
            return try body()
        }
        beginBatch()
        let result: T
        do {
            result = try writingInBatch { _ in try body() }
        } catch {
            // The savepoint is rolled back; end the (now empty) transaction.
            try? commitBatch()
            throw error
        }
        try commitBatch()
        return result
    }
}

extension EmbeddedDatabase: LockingDatabase {
    /// `atomically`: the write lock (`BEGIN IMMEDIATE`, waited for up to the timeout) is held
    /// while `body` runs.
    public func whileLocked<T>(_ body: () throws -> T) throws -> T {
        try atomically(body)
    }
}
