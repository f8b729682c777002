import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBRules
import RTDBWire

/// Firebase's realtime protocol on `rtdb serve` (realtime-protocol.md): `GET /.ws?v=5&ns=NS`
/// upgrades to a WebSocket; requests run in order per connection, writes in the group commit;
/// listens share the streams' views; onDisconnect writes run, as one atomic update, when the
/// connection ends for any reason other than the server stopping. Credentials and security
/// rules apply exactly as over REST (the session's credentials go through the same code).
extension Server {
    static func isUpgrade(_ r: HTTPRequest) -> Bool {
        r.method == "GET" && r.rawPath == "/.ws"
            && (r.header("upgrade")?.lowercased().contains("websocket") ?? false)
    }

    func upgrade(_ c: Conn, _ req: HTTPRequest, started: UInt64) {
        guard let key = req.header("sec-websocket-key"), !key.isEmpty,
              req.header("sec-websocket-version")?.trimmingSpaces() == "13" else {
            send(c, req, HTTPResponse.error(400, "a WebSocket upgrade needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13"), started: started)
            c.closeWhenFlushed = true
            afterFlush(c)
            return
        }
        let namespace: String
        do { namespace = try handler.namespace(req) } catch let e as RESTError {
            send(c, req, e.response, started: started)
            return
        } catch {
            send(c, req, HTTPResponse.error(400, "invalid namespace"), started: started)
            return
        }
        // A reconnecting client names its previous session: end that one now (its onDisconnect
        // writes run), so presence never waits for the old socket to time out.
        if let previous = req.queryValue("ls"), let old = sessions[previous], let oc = conns[old] {
            drop(oc)
        }
        let id = Server.sessionID()
        let session = RealtimeSession(id: id, namespace: namespace, host: req.header("host") ?? url,
                                      credentials: RealtimeSession.credentials(from: req))
        sessions[id] = c.id
        c.realtime = session
        log(req, status: 101, started: started)
        enqueue(c, Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(WebSocket.acceptValue(forKey: key))\r\n\r\n").utf8))
        sendRealtime(c, RealtimeMessage.hello(ts: EmbeddedDatabase.systemClock(), host: session.host, session: id))
    }

    static func sessionID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var g = SystemRandomNumberGenerator()
        return String(decoding: (0..<32).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }, as: UTF8.self)
    }

    /// Reads WebSocket frames and queues the realtime requests they carry.
    func readRealtime(_ c: Conn, _ session: RealtimeSession) {
        while !c.closed && !c.closeWhenFlushed {
            let message: WebSocket.Message?
            do { message = try session.frames.next() } catch let e as WebSocket.ProtocolError {
                closeRealtime(c, e.code, e.reason)
                return
            } catch {
                closeRealtime(c, 1002, "protocol error")
                return
            }
            guard let m = message else { return }
            switch m.opcode {
            case .text:
                do {
                    switch try session.assembler.receive(m.payload) {
                    case .message(let bytes): c.queued.append(.realtime(try RealtimeRequest.parse(bytes)))
                    case .keepAlive, .none: break
                    }
                } catch is RealtimeFraming.Assembler.TooLarge {
                    closeRealtime(c, 1009, "message too big")
                    return
                } catch {
                    closeRealtime(c, 1007, "not a realtime message")
                    return
                }
            case .binary: closeRealtime(c, 1003, "text frames only")
            case .ping: enqueue(c, WebSocket.frame(.pong, m.payload))
            case .pong, .continuation: break
            case .close: closeRealtime(c, 1000, "")
            }
        }
    }

    func closeRealtime(_ c: Conn, _ code: UInt16, _ reason: String) {
        c.queued.removeAll()
        enqueue(c, WebSocket.closeFrame(code, reason))
        c.closeWhenFlushed = true
        afterFlush(c)
    }

    func sendRealtime(_ c: Conn, _ message: String) {
        for piece in RealtimeFraming.frames(message) { enqueue(c, WebSocket.frame(.text, Array(piece.utf8))) }
    }

    /// Sends a commit's event to its subscribers, encoding it once per protocol and location.
    func deliver(_ subs: [StreamSubscriber], _ event: StreamEvent) {
        var sse: [Bool: [UInt8]] = [:]
        var pushes: [[UInt8]: [[UInt8]]] = [:]
        for sub in subs {
            guard let c = conns[sub.connID] else { continue }
            switch sub.kind {
            case .sse(let export):
                let bytes = sse[export] ?? SSE.frame(event: event.name, data: event.data(export: export))
                sse[export] = bytes
                enqueue(c, bytes)
            case .realtime(let location, let tag):
                let key = RealtimeSession.listenKey(location, tag)
                let frames = pushes[key] ?? RealtimeFraming.frames(RealtimeMessage.push(event, at: location, tag: tag))
                    .map { WebSocket.frame(.text, Array($0.utf8)) }
                pushes[key] = frames
                for f in frames { enqueue(c, f) }
            }
        }
    }

    /// The session ended: its listens close and its onDisconnect writes are queued.
    func endSession(_ session: RealtimeSession) {
        for sub in session.listens.values { streams.close(sub) }
        session.listens = [:]
        sessions[session.id] = nil
        if !session.disconnect.isEmpty {
            pendingDisconnects.append((session.namespace, session.id, session.disconnect.update, session.credentials))
            session.disconnect = DisconnectWrites()
        }
    }

    /// Inside the group commit: one session's onDisconnect writes, as one update at the root.
    /// Under rules they are checked again with the session's last credentials, each on its own:
    /// one that is now refused is dropped, the others are made.
    func runDisconnect(_ d: PendingDisconnect) {
        do {
            let db = try namespaces.embedded(d.namespace)
            let principal = try handler.principal(d.credentials, namespace: d.namespace)
            if handler.checksWrites(principal, d.namespace) {
                for e in d.entries {
                    let c = RESTHandler.Context(request: d.credentials, namespace: d.namespace, path: e.path, principal: principal)
                    do {
                        try handler.ruledWrite(c, principal, [e]) { db, _, resolved in _ = try db.set(e.path, resolved[0].value) }
                    } catch {
                        logLine(#"{"event":"ondisconnect_refused","path":"# + quoted(e.path.description) + "}")
                    }
                }
                return
            }
            _ = try db.update(.root, d.entries)
        } catch {
            logLine(#"{"event":"error","message":"# + quoted("onDisconnect writes of session \(d.session) failed: \(error)") + "}")
        }
    }

    /// Who the session is now; throws when its credentials are refused (as REST's 401s).
    func principal(_ session: RealtimeSession) throws -> Principal {
        try handler.principal(session.credentials, namespace: session.namespace)
    }

    /// Refuses a read the rules do not grant. Returns true when the rules govern it (a listen
    /// must then be checked again when data or rules change).
    func authorizeRead(_ session: RealtimeSession, _ path: Path, _ query: Query?) throws -> Bool {
        let principal = try principal(session)
        guard let rules = handler.rules(for: session.namespace), !handler.isAdmin(principal) else { return false }
        let db = try namespaces.embedded(session.namespace)
        let data = RuleData(read: { try db.get($0) })
        guard rules.canRead(path, principal: principal, query: Server.ruleQuery(query), now: handler.clock(), data: data) else {
            throw RESTError.permissionDenied
        }
        return true
    }

    /// A listen's query as rules see it (`query.orderByChild`, `query.limitToFirst`, …).
    static func ruleQuery(_ q: Query?) -> RuleQuery {
        var r = RuleQuery()
        guard let q else { return r }
        r.orderByKey = false
        switch q.order {
        case .key: r.orderByKey = true
        case .value: r.orderByValue = true
        case .priority: r.orderByPriority = true
        case .child(let p): r.orderByChild = p.unrooted
        }
        if let s = q.start, let e = q.end, !s.exclusive, !e.exclusive, s.value.same(as: e.value), s.key == e.key {
            r.equalTo = s.value
        } else {
            r.startAt = q.start?.value
            r.endAt = q.end?.value
        }
        switch q.limit {
        case .first(let n)?: r.limitToFirst = n
        case .last(let n)?: r.limitToLast = n
        case nil: break
        }
        return r
    }

    /// Ends the listens whose location the rules no longer let the session read: the client
    /// gets `c` (its cancel callback raises permission_denied).
    func recheckRealtimeListens() {
        for c in Array(conns.values) where !c.closed {
            guard let session = c.realtime, !session.access.isEmpty else { continue }
            for (key, a) in session.access {
                if (try? authorizeRead(session, a.path, a.query)) != nil { continue }
                session.access[key] = nil
                if let sub = session.listens.removeValue(forKey: key) {
                    streams.close(sub)
                    var queryObject: String? = nil
                    if case .realtime(_, let tag) = sub.kind, tag != nil { queryObject = a.raw }
                    sendRealtime(c, RealtimeMessage.cancel(a.path, query: queryObject))
                }
            }
        }
    }

    // MARK: requests

    /// Everything but writes: answered at once, in order.
    func answerRealtime(_ c: Conn, _ session: RealtimeSession, _ req: RealtimeRequest) {
        switch req {
        case .ping: sendRealtime(c, RealtimeMessage.pong)
        case .other: break
        case .data(let r, let action, let body, let source):
            sendRealtime(c, answer(c, session, r, action, body, source))
        }
    }

    private func answer(_ c: Conn, _ session: RealtimeSession, _ r: Int64, _ action: String, _ body: RawJSON, _ source: [UInt8]) -> String {
        do {
            switch action {
            case "s", "appcheck", "unappeck", "unappcheck":
                return RealtimeMessage.ok(r)
            case "auth", "gauth":
                return authenticate(session, r, action, body)
            case "unauth":
                session.credentials = HTTPRequest(method: "GET", target: "/")
                return RealtimeMessage.ok(r, "\"unauthenticated\"")
            case "q", "l":
                let path = try Server.path(body)
                let query = try RealtimeQuery.parse(body["q"], source: source, priorityOrder: .priority)
                if let query { try query.validate() }
                let governed = try authorizeRead(session, path, query)
                let tag = body["t"]?.int
                let key = RealtimeSession.listenKey(path, tag)
                if let old = session.listens[key] { streams.close(old) }
                session.access[key] = governed ? (path, query, body["q"].map(Server.rawText)) : nil
                let sub = StreamSubscriber(id: nextSubscriber, connID: c.id, kind: .realtime(location: path, tag: tag))
                nextSubscriber += 1
                session.listens[key] = sub
                // The current data goes out before the ok (an ok first makes the SDK raise value(null)).
                try streams.open(sub, file: namespaces.path(of: session.namespace), db: try namespaces.embedded(session.namespace),
                                 path: path, query: query)
                return RealtimeMessage.ok(r, "{}")
            case "n", "u":
                let path = try Server.path(body)
                let key = RealtimeSession.listenKey(path, body["t"]?.int)
                if let sub = session.listens.removeValue(forKey: key) { streams.close(sub) }
                session.access[key] = nil
                return RealtimeMessage.ok(r)
            case "g":
                let path = try Server.path(body)
                let db = try namespaces.embedded(session.namespace)
                let value: Node
                let query = try RealtimeQuery.parse(body["q"], source: source, priorityOrder: .priority)
                try query?.validate()
                _ = try authorizeRead(session, path, query)
                if let query {
                    value = Node.object(normalizing: try db.query(path, query))
                } else {
                    value = try db.export(path)
                }
                return RealtimeMessage.ok(r, RealtimeMessage.json(value))
            case "o":
                let path = try Server.path(body)
                let value = try body["d"].map { $0.isNull ? Node.null : try $0.node(in: source) } ?? .null
                try WriteCheck.value(value, at: path)
                try checkRegistration(session, [(path, value)])
                session.disconnect.set(path, value)
                return RealtimeMessage.ok(r)
            case "om":
                let path = try Server.path(body)
                let list = try WriteCheck.update(try Server.members(body, source), at: path)
                try checkRegistration(session, list.map { (path.appending($0.path), $0.value) })
                session.disconnect.update(path, list)
                return RealtimeMessage.ok(r)
            case "oc":
                let path = try Server.path(body)
                session.disconnect.cancel(path)
                return RealtimeMessage.ok(r)
            default:
                return RealtimeMessage.failure(r, "failure", "unknown action \(action)")
            }
        } catch let e as RTDBError {
            return RealtimeMessage.failure(r, Server.status(e), e.message)
        } catch let e as RESTError {
            return RealtimeMessage.failure(r, e.status == 401 ? "permission_denied" : "failure", e.message)
        } catch let e as RealtimeQuery.Invalid {
            return RealtimeMessage.failure(r, "failure", e.message)
        } catch {
            return RealtimeMessage.failure(r, "failure", "\(error)")
        }
    }

    /// An onDisconnect registration is checked as if it ran now: credentials, then rules
    /// (nothing is written).
    private func checkRegistration(_ session: RealtimeSession, _ writes: [(path: Path, value: Node)]) throws {
        let principal = try principal(session)
        guard handler.checksWrites(principal, session.namespace), let first = writes.first else { return }
        let c = RESTHandler.Context(request: session.credentials, namespace: session.namespace, path: first.path, principal: principal)
        try handler.ruledWrite(c, principal, writes) { _, _, _ in }
    }

    /// `auth` (an ID token) / `gauth` (an access token; `authvar` overrides `auth` for rules,
    /// `noauth` makes it null): the session's credentials become these, judged like REST's
    /// (`owner` or any token is admin on an open server; with a secret only the secret is; an
    /// ID token is a user under rules). A refused credential answers invalid_token and leaves
    /// the session unauthenticated.
    private func authenticate(_ session: RealtimeSession, _ r: Int64, _ action: String, _ body: RawJSON) -> String {
        let cred = body["cred"]?.string ?? ""
        var override: String? = nil
        if action == "gauth" {
            if let v = body["authvar"], v.members != nil { override = Self.rawText(v) }
            if let n = body["noauth"], case .bool(true) = n.kind { override = "null" }
        }
        // An ID token goes as REST's auth= parameter; an access token (or `owner`) as a bearer.
        let idToken = action == "auth" && cred != "owner" && (options.secret.map { !RESTAuth.constantTimeEqual(cred, $0) } ?? true)
        let creds = RealtimeSession.credentials(token: cred, asAuthParameter: idToken, override: override)
        let principal: Principal
        do { principal = try handler.principal(creds, namespace: session.namespace) } catch {
            session.credentials = HTTPRequest(method: "GET", target: "/")
            return RealtimeMessage.failure(r, "invalid_token", "Invalid claim")
        }
        session.credentials = creds
        var auth = "null"
        if case .user(let claims) = principal { auth = JSONWriter.string(claims) }
        else if idToken, let c = Server.claims(ofToken: cred) { auth = c }
        return RealtimeMessage.ok(r, #"{"auth":"# + auth + #","expires":null}"#)
    }

    static func rawText(_ v: RawJSON) -> String {
        // Rebuilt compactly; only used for small override objects.
        switch v.kind {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let d): return JSONWriter.format(d)
        case .string(let s): return RealtimeMessage.quoted(s)
        case .array(let items): return "[" + items.map(rawText).joined(separator: ",") + "]"
        case .object(let m): return "{" + m.map { RealtimeMessage.quoted($0.key) + ":" + rawText($0.value) }.joined(separator: ",") + "}"
        }
    }

    /// The payload of a JWT (unverified), as JSON text, when it is one.
    static func claims(ofToken token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[1])),
              let raw = try? RawJSON.parse(bytes), raw.members != nil else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Inside the group commit: a set (`p`, compare-and-set with `h`) or a merge (`m`), under
    /// the credentials and rules REST applies.
    func realtimeWrite(_ session: RealtimeSession, _ req: RealtimeRequest) -> String? {
        guard case .data(let r, let action, let body, let source) = req else { return nil }
        do {
            let principal = try principal(session)
            let path = try Server.path(body)
            let db = try namespaces.embedded(session.namespace)
            let ruled = handler.checksWrites(principal, session.namespace)
            let context = RESTHandler.Context(request: session.credentials, namespace: session.namespace, path: path, principal: principal)
            if action == "p" {
                let value = try body["d"].map { $0.isNull ? Node.null : try $0.node(in: source) } ?? .null
                try WriteCheck.value(value, at: path)
                let hash = body["h"]?.string
                if ruled {
                    let stale: Bool = try handler.ruledWrite(context, principal, [(path, value)]) { db, data, resolved in
                        if let hash, NodeHash.hash(try data.old(path)) != hash { return true }
                        _ = try db.set(path, resolved[0].value)
                        return false
                    }
                    if stale { return RealtimeMessage.failure(r, "datastale", "hash mismatch") }
                } else if let hash {
                    // A transaction's put: only if the value is still the one the client hashed.
                    if case .stale = try db.set(path, value, if: { NodeHash.hash($0) == hash }) {
                        return RealtimeMessage.failure(r, "datastale", "hash mismatch")
                    }
                } else {
                    _ = try db.set(path, value)
                }
            } else {
                let list = try WriteCheck.update(try Server.members(body, source), at: path)
                if list.isEmpty { return RealtimeMessage.ok(r) }
                if ruled {
                    let full = list.map { (path: path.appending($0.path), value: $0.value) }
                    _ = try handler.ruledWrite(context, principal, full) { db, _, done in
                        try db.update(path, zip(list, done).map { (path: $0.0.path, value: $0.1.value) })
                    }
                } else {
                    _ = try db.update(path, list)
                }
            }
            return RealtimeMessage.ok(r)
        } catch let e as RTDBError {
            return RealtimeMessage.failure(r, Server.status(e), e.message)
        } catch let e as RESTError {
            return RealtimeMessage.failure(r, e.status == 401 ? "permission_denied" : "failure", e.message)
        } catch {
            return RealtimeMessage.failure(r, "failure", "\(error)")
        }
    }

    static func path(_ body: RawJSON) throws -> Path {
        guard let p = body["p"]?.string else { throw RTDBError(.invalidPath, "a path (p) is needed") }
        return try Path(p)
    }

    /// The members of a merge's `d`, values read as data, nulls kept (they delete).
    static func members(_ body: RawJSON, _ source: [UInt8]) throws -> [Node.Entry] {
        guard let members = body["d"]?.members else { throw RTDBError(.invalidData, "a merge needs an object") }
        return try members.map { Node.Entry($0.key, $0.value.isNull ? .null : try $0.value.node(in: source)) }
    }

    static func status(_ e: RTDBError) -> String {
        switch e.code {
        case .permissionDenied: return "permission_denied"
        case .tooLarge: return "too_big"
        case .unavailable, .timeout: return "unavailable"
        default: return "failure"
        }
    }
}

/// Base64 with the URL alphabet and no padding (JWT segments).
enum Base64URL {
    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case 0x41...0x5A: values.append(b - 0x41)
            case 0x61...0x7A: values.append(b - 0x61 + 26)
            case 0x30...0x39: values.append(b - 0x30 + 52)
            case UInt8(ascii: "-"), UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "_"), UInt8(ascii: "/"): values.append(63)
            case UInt8(ascii: "="): continue
            default: return nil
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i + 1 < values.count {
            let n = values.count - i
            let a = UInt32(values[i]), b = UInt32(values[i + 1])
            let c = n > 2 ? UInt32(values[i + 2]) : 0, d = n > 3 ? UInt32(values[i + 3]) : 0
            let v = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(v >> 16 & 0xFF))
            if n > 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if n > 3 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
