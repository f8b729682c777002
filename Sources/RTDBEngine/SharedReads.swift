/// Reads that share one read transaction for a while: `rtdb serve` runs the reads of one turn
/// of its loop so, since every one of them was received before the turn's writes are
/// committed. Each read transaction costs SQLite a shared lock and its release (two `fcntl`
/// calls) and a `BEGIN` and `COMMIT` to parse; shared, a turn pays that once per file.
///
/// The shared transaction is opened by the first read and kept until `endSharedReads`, or until
/// anything else asks for the connection (a write, a transaction of its own): it is closed
/// first, and the next read opens a new one. A read that fails closes it too, so the next one
/// starts afresh.
extension EmbeddedDatabase {
    public func beginSharedReads() {
        transaction.beginSharedReads()
    }

    public func endSharedReads() {
        closeSharedRead()
        transaction.endSharedReads()
    }

    func closeSharedRead() {
        guard transaction.sharedReadOpen else { return }
        transaction.sharedReadClosed()
        if let c = conn, !c.autocommit { try? c.run("COMMIT") }
    }

    func readingShared<T>(_ empty: T, _ body: (Connection) throws -> T) throws -> T {
        try retryingWhileBusy {
            do {
                if !transaction.sharedReadOpen {
                    guard let c = try readConnection() else { return empty }
                    try c.run("BEGIN")
                    transaction.sharedReadOpened()
                    if legacyLayout { try refreshLegacyCopy(c) }
                }
                guard let c = conn else { return empty }
                return try body(c)
            } catch {
                closeSharedRead()
                throw error
            }
        }
    }
}
