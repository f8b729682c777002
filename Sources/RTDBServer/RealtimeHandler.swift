import RTDBCore
import RTDBEngine
import RTDBRules
import RTDBWire

/// Firebase's realtime protocol on `rtdb serve`, as a handler: given a
/// session and one decoded request, it returns the messages to send, in order. Requests other
/// than writes are answered at once (`answer`); writes (`p`, `m`) run inside the group commit
/// (`write`, RealtimeWrites.swift). Listens share the streams' views; their first data goes
/// out before their ok. Credentials and security rules apply exactly as over REST: the
/// session's credentials go through the REST handler's code.
final class RealtimeHandler {
    let rest: RESTHandler
    let namespaces: ServerNamespaces
    let streams: ServerStreams
    let log: ServerLog
    /// Listens and followed files across all connections (the server sets it from its options).
    var budget = StreamBudget()

    init(rest: RESTHandler, namespaces: ServerNamespaces, streams: ServerStreams, log: ServerLog) {
        self.rest = rest
        self.namespaces = namespaces
        self.streams = streams
        self.log = log
    }

    /// The hello that starts a session.
    func hello(_ session: RealtimeSession) -> RealtimeMessage {
        .control(.hello(RealtimeHello(timestamp: EmbeddedDatabase.systemClock(), host: session.host, session: session.id)))
    }

    /// Everything but writes, answered at once. `connection` names the connection whose listens
    /// these are (events for them are delivered there).
    func answer(_ work: RealtimeWork, _ session: RealtimeSession, connection: UInt64) -> [RealtimeMessage] {
        switch work {
        case .ping: return [.control(.pong)]
        case .refused(let r, _, let error): return [.response(ErrorStatus.refusal(r, error))]
        case .request(let request):
            do {
                return try answer(request, session, connection: connection)
            } catch {
                return [.response(ErrorStatus.refusal(request.r, error))]
            }
        }
    }

    private func answer(_ request: RealtimeRequest, _ session: RealtimeSession, connection: UInt64) throws -> [RealtimeMessage] {
        let r = request.r
        switch request.action {
        case .stats, .appCheck, .appCheckRemoved:
            return [.response(.ok(r))]
        case .auth(let credential):
            return [.response(authenticate(session, r, credential: credential, gauth: false, override: nil))]
        case .gauth(let credential, let override):
            return [.response(authenticate(session, r, credential: credential, gauth: true, override: override))]
        case .unauth:
            session.credentials = RealtimeSession.anonymous
            return [.response(.ok(r, JSONText(string: "unauthenticated")))]
        case .listen(let l):
            return try listen(l, r, session, connection: connection)
        case .unlisten(let l):
            let key = RealtimeSession.listenKey(l.path, l.tag)
            if let sub = session.listens.removeValue(forKey: key) { streams.close(sub) }
            session.access[key] = nil
            return [.response(.ok(r))]
        case .get(let g):
            let db = try namespaces.embedded(session.namespace)
            _ = try authorizeRead(session, g.path, g.query)
            let value = try g.query.map { Node.object(normalizing: try db.query(g.path, $0)) } ?? db.export(g.path)
            return [.response(.ok(r, JSONText(value: value)))]
        case .onDisconnectPut(let path, let value):
            try WriteCheck.value(value, at: path)
            try checkRegistration(session, [(path, value)])
            session.disconnect.set(path, value)
            return [.response(.ok(r))]
        case .onDisconnectMerge(let path, let children):
            let list = try WriteCheck.update(children, at: path)
            try checkRegistration(session, list.map { (path.appending($0.path), $0.value) })
            session.disconnect.update(path, list)
            return [.response(.ok(r))]
        case .onDisconnectCancel(let path):
            session.disconnect.cancel(path)
            return [.response(.ok(r))]
        case .put, .merge:
            // Writes belong to the group commit; answered here only if one arrives out of turn.
            return [.response(write(.request(request), session))]
        case .raw(let action, _):
            return [.response(.failure(r, .failure, "unknown action \(Limits.cut(action))"))]
        }
    }

    /// A listen: checked by the rules, then its current data (before the ok: an ok first makes
    /// the SDK raise value(null)), then the ok.
    private func listen(_ l: RealtimeListen, _ r: Int64, _ session: RealtimeSession, connection: UInt64) throws -> [RealtimeMessage] {
        _ = try authorizeRead(session, l.path, l.query)
        let key = RealtimeSession.listenKey(l.path, l.tag)
        if session.listens[key] == nil && session.listens.count >= RealtimeSession.maxListens {
            return [.response(.failure(r, .failure, "too many listens on this connection (at most \(RealtimeSession.maxListens)): "
                                       + "close some, or listen higher in the tree"))]
        }
        if session.listens[key] == nil, let why = budget.refusal(file: namespaces.path(of: session.namespace), streams) {
            return [.response(.failure(r, .failure, why))]
        }
        if let old = session.listens[key] { streams.close(old) }
        // Every listen is checked again when rules change, governed now or not: rules loaded
        // later (under any name of the same data) must be able to take it away.
        session.access[key] = (l.path, l.query, l.queryObject)
        let sub = streams.subscriber(connection: connection, kind: .realtime(location: l.path, tag: l.tag))
        session.listens[key] = sub
        let first = try streams.open(sub, file: namespaces.path(of: session.namespace), db: try namespaces.embedded(session.namespace),
                                     path: l.path, query: l.query)
        return [.push(RealtimePush(first, at: l.path, tag: l.tag)), .response(.ok(r, .emptyObject))]
    }

