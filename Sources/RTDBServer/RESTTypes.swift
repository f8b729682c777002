import RTDBCore
import RTDBWire

/// Where the REST handler finds the database of a namespace (`?ns=`, or the first label of the
/// `Host` header). The server decides what a namespace maps to: one file for all, or one file
/// per namespace in a data folder.
public protocol NamespaceProvider: AnyObject {
    /// The database of `namespace`. Must create nothing until a write reaches it (a read of an
    /// unknown namespace is `null`, as for any missing data).
    func database(_ namespace: String) throws -> Database
    /// The namespaces that exist, for `GET /.inspect/databases.json`.
    func namespaces() throws -> [String]
    /// What the rules of `namespace` belong to: the data it names. Names that reach the same
    /// data (every name, on a server of one file) must answer the same scope, so that rules
    /// set under one name govern every name by which a client may reach the data.
    func rulesScope(of namespace: String) -> String
    /// The rules stored with the data of `namespace`: nil while that data does not exist
    /// (nothing stored, nothing to remember), else its scope and the text stored with it, if
    /// any. Reading creates nothing.
    func storedRules(of namespace: String) throws -> (scope: String, text: String?)?
    /// Stores `text` as the rules of the data `namespace` names, so that they outlast the
    /// process; the scope of `namespace` is read again afterwards (storing may create the file).
    func storeRules(_ text: String, of namespace: String) throws
}

extension NamespaceProvider {
    /// By default each namespace is data of its own.
    public func rulesScope(of namespace: String) -> String { namespace }
    /// By default rules live in memory only: nothing is stored, nothing read back.
    public func storedRules(of namespace: String) throws -> (scope: String, text: String?)? { nil }
    public func storeRules(_ text: String, of namespace: String) throws {}
}

/// A streaming read (`Accept: text/event-stream`) that passed the same validation and
/// authorisation as a GET of the same URL; the server opens the SSE stream for it.
public struct StreamRequest: Sendable {
    public var namespace: String
    public var path: Path
    /// The query the stream reflects, or nil for the whole value at `path` (an `orderBy`
    /// without bounds or limits selects the whole value too, so it is nil then).
    public var query: Query?
    /// What to check again after each commit and rules change (the stream is cancelled once
    /// its location stops being readable); set on every stream, governed by rules yet or not.
    public var access: StreamAccess?
    /// `format=export`: event data carries priorities (and objects never become arrays).
    public var export = false

    public init(namespace: String, path: Path, query: Query?) {
        self.namespace = namespace
        self.path = path
        self.query = query
    }
}

/// What the REST handler decided: a response to send, or a stream to open.
public enum RESTOutcome {
    case response(HTTPResponse)
    case stream(StreamRequest)
}

/// A request refused with an HTTP status and Firebase's `{"error": …}` body.
struct RESTError: Error {
    var status: Int
    var message: String
    var headers: [(name: String, value: String)] = []

    init(_ status: Int, _ message: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    static let permissionDenied = RESTError(401, "Permission denied")
    /// Firebase's wording for a body that is not JSON.
    static let invalidJSON = RESTError(400, "Invalid data; couldn't parse JSON object, array, or value.")

    var response: HTTPResponse {
        var r = HTTPResponse.error(status, message)
        r.headers += headers
        return r
    }

    /// The HTTP answer to an error of the shared error type (its status from ErrorStatus).
    static func from(_ e: RTDBError) -> RESTError {
        // Firebase words a body that is not JSON its own way.
        if e.code == .invalidJSON { return .invalidJSON }
        return RESTError(ErrorStatus.http(e.code), e.message)
    }
}
