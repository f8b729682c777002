/// The one error type that crosses layer boundaries: a wire code from the CLI contract plus a
/// human sentence. Every layer maps its own failures into this before they reach the CLI, which
/// turns it into the stderr line and the exit status in exactly one place.
public struct RTDBError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case `internal` = "internal"
        case ioError = "io_error"
        case usage = "usage"
        case invalidJSON = "invalid_json"
        case invalidPath = "invalid_path"
        case invalidKey = "invalid_key"
        case invalidData = "invalid_data"
        case invalidQuery = "invalid_query"
        case tooLarge = "too_large"
        case tooDeep = "too_deep"
        case permissionDenied = "permission_denied"
        case notCommitted = "not_committed"
        case unavailable = "unavailable"
        case timeout = "timeout"
        case unsupported = "unsupported"
        case invalidDatabase = "invalid_database"
        /// A queued write or a read the cache cannot answer in full (only with `--partial`).
        case incomplete = "incomplete"
        /// The credential has expired or was refused as a token (queued writes wait).
        case unauthenticated = "unauthenticated"
        /// A queued write was made with another credential's principal.
        case principalMismatch = "principal_mismatch"
        /// No such queued write.
        case notFound = "not_found"
        /// `sync`: queued writes were rejected by the server since the rejections were last
        /// listed (`queue --rejected`), by whichever process sent them.
        case rejected = "rejected"

        /// The process exit status the contract assigns to this code.
        public var exitStatus: Int32 {
            switch self {
            case .internal, .ioError: return 1
            case .usage: return 2
            case .invalidJSON, .invalidPath, .invalidKey, .invalidData, .invalidQuery, .tooLarge, .tooDeep, .notFound: return 3
            case .permissionDenied, .unauthenticated, .principalMismatch, .rejected: return 4
            case .notCommitted: return 5
            case .unavailable, .timeout: return 6
            case .unsupported: return 7
            case .invalidDatabase: return 8
            case .incomplete: return 10
            }
        }
    }

    /// A fact about a failure that a caller decides on: set where the failure is known, carried
    /// with the error, never read back from the message (which is for people only).
    public enum Fact: Sendable, Equatable {
        /// The server's TLS certificate did not verify: no outage, so retrying cannot help.
        case certificateRefused
        /// The server answered the WebSocket upgrade with another status than 101: it serves
        /// REST only, or something between does not pass WebSockets.
        case upgradeRefused
    }

    public var code: Code
    public var message: String
    /// What a caller may decide on beyond the code; nil for most errors.
    public var fact: Fact?

    public init(_ code: Code, _ message: String, fact: Fact? = nil) {
        self.code = code
        self.message = message
        self.fact = fact
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
