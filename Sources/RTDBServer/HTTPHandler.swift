import RTDBCore
import RTDBWire

/// HTTP requests on `rtdb serve`, one parsed request at a time: which run at once and which in
/// the group commit, what they are answered with and how the answer is framed, and whether a
/// request upgrades the connection to the realtime protocol. The REST semantics are
/// RESTHandler's; this type adds what belongs to the connection.
final class HTTPHandler {
    let rest: RESTHandler
    /// The server's own URL (the hello's host when an upgrade names none).
    var url: () -> String
    /// The data viewer is served (`/.ui/`, ViewerRoutes); off with `rtdb serve --no-ui`.
    let viewer: Bool

    init(rest: RESTHandler, url: @escaping () -> String, viewer: Bool) {
        self.rest = rest
        self.url = url
        self.viewer = viewer
    }

    enum Kind: Equatable {
        /// Answered at once (reads, streams, preflights).
        case read
        /// Run in the group commit; answered after the COMMIT.
        case write
        /// A WebSocket upgrade to the realtime protocol (`GET /.ws`).
        case upgrade
    }

    static func kind(_ r: HTTPRequest) -> Kind {
        if isUpgrade(r) { return .upgrade }
        let reads = r.method == "GET" || r.method == "HEAD" || r.method == "OPTIONS"
        return reads || isStream(r) ? .read : .write
    }

    static func isUpgrade(_ r: HTTPRequest) -> Bool {
        r.method == "GET" && r.rawPath == "/.ws"
            && (r.header("upgrade")?.lowercased().contains("websocket") ?? false)
    }

    static func isStream(_ r: HTTPRequest) -> Bool {
        r.method == "GET" && RESTHandler.wantsStream(r)
    }

    /// A read: a response, or a stream to open.
    func read(_ r: HTTPRequest) -> RESTOutcome {
        if viewer, let page = ViewerRoutes.answer(r) { return .response(page) }
        return rest.handle(r)
    }

    /// The answer to a write whose head alone settles that it is refused, given before its body
    /// is read: an unauthorised client cannot make the server receive and hold a large body.
    /// The head's credential is judged as the request would be (`principal`, which needs no
    /// body): no credential or a wrong one when only the secret may write, a refused token
    /// under rules. Anything the body or the rules' reading of the data could change (an
    /// anonymous write under rules, say) is left to the request itself: nil then.
    func refusedBeforeBody(_ head: HTTPRequest) -> HTTPResponse? {
        guard HTTPHandler.kind(head) == .write, !head.rawPath.hasSuffix("/.settings/rules.json") else { return nil }
        guard rest.secret != nil || rest.hasRules else { return nil }
        do {
            _ = try rest.principal(head, namespace: try rest.namespace(head))
            return nil
        } catch let e as RESTError where e.status == 401 || e.status == 403 {
            var r = e.response
            r.headers.append(("Access-Control-Allow-Origin", "*"))
            return r
        } catch {
            return nil
        }
    }

    /// A write, inside the group commit.
    func write(_ r: HTTPRequest) -> HTTPResponse {
        if case .response(let response) = rest.handle(r) { return response }
        return HTTPResponse.error(400, "Streaming needs GET")
    }

    /// The answer of a write whose file could not be committed.
    static func lost(_ e: RTDBError) -> HTTPResponse {
        HTTPResponse.error(500, "The write could not be committed: \(e.message)")
    }

    /// The bytes of `response` to `request`, and whether the connection stays open after it
    /// (not when the client asked to close, nor while the server stops).
    static func frame(_ response: HTTPResponse, to request: HTTPRequest, stopping: Bool) -> (bytes: [UInt8], keepAlive: Bool) {
        let keep = keepsAlive(request, stopping: stopping)
        return (response.serialize(keepAlive: keep), keep)
    }

    /// Whether the connection stays open after answering `request`.
    static func keepsAlive(_ request: HTTPRequest, stopping: Bool) -> Bool {
        request.keepAlive && !stopping
    }

    /// What an upgrade request is answered with.
    enum Upgrade {
        /// 101: the connection speaks the realtime protocol from now on, as a new session in
        /// `namespace`; `previous` is the session a reconnecting client names (`ls=`).
        case accept(key: String, namespace: String, host: String, previous: String?, credentials: HTTPRequest)
        /// An HTTP error; `close` when the connection cannot go on.
        case refuse(HTTPResponse, close: Bool)
    }

    func upgrade(_ req: HTTPRequest) -> Upgrade {
        guard let key = req.header("sec-websocket-key"), !key.isEmpty,
              req.header("sec-websocket-version")?.trimmingSpaces() == "13" else {
            return .refuse(HTTPResponse.error(400, "a WebSocket upgrade needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13"), close: true)
        }
        let namespace: String
        do { namespace = try rest.namespace(req) } catch let e as RESTError {
            return .refuse(e.response, close: false)
        } catch {
            return .refuse(HTTPResponse.error(400, "invalid namespace"), close: false)
        }
        return .accept(key: key, namespace: namespace, host: req.header("host") ?? url(), previous: req.queryValue("ls"),
                       credentials: RealtimeSession.credentials(from: req))
    }

    /// The 101 answer to an accepted upgrade.
    static func switchingProtocols(key: String) -> [UInt8] {
        Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(WebSocket.acceptValue(forKey: key))\r\n\r\n").utf8)
    }
}
