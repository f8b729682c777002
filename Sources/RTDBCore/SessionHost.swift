/// One write a session registers to run when it ends (Firebase's onDisconnect).
public enum DisconnectOperation: Sendable {
    case set(Path, Node)
    case update(Path, [(path: Path, value: Node)])
    case remove(Path)

    /// The word for it in event lines and stored rows: `set`, `update` or `remove`.
    public var kind: String {
        switch self {
        case .set: return "set"
        case .update: return "update"
        case .remove: return "remove"
        }
    }

    public var path: Path {
        switch self {
        case .set(let p, _), .update(let p, _), .remove(let p): return p
        }
    }
}

/// A change to the operations of a live session, made while it runs (`rtdb on-disconnect`), as
/// the SDKs' `onDisconnect().set/update/remove/cancel()` may be called at any time: a new
/// operation joins the others by the rules of `DisconnectWrites` (a later one at a path
/// replaces earlier ones at or below it), and a cancel drops those at or below its path (the
/// root: all of them).
public enum DisconnectChange: Sendable {
    case register(DisconnectOperation)
    case cancel(Path)

    /// The word for it: `set`, `update`, `remove` or `cancel`.
    public var kind: String {
        switch self {
        case .register(let op): return op.kind
        case .cancel: return "cancel"
        }
    }

    public var path: Path {
        switch self {
        case .register(let op): return op.path
        case .cancel(let p): return p
        }
    }
}

/// What a session is asked to do, in command-line order, checked before anything is written.
public enum SessionStep: Sendable {
    /// Register an operation.
    case register(DisconnectOperation)
    /// Once the operations are registered, set a path.
    case connectSet(Path, Node)
    /// Push a child of the path, register its removal, then set it to the value (`true` by
    /// default; a server value is resolved when it is written).
    case presence(Path, Node)
    /// Register a set of the path to the server time.
    case lastOnline(Path)

    /// The operations to register and the on-connect writes to make after them, for one
    /// connection: each presence gets a new child key (from `newKey`), whose removal is
    /// registered before the child is written.
    public static func plan(_ steps: [SessionStep], newKey: () -> String) -> (operations: [DisconnectOperation], writes: [(Path, Node)]) {
        var operations: [DisconnectOperation] = []
        var writes: [(Path, Node)] = []
        for step in steps {
            switch step {
            case .register(let op): operations.append(op)
            case .connectSet(let p, let v): writes.append((p, v))
            case .presence(let p, let value):
                let child = p.appending(newKey())
                operations.append(.remove(child))
                writes.append((child, value))
            case .lastOnline(let p):
                operations.append(.set(p, .object([Node.Entry(".sv", .string("timestamp"))])))
            }
        }
        return (operations, writes)
    }
}

/// What happens to a session, in the order it happens, for the command to report.
public enum SessionEvent: Sendable {
    /// A connection (or, on a database file, the session itself) began.
    case connected(session: String)
    /// An operation was registered on it.
    case registered(DisconnectOperation)
    /// An on-connect write was made: the value stored, or with `queued` the value given, still
    /// waiting in an offline cache's queue.
    case set(Path, Node, queued: WriteReceipt.Queued?)
    /// The connection dropped (it is tried again).
    case disconnected
    /// The session ended normally; `queued` says why its writes still wait in a queue.
    case ended(queued: QueueReason?)
    /// Something went wrong that does not end the session (a refusal on a reconnection).
    case note(String)
}

/// How a session is asked to reach a remote database.
public struct SessionOptions: Sendable {
    public enum Transport: Sendable { case realtime, rest }

    /// The session makes its operations itself, through the offline cache.
    public var clientSide: Bool
    /// As given on the command line (nil: not given; the realtime protocol).
    public var transport: Transport?
    /// The session is held for a command that runs meanwhile (else until a signal): losing the
    /// server for good does not end it then.
    public var heldForCommand: Bool

    public init(clientSide: Bool, transport: Transport?, heldForCommand: Bool) {
        self.clientSide = clientSide
        self.transport = transport
        self.heldForCommand = heldForCommand
    }
}

/// A database that keeps its sessions' operations where any process can change them (the
/// embedded file's rows): `rtdb on-disconnect` changes a live session there directly. Sessions
/// on other databases are changed by asking the process that holds them.
public protocol SessionStore: Database {
    /// Makes `change` to the operations of the live session `id`. Throws `not_found` when no
    /// such session is alive (never started on this database, or ended).
    func changeSession(_ id: String, _ change: DisconnectChange) throws
}

/// A database that can hold a session: operations registered to run when the session ends,
/// also when its holder dies as far as the database can promise. The
/// embedded file holds them under a session lock, a realtime connection leaves them with the
/// server, an offline cache (client side) queues them.
public protocol SessionHost: Database {
    /// A session on this database, not started yet; refuses options it cannot honour.
    func openSession(_ options: SessionOptions) throws -> HeldSession
}

/// One session. Its operations are registered one by one (an embedded row each, a realtime
/// request each), so that a live session's operations can be told apart and changed.
public protocol HeldSession: AnyObject {
    /// The session's id, known before `hold` and the same for its whole life (`RTDB_SESSION`;
    /// the `session` of its `connected` lines).
    var id: String { get }

    /// Changes the operations of the live session (between `started` and the end, from within
    /// `keepGoing`): registered with whoever holds them, and kept so that a reconnection
    /// registers them again after the session's own. Throws the refusal (the server's rules:
    /// `permission_denied`; not connected right now: `unavailable`), and then nothing changed.
    func change(_ change: DisconnectChange) throws

    /// Starts the session: registers the operations of `steps` and makes their on-connect
    /// writes (again on every reconnection), reporting each step through `events`. Then calls
    /// `started` once (the command starts what the session is held for), then `keepGoing`
    /// again and again, each time allowing it to wait up to `waitMillis` ms (-1: until
    /// something happens) before it answers whether to go on, while the session keeps its
    /// connection. When it answers false the session ends normally: its operations run (or are
    /// left to the server, or queued) and `.ended` is reported.
    ///
    /// A refusal before `started` throws and nothing is left registered. An error thrown by
    /// `started` or `keepGoing` ends the session as its holder dying would, without `.ended`.
    func hold(_ steps: [SessionStep], events: (SessionEvent) throws -> Void, started: () throws -> Void,
              keepGoing: (_ waitMillis: Int) throws -> Bool) throws
}
