import RTDBCore

extension EmbeddedDatabase {
    /// The conditional write in one `BEGIN IMMEDIATE` transaction: the value is read, checked
    /// and replaced while this process holds the write lock, so no other writer (thread or
    /// process) can change it in between. Server values resolve against the value read.
    public func set(_ path: Path, _ value: Node, if condition: (Node) -> Bool) throws -> CompareAndSetResult {
        try writing { c in
            let current = try read(c, path)
            guard condition(current) else { return .stale(current: current) }
            let resolved = try ServerValues.resolve(value, at: path, now: clock()) { try readForIncrement(c, $0) }
            try write(c, path, resolved)
            try log(c, [path], .set(path, resolved))
            return .committed(resolved)
        }
    }
}
