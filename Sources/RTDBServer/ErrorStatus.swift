import RTDBCore
import RTDBWire

/// The one place a failure of the server's work becomes an answer: the HTTP status of REST and
/// event streams and the status string of the realtime protocol,
/// from the same table.
///
/// A permission error of the engine is about the server's own files, not about the client, so
/// it is a 500 and `failure`: only the rules refuse with 401 / `permission_denied`, and they do
/// so through `RESTError.permissionDenied`, a refusal already stated as an HTTP status.
enum ErrorStatus {
    /// The HTTP status for an error of the shared error type.
    static func http(_ code: RTDBError.Code) -> Int {
        switch code {
        case .invalidJSON, .invalidPath, .invalidKey, .invalidData, .invalidQuery, .tooLarge, .tooDeep, .usage: return 400
        case .notCommitted: return 409
        case .unavailable, .timeout: return 503
        case .unsupported: return 501
        case .permissionDenied, .ioError, .internal, .invalidDatabase: return 500
        // Client-side codes of the offline cache; never raised by the server's own work.
        case .incomplete, .unauthenticated, .principalMismatch, .notFound, .rejected: return 500
        }
    }

    /// The realtime status for an error of the shared error type.
    static func realtime(_ code: RTDBError.Code) -> RealtimeStatus {
        switch code {
        case .tooLarge: return .tooBig
        case .unavailable, .timeout: return .unavailable
        default: return realtime(httpStatus: http(code))
        }
    }

    /// The realtime status for a refusal decided as an HTTP status (`RESTError`: credentials,
    /// rules, a missing index).
    static func realtime(httpStatus: Int) -> RealtimeStatus {
        httpStatus == 401 ? .permissionDenied : .failure
    }

    /// A realtime refusal of request `r` for any error the server's work throws.
    static func refusal(_ r: Int64, _ error: any Error) -> RealtimeResponse {
        switch error {
        case let e as RTDBError: return .failure(r, realtime(e.code), e.message)
        case let e as RESTError: return .failure(r, realtime(httpStatus: e.status), e.message)
        default: return .failure(r, .failure, "\(error)")
        }
    }

    /// An HTTP error answer for any error the server's work throws.
    static func response(_ error: any Error) -> HTTPResponse {
        switch error {
        case let e as RESTError: return e.response
        case let e as RTDBError: return RESTError.from(e).response
        default: return HTTPResponse.error(500, "\(error)")
        }
    }
}
