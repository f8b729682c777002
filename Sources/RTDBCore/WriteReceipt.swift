/// One write a command makes, as it reaches `Database.commit(_:)`. Values are validated and
/// server-value placeholders left unresolved (see `WriteCheck`).
public enum Write: Sendable {
    /// Replaces the value at the path (`.null` deletes).
    case set(Path, Node)
    /// Deletes the path and everything below it.
    case remove(Path)
    /// Adds a number by the server-value increment rule.
    case increment(Path, by: Node)
    /// Adds each value under a new push ID, in order, as one atomic write.
    case push(Path, [Node])
    /// Replaces each relative path under the path at once, all or nothing.
    case update(Path, [(path: Path, value: Node)])

    /// The location the write is made at (a push's list, an update's base).
    public var path: Path {
        switch self {
        case .set(let p, _), .remove(let p), .increment(let p, _), .push(let p, _), .update(let p, _): return p
        }
    }
}

/// Why a write is still waiting in a queue, or why sending a queue stopped; the raw value is
/// the word printed as `"reason"`.
public enum QueueReason: String, Sendable {
    /// `--offline`, or the server could not be reached.
    case offline
    /// The server did not answer in time.
    case timeout
    /// Another process is sending the queue and did not reach this write in time.
    case busy
    /// The credential has expired or was refused as a token.
    case unauthenticated
    /// A queued write was made with another credential's principal.
    case principalMismatch = "principal_mismatch"
    /// The server answered, but cannot take writes now (404, 429, 5xx).
    case unavailable
}

/// What a write left, as the command that made it reports it.
///
/// Invariant: `values` holds one entry per location the write set, in the write's order: for
/// a set, remove or increment its path; for a push each new child (`path/key`); for an update
/// each of its paths, absolute. A database that applies writes at once (the embedded file, a
/// remote server) gives the values as stored, server values resolved, and `queued` nil; an
/// offline cache that could not have the write acknowledged gives its local estimate and says
/// why it waits.
public struct WriteReceipt: Sendable {
    /// A write waiting in an offline cache's queue.
    public struct Queued: Sendable {
        /// The queue's id of the write (ids only grow).
        public var id: Int64
        public var reason: QueueReason
        /// The values hold estimates of server values (a timestamp, an increment).
        public var estimated: Bool
        /// An estimated increment was added to a number the cache does not hold (taken as
        /// missing, as the server would take it): the server's sum may well differ.
        public var baseUnknown: Bool

        public init(id: Int64, reason: QueueReason, estimated: Bool, baseUnknown: Bool = false) {
            self.id = id
            self.reason = reason
            self.estimated = estimated
            self.baseUnknown = baseUnknown
        }
    }

    public var values: [(path: Path, value: Node)]
    /// Set while the write waits to be sent; nil once it is applied.
    public var queued: Queued?
    /// The write went out before and may have been applied twice (an increment sent again
    /// after a crash may count twice).
    public var resent: Bool

    public init(values: [(path: Path, value: Node)], queued: Queued? = nil, resent: Bool = false) {
        self.values = values
        self.queued = queued
        self.resent = resent
    }
}

/// The ways to read one location's value (`get`, `get --export`, `get --shallow`).
public enum ReadForm: Sendable {
    /// The data, without priorities.
    case value
    /// With every priority in it (Firebase's `format=export`).
    case export
    /// The REST `shallow=true` view: a primitive as itself, an object as `{child: true, …}`.
    case shallow
}

/// A read's answer, which an offline cache can give in part.
public struct ReadResult<Value>: Sendable where Value: Sendable {
    public var value: Value
    /// False when only part of the data could be read: the value holds what is known.
    public var complete: Bool

    public init(_ value: Value, complete: Bool = true) {
        self.value = value
        self.complete = complete
    }

    /// The error that ends a read whose partial answer was printed (`--partial`).
    public static func incomplete(_ path: Path) -> RTDBError {
        RTDBError(.incomplete, "\(path): the offline cache holds only part of it; what it holds was printed")
    }
}

extension Node {
    /// The REST `shallow=true` view of a value: an object shows `true` per child, anything else
    /// itself.
    public var shallowView: Node {
        guard case .object(let entries) = self else { return self }
        return .object(entries.map { Node.Entry($0.key, .bool(true)) })
    }
}

extension Database {
    /// Makes a write with the calls every database has and reports what it stored.
    public func commit(_ write: Write) throws -> WriteReceipt {
        switch write {
        case .set(let path, let value):
            return WriteReceipt(values: [(path, try set(path, value))])
        case .remove(let path):
            _ = try set(path, .null)
            return WriteReceipt(values: [(path, .null)])
        case .increment(let path, let delta):
            return WriteReceipt(values: [(path, try increment(path, by: delta))])
        case .push(let path, let values):
            return WriteReceipt(values: try push(path, values).map { (path.appending($0.key), $0.node) })
        case .update(let path, let entries):
            return WriteReceipt(values: try update(path, entries).map { (path.appending($0.path), $0.value) })
        }
    }

    /// Reads in full with `get`, `export` or `shallow`.
    public func read(_ path: Path, as form: ReadForm, partial: Bool) throws -> ReadResult<Node> {
        switch form {
        case .value: return ReadResult(try get(path))
        case .export: return ReadResult(try export(path))
        case .shallow: return ReadResult(try shallow(path))
        }
    }

    /// Queries in full.
    public func query(_ path: Path, _ query: Query, partial: Bool) throws -> ReadResult<[Node.Entry]> {
        ReadResult(try self.query(path, query))
    }

    /// Observes with `observe(_:query:idle:onChange:)`: every view is whole.
    public func observeViews(_ path: Path, query: Query, idle: () throws -> Bool,
                             onChange: (ObservedView) throws -> Bool) throws {
        try observe(path, query: query, idle: idle) { value, keys in
            try onChange(ObservedView(value: value, changedKeys: keys, complete: nil))
        }
    }

    /// Transactions run on the database itself.
    public func transactions(waitSeconds: Double?) throws -> Database { self }
}
