/// The one seam between commands and a database. The embedded SQLite engine implements it; a
/// remote Firebase client and a server can plug in later without touching the commands.
///
/// Callers pass validated input (paths, keys, limits, update overlap: see `WriteCheck`), with
/// server-value placeholders left unresolved; implementations resolve them when the write
/// commits and return what is now stored. Each call is one atomic operation.
///
/// Priorities: values may carry them (`Node.prioritized`, read from
/// `{".value":v,".priority":p}` or an object's `".priority"`), and writes store them: a write
/// that replaces a node replaces its priority too (none in the value clears it). The priority
/// of one node is read and written through its pseudo-child path `…/.priority` (see `Path`),
/// with `get`/`set`/`update`/`compareAndSet`/`increment`/`observe` alike; `push` refuses such a
/// path and `query` finds no children there. `get` and `shallow` give plain data; `export`,
/// `query` and `observe` include priorities (renderers leave them out unless asked to export).
public protocol Database: AnyObject {
    /// The value at `path` (`.null` when nothing is there), without priorities.
    func get(_ path: Path) throws -> Node
    /// The value at `path` with every priority in it, for Firebase's `format=export` (render it
    /// with `JSONWriter(export: true)`).
    func export(_ path: Path) throws -> Node
    /// The REST `shallow=true` view: a primitive as itself, an object as `{child: true, …}`.
    func shallow(_ path: Path) throws -> Node
    /// The children of `path` that `query` selects, in query order, with their priorities.
    func query(_ path: Path, _ query: Query) throws -> [Node.Entry]
    /// Replaces the value at `path` (`.null` deletes); returns the stored value.
    func set(_ path: Path, _ value: Node) throws -> Node
    /// Replaces each relative path under `path` at once, all or nothing; returns the entries
    /// with server values resolved.
    func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)]
    /// Adds each value under a new push ID, in order, as one atomic write.
    func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry]
    /// Writes `value` only if `path` still holds the data `expected` (priorities aside). As in
    /// Firebase's transactions, the node keeps its priority unless `value` carries one.
    func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult
    /// Writes `value` (`.null` deletes) only if `condition` holds for the value stored at `path`
    /// when the write begins; the check and the write are one atomic step (REST `if-match`).
    /// `.stale(current:)` carries the value that failed the check; nothing is written then.
    func set(_ path: Path, _ value: Node, if condition: (Node) -> Bool) throws -> CompareAndSetResult
    /// Adds `delta` to the number at `path` by the server-value increment rule. Like any write
    /// of a value, it leaves the node without a priority (at a `.priority` path it increments
    /// the priority instead).
    func increment(_ path: Path, by delta: Node) throws -> Node
    /// Calls `onChange` with the value at `path` (priorities included) now, then again after every commit that may
    /// have changed it (with the changed child keys when known), until it returns false.
    /// `idle` is called regularly while nothing happens (at least once a second); returning
    /// false ends the observation too.
    func observe(_ path: Path, idle: () throws -> Bool,
                 onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws
    /// As `observe(_:idle:onChange:)` for a listener of `query`: the values passed may hold only
    /// the children of the query's window (a database that can read the window alone, from an
    /// index, does), so they mean something only through `query`, as `EventGenerator` uses
    /// them. By default the whole value is passed.
    func observe(_ path: Path, query: Query, idle: () throws -> Bool,
                 onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws

    // What commands call (WriteReceipt.swift, WatchEvents.swift): each has a default built on
    // the calls above, which a database that can queue writes or hold data in part (an offline
    // cache) replaces.

    /// Makes `write` and returns what it left: the values as stored, or how it waits.
    func commit(_ write: Write) throws -> WriteReceipt
    /// The value at `path` in `form`. With `partial`, a database that holds only part of it
    /// answers with what it holds (`complete` false); without, that is an error.
    func read(_ path: Path, as form: ReadForm, partial: Bool) throws -> ReadResult<Node>
    /// As `query(_:_:)`, possibly in part (see `read(_:as:partial:)`).
    func query(_ path: Path, _ query: Query, partial: Bool) throws -> ReadResult<[Node.Entry]>
    /// As `observe(_:query:idle:onChange:)`, each view saying whether it is whole.
    func observeViews(_ path: Path, query: Query, idle: () throws -> Bool,
                      onChange: (ObservedView) throws -> Bool) throws
    /// The database a transaction (`TransactionRunner`) runs on: the database itself, or where
    /// a transaction must go instead (an offline cache sends it to the server, never queued),
    /// reached first, waiting up to `waitSeconds` for it when given.
    func transactions(waitSeconds: Double?) throws -> Database
}

extension Database {
    public func observe(_ path: Path, query: Query, idle: () throws -> Bool,
                        onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws {
        try observe(path, idle: idle, onChange: onChange)
    }
}

extension Database {
    /// A conditional write built on `get` and `compareAndSet`, for databases without a native
    /// one: the compare-and-set makes the checked value and the replaced value the same; when
    /// another writer gets in between, the condition is checked again on the fresh value.
    public func set(_ path: Path, _ value: Node, if condition: (Node) -> Bool) throws -> CompareAndSetResult {
        var current = try get(path)
        for _ in 0..<100 {
            guard condition(current) else { return .stale(current: current) }
            switch try compareAndSet(path, expected: current, value: value) {
            case .committed(let stored): return .committed(stored)
            case .stale(let fresh): current = fresh
            }
        }
        return .stale(current: current)
    }
}

public enum CompareAndSetResult: Sendable {
    case committed(Node)
    case stale(current: Node)
}

/// Checks that must hold before a write reaches any database.
public enum WriteCheck {
    public static func writable(_ path: Path) throws {
        if path.isInfo { throw RTDBError(.invalidPath, "cannot write under /.info") }
    }

    public static func value(_ value: Node, at path: Path) throws {
        try writable(path)
        try Limits.validate(value, at: path)
    }

    /// Parses the keys of a multi-path update into relative paths and rejects overlaps
    /// (`{"a":1,"a/b":2}`), invalid keys and invalid values. Returns the entries in key order.
    public static func update(_ raw: [Node.Entry], at path: Path) throws -> [(path: Path, value: Node)] {
        try writable(path)
        if path.isPriority {
            throw RTDBError(.invalidPath, "cannot update under \(path): a priority has no children")
        }
        var entries: [(path: Path, value: Node)] = []
        for e in raw {
            let rel: Path
            do { rel = try Path(e.key) } catch let err as RTDBError {
                throw RTDBError(.invalidKey, "update key \(Limits.quote(e.key)): \(err.message)")
            }
            if rel.isRoot { throw RTDBError(.invalidKey, "update key \(Limits.quote(e.key)) names no child") }
            let full = path.appending(rel)
            if full.depth > Limits.maxDepth { throw RTDBError(.tooDeep, "update path \(full) is more than \(Limits.maxDepth) levels deep") }
            try WriteCheck.value(e.node, at: full)
            entries.append((rel, e.node))
        }
        let sorted = entries.sorted { PathOrder.compare($0.path, $1.path) < 0 }
        for i in sorted.indices.dropFirst() where sorted[i - 1].path.contains(sorted[i].path) {
            throw RTDBError(.invalidData, "update paths overlap: \(Limits.cut(sorted[i - 1].path.description)) contains \(Limits.cut(sorted[i].path.description))")
        }
        return sorted
    }
}

/// Segment-wise path order with the key comparator; a prefix sorts first.
public enum PathOrder {
    public static func compare(_ a: Path, _ b: Path) -> Int {
        for (x, y) in zip(a.keys, b.keys) {
            let c = KeyOrder.compare(x, y)
            if c != 0 { return c }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}

/// The transaction loop: read, let `update` compute the new
/// value without holding any lock, then compare-and-set; on a stale read run `update` again
/// with the fresh value, up to `maxAttempts` attempts in all. `update` returning nil aborts.
///
/// On a `LockingDatabase`, after `lockAfter` stale attempts the next attempt reads, runs
/// `update` and writes while holding the database's write lock, so it cannot be stale: a
/// transaction there never gives up to contention (only `maxAttempts`, an abort or an error
/// end it uncommitted).
public enum TransactionRunner {
    public struct Outcome: Sendable {
        public var committed: Bool
        public var value: Node
        public var attempts: Int
    }

    /// `backoff`, when given, runs before each optimistic attempt after a stale one (with the
    /// attempt number) so a caller can pause a little and let a crowd of writers thin out; the
    /// value is then read again, so the pause never makes the next attempt start from an older value.
    public static func run(_ db: Database, path: Path, maxAttempts: Int, lockAfter: Int? = nil,
                           backoff: ((Int) -> Void)? = nil,
                           update: (Node) throws -> Node?) throws -> Outcome {
        var current = try db.get(path)
        var attempts = 0
        while attempts < maxAttempts {
            if let lockAfter, attempts >= lockAfter, let locking = db.capability(LockingDatabase.self) {
                return try locking.whileLocked {
                    attempts += 1
                    switch try attempt(db, path, try db.get(path), attempts, update) {
                    case .done(let outcome): return outcome
                    // Only a database that breaks its lock gets here: report, do not loop.
                    case .stale(let fresh): return Outcome(committed: false, value: fresh, attempts: attempts)
                    }
                }
            }
            if attempts > 0, let backoff {
                backoff(attempts + 1)
                current = try db.get(path)
            }
            attempts += 1
            switch try attempt(db, path, current, attempts, update) {
            case .done(let outcome): return outcome
            case .stale(let fresh): current = fresh
            }
        }
        return Outcome(committed: false, value: current, attempts: attempts)
    }

    private enum Step {
        /// Committed, or aborted by `update`.
        case done(Outcome)
        /// The value changed since it was read: the fresh value.
        case stale(Node)
    }

    /// One attempt from `current`.
    private static func attempt(_ db: Database, _ path: Path, _ current: Node, _ attempts: Int,
                                _ update: (Node) throws -> Node?) throws -> Step {
        guard let proposed = try update(current) else {
            return .done(Outcome(committed: false, value: current, attempts: attempts))
        }
        try WriteCheck.value(proposed, at: path)
        switch try db.compareAndSet(path, expected: current, value: proposed) {
        case .committed(let stored):
            return .done(Outcome(committed: true, value: stored, attempts: attempts))
        case .stale(let fresh):
            return .stale(fresh)
        }
    }
}

/// A database that can run a piece of work while holding its write lock (the embedded engine):
/// what the work reads through the database cannot change before the work writes. Remote
/// databases have no such lock.
public protocol LockingDatabase: Database {
    /// Runs `body` holding the write lock, waiting for the lock up to the database's timeout;
    /// `body`'s reads and its one write take part in the same transaction, committed when it
    /// returns and rolled back when it throws.
    func whileLocked<T>(_ body: () throws -> T) throws -> T
}
