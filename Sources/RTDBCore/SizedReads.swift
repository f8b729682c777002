/// A database that can tell, without rendering a value, that its JSON is at least so large:
/// a server refuses a read past its response limit at the cost of counting up to the limit
/// (never of rendering it, nor of the whole database), and knows which reads are worth
/// answering away from its loop.
public protocol SizedReads: Database {
    /// A lower bound of the size of the compact JSON of the value at `path` (the export and
    /// pretty forms are larger still). The count stops once it passes `cap`: the work is in
    /// proportion to `min(size, cap)`, and a result above `cap` means "more than `cap`".
    func jsonBytesAtLeast(_ path: Path, stoppingAbove cap: Int) throws -> Int

    /// `jsonBytesAtLeast(path, stoppingAbove: cap) > cap`, which a database that keeps the
    /// sizes of its large nodes may answer without counting (a server asks it of every read,
    /// to know where to answer it).
    func jsonBytesExceed(_ path: Path, _ cap: Int) throws -> Bool
}

extension SizedReads {
    public func jsonBytesExceed(_ path: Path, _ cap: Int) throws -> Bool {
        try jsonBytesAtLeast(path, stoppingAbove: cap) > cap
    }
}
