import RTDBCore
import RTDBRemote
import RTDBWire

/// What an offline cache needs of its remote database: requests whose answers it judges
/// itself, the credential, the one mapping of answers to errors, a live stream for a watch,
/// `/.info`, and the database itself for transactions. `RemoteDatabase` is one; the tests
/// script another.
public protocol OfflineRemote: AnyObject {
    /// The database as shown to people (no credentials).
    var display: String { get }
    /// Replaced when a fresh credential is fetched (`--auth-command`).
    var credential: Credential { get set }
    /// Connects now unless a connection is ready; throws `unavailable`/`timeout` when the
    /// server cannot be reached (then no request of this process reached it).
    func connect() throws
    /// One request, with the answer as it came; transport failures throw `unavailable` or
    /// `timeout`. `idempotent` allows sending it again after a dropped connection.
    func request(_ method: String, _ path: Path, params: [(name: String, value: String)],
                 headers: [(name: String, value: String)], body: [UInt8]?, idempotent: Bool) throws -> HTTPClientResponse
    /// What an answer that is not a success means (`RemoteErrors.failure`).
    func failure(for answer: HTTPClientResponse, what: String) -> RemoteFailure
    /// Whether the server answers at all now (any status but 5xx and 429).
    func answersREST() -> Bool
    /// The `/.info` object from one handshake.
    func connectionInfo() throws -> Node
    /// `/.info` as the connection comes and goes (`ConnectionInfo.observeConnection`).
    func observeConnection(idle: () throws -> Bool, onChange: (Node) throws -> Bool) throws
    /// Streams the value at `path` as `Database.observe` does (with a filtered `query`, the
    /// window's children alone, as `observe(_:query:…)` gives them), reconnecting by itself
    /// after a pause from `reconnectMillis.first` up to `.cap`; `live` is told when the stream
    /// has delivered its first value (true: what it delivered is current) and when it drops.
    func stream(_ path: Path, query: Query?, reconnectMillis: (first: Int, cap: Int), live: @escaping (Bool) -> Void,
                idle: () throws -> Bool, onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws
    /// Another handle on the same database with a connection of its own.
    func anotherConnection() -> OfflineRemote
    /// The database itself, for what never goes through the cache (transactions).
    var database: Database { get }
}

extension OfflineRemote {
    func request(_ method: String, _ path: Path, params: [(name: String, value: String)] = [],
                 headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, idempotent: Bool) throws -> HTTPClientResponse {
        try request(method, path, params: params, headers: headers, body: body, idempotent: idempotent)
    }
}

extension RemoteDatabase: OfflineRemote {
    public var display: String { target.display }

    public func stream(_ path: Path, query: Query?, reconnectMillis: (first: Int, cap: Int), live: @escaping (Bool) -> Void,
                       idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        self.reconnectMillis = reconnectMillis
        onStreamState = live
        defer { onStreamState = nil }
        try observe(path, query: query ?? Query(), idle: idle, onChange: onChange)
    }

    public func anotherConnection() -> OfflineRemote { sibling() }

    public var database: Database { self }
}
