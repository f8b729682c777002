/// The answer to request `r`, `{"t":"d","d":{"r":N,"b":{"s":STATUS,"d":DATA}}}`.
/// `data` is an object for a listen's ok, the value for a get,
/// `""` for other oks, and the message (a string) for every refusal.
public struct RealtimeResponse: Sendable, Equatable {
    public var r: Int64
    public var status: RealtimeStatus
    public var data: JSONText

    /// `ok`, with `""` unless the action answers with data.
    public static func ok(_ r: Int64, _ data: JSONText = .emptyString) -> RealtimeResponse {
        RealtimeResponse(r: r, status: .ok, data: data)
    }

    /// A refusal: the status and a message for people.
    public static func failure(_ r: Int64, _ status: RealtimeStatus, _ message: String) -> RealtimeResponse {
        RealtimeResponse(r: r, status: status, data: JSONText(string: message))
    }

    /// The ok of `auth`/`gauth`: `{"auth":CLAIMS,"expires":null}`, `claims` the JSON text of
    /// the `auth` variable the rules will see (nil: null).
    public static func authenticated(_ r: Int64, claims: JSONText?) -> RealtimeResponse {
        var w = RealtimeJSONWriter()
        w.raw(#"{"auth":"#)
        if let claims { w.text(claims) } else { w.raw("null") }
        w.raw(#","expires":null}"#)
        return .ok(r, JSONText(trusted: w.out))
    }

    func write(_ w: inout RealtimeJSONWriter) {
        w.raw(#"{"t":"d","d":{"r":"#)
        w.int(r)
        w.raw(#","b":{"s":"#)
        w.string(status.rawValue)
        w.raw(#","d":"#)
        w.text(data)
        w.raw("}}}")
    }

    static func decode(r: Int64, _ d: RealtimeFields, source: [UInt8]) throws(RealtimeDecodingError) -> RealtimeResponse {
        let m = RealtimeFields(d.value, d.name, .response)
        let b = try m.field("b")
        try b.object()
        let status = try b.string("s")
        let data = b.value["d"].map { JSONText($0, in: source) } ?? .null
        return RealtimeResponse(r: r, status: RealtimeStatus(rawValue: status), data: data)
    }
}

/// A response's status; statuses this code does not know keep their
/// wire text.
public enum RealtimeStatus: Sendable, Equatable, RawRepresentable {
    case ok
    /// Rules refused it (or the credential, for `auth`).
    case permissionDenied
    /// A compare-and-set whose hash no longer matches: the transaction runs again.
    case dataStale
    case expiredToken
    case invalidToken
    case tooBig
    case unavailable
    case failure
    case other(String)

    public init(rawValue: String) {
        switch rawValue {
        case "ok": self = .ok
        case "permission_denied": self = .permissionDenied
        case "datastale": self = .dataStale
        case "expired_token": self = .expiredToken
        case "invalid_token": self = .invalidToken
        case "too_big": self = .tooBig
        case "unavailable": self = .unavailable
        case "failure": self = .failure
        default: self = .other(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .ok: return "ok"
        case .permissionDenied: return "permission_denied"
        case .dataStale: return "datastale"
        case .expiredToken: return "expired_token"
        case .invalidToken: return "invalid_token"
        case .tooBig: return "too_big"
        case .unavailable: return "unavailable"
        case .failure: return "failure"
        case .other(let s): return s
        }
    }
}
