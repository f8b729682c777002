import RTDBCore

extension EmbeddedDatabase {
    /// Runs `body` as one write transaction in which this database's own calls (`get`, `set`,
    /// `update`, conditional writes) all take part: what `body` reads is what it writes over,
    /// with no other writer in between, and a throw undoes every write `body` made. Inside a
    /// group-commit batch it is one savepoint of the batch; otherwise it commits on return.
    /// (Security rules check a write against the data it replaces this way.)
    public func atomically<T>(_ body: () throws -> T) throws -> T {
        if batching { return try writingInBatch { _ in try body() } }
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
