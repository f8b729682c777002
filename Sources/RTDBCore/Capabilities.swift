/// What only some databases can do is a small protocol beside `Database` (`LockingDatabase`,
/// `ConnectionInfo`, `Indexable`, `SessionHost`, `CacheControl`). A caller never asks for a
/// concrete type: it asks `capability(_:)` for one of these, and gets nil from a database
/// that lacks it (the CLI turns that into the command's error).
extension Database {
    /// This database as `C` when it can do what `C` names, else nil: the one place where a
    /// database is asked what else it can do.
    public func capability<C>(_ type: C.Type) -> C? { self as? C }
}

/// A database reached over a connection, with the state Firebase shows under `/.info`
/// (firebase-semantics §11): `connected`, and `serverTimeOffset` (the server's clock minus the
/// local one, in ms) when known. A database without it (the embedded file) is always
/// connected, with no offset.
public protocol ConnectionInfo: Database {
    /// The `/.info` object now.
    func connectionInfo() throws -> Node
    /// Calls `onChange` with the `/.info` object at once and again as the connection comes and
    /// goes (possibly repeating a value), until it or `idle` (called at least once a second
    /// while nothing happens) returns false.
    func observeConnection(idle: () throws -> Bool, onChange: (Node) throws -> Bool) throws
}

/// A database with persistent indexes of its own (the embedded file); a remote database takes
/// them from its rules (`.indexOn`).
public protocol Indexable: Database {
    /// Adds an index built from the data already stored; false when it existed.
    func addIndex(_ definition: IndexDefinition) throws -> Bool
    /// Removes an index; false when there was none.
    func removeIndex(_ definition: IndexDefinition) throws -> Bool
    /// Every index, in the order they were added.
    func indexes() throws -> [IndexDefinition]
}

/// A database that can store a huge JSON document as it reads it, leaf by leaf, without
/// building its tree of values first (the embedded file). Only plain documents (`PlainJSON`)
/// are stored so; for any other it answers false and changes nothing.
public protocol StreamedWrites: Database {
    /// Replaces the value at `path` with the document `json` when it is plain; false, with
    /// nothing written, otherwise.
    func setStreamed(_ path: Path, json: UnsafeBufferPointer<UInt8>) throws -> Bool
}

/// A push ID chosen before anything is written (Firebase's `push().key`, `childByAutoId().key`),
/// and the server clock offset it was made with (nil: the local clock alone).
public struct PushKey: Sendable {
    public var key: String
    public var serverTimeOffset: Int64?

    public init(key: String, serverTimeOffset: Int64?) {
        self.key = key
        self.serverTimeOffset = serverTimeOffset
    }
}

/// A database that makes push keys without writing, with the clock and generator its own `push`
/// uses, so that they sort among the children `push` adds by the time they were made.
public protocol PushKeys: Database {
    func pushKey() throws -> PushKey
}

/// What happens to the connection a watch streams over.
public enum StreamNotice: Sendable {
    /// The stream that was in step was lost (why); it is being tried again.
    case lost(String)
    /// It is in step again.
    case restored
}

/// A database whose watches stream over a connection that can drop and come back (a `--url`
/// target): it calls `onStreamNotice` once when a stream is lost and once when it is back, not
/// at each attempt in between.
public protocol StreamNotices: Database {
    var onStreamNotice: ((StreamNotice) -> Void)? { get set }
    /// Where the streams go, for messages (no credential in it).
    var streamURL: String { get }
}
