import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire

/// The realtime protocol state of one WebSocket connection: frame and
/// message reassembly, the credential it presented, its listens, and the writes to make when it
/// goes away. RealtimeHandler answers its requests; the connection feeds it bytes.
final class RealtimeSession {
    let id: String
    let namespace: String
    let host: String
    var frames = WebSocket.Parser()
    var assembler = RealtimeFraming.Assembler()
    /// The credentials the session presents, as a request the REST handler's credential code
    /// reads (`Authorization: Bearer` from the upgrade or `gauth`, `auth=` from `auth`,
    /// `auth_variable_override` from `gauth`'s `authvar`/`noauth`). Rules and the secret are
    /// applied to it on every operation, so loading rules later governs open sessions too.
    var credentials: HTTPRequest
    var disconnect = DisconnectWrites()
    /// Open listens by path and tag.
    var listens: [[UInt8]: StreamSubscriber] = [:]
    /// Listens one connection may hold at once: each costs the server a view and its value,
    /// so one client must not be able to make it hold without bound.
    static let maxListens = 50_000
    /// What each listen needs the rules to keep granting (every listen: rules may be loaded later).
    /// `queryObject` is the query as the client sent it (sent back when the listen is revoked).
    var access: [[UInt8]: (path: Path, query: Query?, queryObject: JSONText?)] = [:]

    init(id: String, namespace: String, host: String, credentials: HTTPRequest) {
        self.id = id
        self.namespace = namespace
        self.host = host
        self.credentials = credentials
    }

    /// No credential at all (after `unauth`, a refused `auth`, an expired token).
    static let anonymous = HTTPRequest(method: "GET", target: "/")

    /// The credential part of an upgrade request: its Authorization headers only.
    static func credentials(from upgrade: HTTPRequest) -> HTTPRequest {
        HTTPRequest(method: "GET", target: "/", headers: upgrade.headers.filter { $0.name == "authorization" })
    }

    /// `auth` (an ID token) or `gauth` (an access token, with an `authvar` override or `noauth`).
    static func credentials(token: String, asAuthParameter: Bool, override: String?) -> HTTPRequest {
        var target = "/"
        var headers: [(name: String, value: String)] = []
        if asAuthParameter {
            target += "?auth=" + PercentCoding.encode(token)
        } else {
            headers.append(("authorization", "Bearer " + token))
            if let override { target += "?auth_variable_override=" + PercentCoding.encode(override) }
        }
        return HTTPRequest(method: "GET", target: target, headers: headers)
    }

    /// Listens by path and tag, as bytes: String keys would merge canonically equal paths.
    static func listenKey(_ path: Path, _ tag: Int64?) -> [UInt8] {
        Array((path.unrooted + "\n" + (tag.map(String.init) ?? "")).utf8)
    }

    /// A session id: 32 letters and digits.
    static func newID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var g = SystemRandomNumberGenerator()
        return String(decoding: (0..<32).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }, as: UTF8.self)
    }
}

/// One thing a realtime connection asked, in arrival order: a decoded request, a request whose
/// body could not be read (answered with its error, in its turn), or a ping.
enum RealtimeWork {
    case request(RealtimeRequest)
    case refused(r: Int64, action: String, RTDBError)
    case ping

    /// Writes (`p`, `m`) run in the group commit; everything else at once, in order.
    var isWrite: Bool {
        switch self {
        case .request(let r): return RealtimeRequest.isWrite(action: r.action.name)
        case .refused(_, let action, _): return RealtimeRequest.isWrite(action: action)
        case .ping: return false
        }
    }

    /// The request number to answer, if any.
    var r: Int64? {
        switch self {
        case .request(let q): return q.r
        case .refused(let r, _, _): return r
        case .ping: return nil
        }
    }
}

/// A session's onDisconnect writes, with the credentials it last presented.
struct PendingDisconnect {
    var namespace: String
    var session: String
    var entries: [(path: Path, value: Node)]
    var credentials: HTTPRequest
}