    /// An onDisconnect registration is checked as if it ran now: credentials, then rules
    /// (nothing is written).
    private func checkRegistration(_ session: RealtimeSession, _ writes: [(path: Path, value: Node)]) throws {
        let principal = try principal(session)
        guard rest.checksWrites(principal, session.namespace), let first = writes.first else { return }
        let c = RESTHandler.Context(request: session.credentials, namespace: session.namespace, path: first.path, principal: principal)
        try rest.ruledWrite(c, principal, writes) { _, _, _ in }
    }

    /// `auth` (an ID token) / `gauth` (an access token; `authvar` overrides `auth` for rules,
    /// `noauth` makes it null): the session's credentials become these, judged like REST's
    /// (`owner` or any token is admin on an open server; with a secret only the secret is; an
    /// ID token is a user under rules). A refused credential answers invalid_token and leaves
    /// the session unauthenticated.
    private func authenticate(_ session: RealtimeSession, _ r: Int64, credential: String, gauth: Bool,
                              override: RealtimeRequest.AuthOverride?) -> RealtimeResponse {
        var overrideText: String? = nil
        switch override {
        case .variables(let v)?: overrideText = v.description
        case .unauthenticated?: overrideText = "null"
        case nil: break
        }
        // An ID token goes as REST's auth= parameter; an access token (or `owner`) as a bearer.
        let idToken = !gauth && credential != "owner" && (rest.secret.map { !RESTAuth.constantTimeEqual(credential, $0) } ?? true)
        let creds = RealtimeSession.credentials(token: credential, asAuthParameter: idToken, override: overrideText)
        let principal: Principal
        do { principal = try rest.principal(creds, namespace: session.namespace) } catch {
            session.credentials = RealtimeSession.anonymous
            return .failure(r, .invalidToken, "Invalid claim")
        }
        session.credentials = creds
        var claims: JSONText? = nil
        if case .user(let auth) = principal { claims = JSONText(value: auth, export: false) }
        else if idToken { claims = RealtimeHandler.claims(ofToken: credential) }
        return .authenticated(r, claims: claims)
    }

    /// The payload of a JWT (unverified), as JSON text, when it is one.
    static func claims(ofToken token: String) -> JSONText? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[1])),
              let raw = try? RawJSON.parse(bytes), raw.members != nil else { return nil }
        return try? JSONText(validating: bytes)
    }

    // MARK: rules

    /// Who the session is now; throws when its credentials are refused (as REST's 401s).
    func principal(_ session: RealtimeSession) throws -> Principal {
        try rest.principal(session.credentials, namespace: session.namespace)
    }

    /// Refuses a read the rules do not grant. Returns true when the rules govern it (a listen
    /// must then be checked again when data or rules change).
    func authorizeRead(_ session: RealtimeSession, _ path: Path, _ query: Query?) throws -> Bool {
        let principal = try principal(session)
        guard let rules = rest.rules(for: session.namespace), !rest.isAdmin(principal) else { return false }
        let db = try namespaces.embedded(session.namespace)
        let data = RuleData.stored(in: db)
        guard rules.canRead(path, principal: principal, query: RealtimeHandler.ruleQuery(query), now: rest.clock(), data: data,
                             observer: Coverage.counter) else {
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

    /// The listens the rules no longer let the session read end: the client gets `c` (its
    /// cancel callback raises permission_denied).
    func recheck(_ session: RealtimeSession) -> [RealtimeMessage] {
        // Without rules every listen stays: nothing to ask, however many there are.
        guard rest.rules(for: session.namespace) != nil else { return [] }
        var out: [RealtimeMessage] = []
        for (key, a) in session.access {
            if (try? authorizeRead(session, a.path, a.query)) != nil { continue }
            session.access[key] = nil
            if let sub = session.listens.removeValue(forKey: key) {
                streams.close(sub)
                var query: JSONText? = nil
                if case .realtime(_, let tag) = sub.kind, tag != nil { query = a.queryObject }
                out.append(.push(.listenRevoked(path: a.path, queryObject: query)))
            }
        }
        return out
    }

    /// Once a second: a session whose verified ID token (`--project-id`) expired loses it; the
    /// client refreshes it and authenticates again.
    func sweep(_ session: RealtimeSession, nowSeconds: Int64) -> [RealtimeMessage] {
        guard rest.security.projectID != nil, let p = try? principal(session), rest.expired(p, nowSeconds) else { return [] }
        session.credentials = RealtimeSession.anonymous
        return [.push(.authRevoked(status: RealtimeStatus.expiredToken.rawValue, reason: "Auth token is expired"))]
    }

    /// The session ended: its listens close; its onDisconnect writes, if any, are returned to
    /// run in the next group commit.
    func end(_ session: RealtimeSession) -> PendingDisconnect? {
        for sub in session.listens.values { streams.close(sub) }
        session.listens = [:]
        if session.disconnect.isEmpty { return nil }
        let d = PendingDisconnect(namespace: session.namespace, session: session.id, entries: session.disconnect.update,
                                  credentials: session.credentials)
        session.disconnect = DisconnectWrites()
        return d
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
