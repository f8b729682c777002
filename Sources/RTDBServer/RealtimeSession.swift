import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire

/// The realtime protocol state of one WebSocket connection (realtime-protocol.md): frame and
/// message reassembly, the credential it presented, its listens, and the writes to make when it
/// goes away. The event loop (Server+Realtime.swift) feeds it bytes and runs its requests in
/// order.
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
    /// What each listen needs the rules to keep granting (only listens the rules govern).
    /// `raw` is the query object as the client sent it (sent back when the listen is revoked).
    var access: [[UInt8]: (path: Path, query: Query?, raw: String?)] = [:]
    var closing = false

    init(id: String, namespace: String, host: String, credentials: HTTPRequest) {
        self.id = id
        self.namespace = namespace
        self.host = host
        self.credentials = credentials
    }

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

    static func listenKey(_ path: Path, _ tag: Int64?) -> [UInt8] {
        Array((path.unrooted + "\n" + (tag.map(String.init) ?? "")).utf8)
    }
}

/// One client message, classified.
enum RealtimeRequest {
    case data(r: Int64, action: String, body: RawJSON, source: [UInt8])
    case ping
    case other

    static func parse(_ bytes: [UInt8]) throws -> RealtimeRequest {
        let m = try RawJSON.parse(bytes)
        guard let t = m["t"]?.string, let d = m["d"] else { throw RTDBError(.invalidJSON, "a realtime message needs t and d") }
        if t == "c" {
            return d["t"]?.string == "p" ? .ping : .other
        }
        guard t == "d", let r = d["r"]?.int, let a = d["a"]?.string else {
            throw RTDBError(.invalidJSON, "a data message needs r and a")
        }
        return .data(r: r, action: a, body: d["b"] ?? RawJSON(kind: .null, range: 0..<0), source: bytes)
    }

    /// Writes run in the group commit; everything else at once, in order.
    var isWrite: Bool {
        if case .data(_, let a, _, _) = self { return a == "p" || a == "m" }
        return false
    }
}

/// Messages the server sends (realtime-protocol §3, §4), as JSON text.
enum RealtimeMessage {
    static func hello(ts: Int64, host: String, session: String) -> String {
        var out = #"{"t":"c","d":{"t":"h","d":{"ts":\#(ts),"v":"5","h":"#
        out += quoted(host) + #","s":"# + quoted(session) + "}}}"
        return out
    }

    static let pong = #"{"t":"c","d":{"t":"o","d":null}}"#

    /// A response to request `r`: `data` is raw JSON text.
    static func response(_ r: Int64, status: String, data: String) -> String {
        #"{"t":"d","d":{"r":\#(r),"b":{"s":"# + quoted(status) + #","d":"# + data + "}}}"
    }

    static func ok(_ r: Int64, _ data: String = "\"\"") -> String { response(r, status: "ok", data: data) }

    static func failure(_ r: Int64, _ status: String, _ message: String) -> String {
        response(r, status: status, data: quoted(message))
    }

    /// A data push: `d` (overwrite) or `m` (merge) at an absolute path, tagged for a query listen.
    static func push(_ event: StreamEvent, at location: Path, tag: Int64?) -> String {
        var out = #"{"t":"d","d":{"a":"#
        switch event {
        case .put(let rel, let value):
            out += #""d","b":{"p":"# + wirePath(location.appending(rel)) + #","d":"# + json(value)
        case .patch(let rel, let entries) where entries.count == 1:
            // A merge of one path is a set there (realtime-protocol §12.7: an onDisconnect set,
            // run as a merge at the root, reaches a listen above it as a `d` at its own path).
            out += #""d","b":{"p":"# + wirePath(location.appending(rel).appending(entries[0].path)) + #","d":"#
                + json(entries[0].value)
        case .patch(let rel, let entries):
            out += #""m","b":{"p":"# + wirePath(location.appending(rel)) + #","d":{"#
            for (i, e) in entries.enumerated() {
                if i > 0 { out += "," }
                out += quoted(e.path.unrooted) + ":" + json(e.value)
            }
            out += "}"
        }
        if let tag { out += #","t":\#(tag)"# }
        return out + "}}}"
    }

    /// A listen revoked (rules): the client cancels it with permission_denied.
    static func cancel(_ location: Path, query: String?) -> String {
        #"{"t":"d","d":{"a":"c","b":{"p":"# + wirePath(location) + (query.map { #","q":[\#($0)]"# } ?? "") + "}}}"
    }

    /// Paths go out as Firebase's servers send them: no leading slash, the root as "".
    static func wirePath(_ p: Path) -> String { quoted(p.unrooted) }

    /// Data in export form: priorities kept, objects never turned into arrays.
    static func json(_ node: Node) -> String { JSONWriter.string(node, export: true) }

    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
