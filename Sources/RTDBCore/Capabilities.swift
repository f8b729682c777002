/// What only some databases can do is a small protocol beside `Database` (`LockingDatabase`,
/// `ConnectionInfo`, `Indexable`, `SessionHost`, `CacheControl`). A caller never asks for a
/// concrete type: it asks `capability(_:)` for one of these, and gets nil from a database
/// that lacks it (the CLI turns that into the command's error).
extension Database {
    /// This database as `C` when it can do what `C` names, else nil: the one place where a
    /// database is asked what else it can do.
    public func capability<C>(_ type: C.Type) -> C? { self as? C }
}

/// A database reached over a connection, with the state Firebase shows under `/.info`:
/// `connected`, and `serverTimeOffset` (the server's clock minus the
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
    /// As `addIndex(_:)`, telling `progress` how far the build got.
    func addIndex(_ definition: IndexDefinition, progress: ProgressSink) throws -> Bool
}

extension Indexable {
    public func addIndex(_ definition: IndexDefinition, progress: ProgressSink) throws -> Bool {
        try addIndex(definition)
    }
}

/// A database that can tell whether a path holds data without reading what is there (the
/// embedded file looks up one row); others answer from a shallow read.
public protocol PresenceReads: Database {
    /// True when anything is stored at `path`.
    func holdsData(_ path: Path) throws -> Bool
}

/// A database that can write out a value of any size as JSON piece by piece, in bounded
/// memory, rather than building it whole first (the embedded file reads its rows in order; a
/// remote database walks a node too large for one answer in pages).
public protocol StreamingReads: Database {
    /// Writes the value at `path` (with its priorities when `export`) as exactly the text
    /// `JSONWriter(pretty:export:)` gives for it, handing the text to `write` in pieces.
    func streamJSON(_ path: Path, export: Bool, pretty: Bool, progress: ProgressSink,
                    to write: ([UInt8]) throws -> Void) throws
}

/// What a streamed import does at its path: replace the value (`set`) or replace each relative
/// path the input names (`update`).
public enum ImportKind: Sendable {
    case set
    case update
}

/// A database that can write JSON of any size read from a stream, without holding the value
/// whole, still as one atomic write (the embedded file).
public protocol StreamingWrites: Database {
    /// Writes the JSON read from `source` at `path` as `commit(.set)` (or `.update`) of the
    /// parsed value would, all or nothing. Returns the paths written (an update's entries).
    /// Values whose text fits in `window` bytes are read whole; the window is held at once.
    func importJSON(_ path: Path, from source: ByteSource, as kind: ImportKind, window: Int,
                    progress: ProgressSink) throws -> [Path]

    /// Writes the JSON object read from `source` as an update of `path`'s children, as
    /// `importJSON(as: .update)` would, for an object whose members are distinct keys of one
    /// level each (the caller has checked it, as `PlainJSON.isPlain` does): no two can overlap,
    /// so no list of them is kept, and a PATCH of a million children costs about its text.
    func importChildren(_ path: Path, from source: ByteSource, window: Int) throws
}

extension StreamingWrites {
    /// `importJSON` through the reader's default window (`JSONStreamReader.defaultWindow`).
    public func importJSON(_ path: Path, from source: ByteSource, as kind: ImportKind, progress: ProgressSink) throws -> [Path] {
        try importJSON(path, from: source, as: kind, window: JSONStreamReader.defaultWindow, progress: progress)
    }
}

/// A database that can add any number of values under new push IDs as one atomic write
/// without holding them all (the embedded file): `push --lines` of millions of lines.
public protocol StreamingPushes: Database {
    /// Adds each value `next` gives (until it gives nil) under a new push ID below `path`, in
    /// order, all or nothing: an error from `next`, from `stored` or from the write leaves
    /// nothing stored. `stored` is told each new child as stored (server values resolved),
    /// before the write commits. Returns how many children were added.
    func push(_ path: Path, from next: () throws -> Node?, stored: (Node.Entry) throws -> Void) throws -> Int
}

/// A database behind a server that limits what one request may do (Firebase): it can carry out
/// in many bounded requests what one request may not, writing a document too large to send at
/// once, deleting a node too large to delete at once. Neither is atomic: a failure part way
/// leaves part of the work done.
public protocol ChunkedWrites: Database {
    /// Writes the JSON read from `source` at `path` as multi-path updates of at most about
    /// `chunkBytes` each. The location must hold nothing, unless `force`: then what it holds is
    /// removed first (`removeChunked`).
    func writeChunked(_ path: Path, from source: ByteSource, chunkBytes: Int, force: Bool,
                      progress: ProgressSink) throws -> ChunkedWork
    /// Deletes `path` in as many requests as the server needs, the deepest parts first.
    func removeChunked(_ path: Path, progress: ProgressSink) throws -> ChunkedWork
}

/// What a chunked write or delete took.
public struct ChunkedWork: Sendable, Equatable {
    public var requests: Int
    /// The bytes of JSON sent (a chunked write).
    public var bytes: Int64
    public init(requests: Int = 0, bytes: Int64 = 0) {
        self.requests = requests
        self.bytes = bytes
    }
}

/// A database that can name the children a key-ordered query selects without reading their
/// values (the embedded file seeks to each).
public protocol KeyWindowReads: Database {
    /// The selected keys in key order; nil when the query is not key-ordered or its bounds
    /// cannot be used so.
    func windowKeys(_ path: Path, _ query: Query) throws -> [String]?
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
