/// A normalised database path: a list of valid keys. Parsing drops leading, trailing and doubled
/// slashes (`/a//b/` is `/a/b`), so `Path` values never carry empty segments. Printed with a
/// leading `/`; the root prints as `/`.
public struct Path: Sendable, CustomStringConvertible {
    public private(set) var keys: [String]

    public static let root = Path(validatedKeys: [])

    /// Keys that are already known to be valid (internal use and trusted callers).
    public init(validatedKeys keys: [String]) { self.keys = keys }

    /// Parses and validates a path written by a user: each segment must be a valid key
    /// (firebase-semantics §1.1). `invalid_path` otherwise.
    public init(_ text: String) throws {
        var keys: [String] = []
        for seg in text.split(separator: "/", omittingEmptySubsequences: true) {
            let key = String(seg)
            // `.info` names the read-only metadata tree; it may only start a path.
            if keys.isEmpty && key == ".info" { keys.append(key); continue }
            if let problem = Limits.keyProblem(key) {
                throw RTDBError(.invalidPath, "invalid path \(Limits.quote(text)): \(problem)")
            }
            keys.append(key)
        }
        if keys.count > Limits.maxDepth {
            throw RTDBError(.tooDeep, "path \(Limits.quote(text)) is more than \(Limits.maxDepth) levels deep")
        }
        self.keys = keys
    }

    public var isRoot: Bool { keys.isEmpty }
    public var count: Int { keys.count }
    public var last: String? { keys.last }
    public var parent: Path? { isRoot ? nil : Path(validatedKeys: Array(keys.dropLast())) }

    /// True when this path is `/.info` or below it (read-only in Firebase).
    public var isInfo: Bool { keys.first.map { KeyOrder.same($0, ".info") } ?? false }

    public func appending(_ key: String) -> Path { Path(validatedKeys: keys + [key]) }
    public func appending(_ other: Path) -> Path { Path(validatedKeys: keys + other.keys) }

    /// `self` is `other` or an ancestor of it (segment-wise, byte-exact).
    public func contains(_ other: Path) -> Bool {
        guard keys.count <= other.keys.count else { return false }
        for i in 0..<keys.count where !KeyOrder.same(keys[i], other.keys[i]) { return false }
        return true
    }

    /// `other` relative to `self` when `self` contains it.
    public func relative(_ other: Path) -> Path? {
        contains(other) ? Path(validatedKeys: Array(other.keys[keys.count...])) : nil
    }

    public func same(as other: Path) -> Bool {
        keys.count == other.keys.count && contains(other)
    }

    public var description: String { "/" + keys.joined(separator: "/") }
}
