import RTDBCore

/// A client request, `{"t":"d","d":{"r":N,"a":ACTION,"b":BODY}}`.
/// `r` numbers the request; its response carries the same number.
public struct RealtimeRequest: Sendable {
    public var r: Int64
    public var action: Action

    public init(r: Int64, _ action: Action) {
        self.r = r
        self.action = action
    }

    /// What the request asks, with its body read. Wire names are in `name`.
    public enum Action: Sendable {
        /// `s`: the SDK's usage counters (`{"c":{…}}`), answered ok and otherwise unread.
        case stats(JSONText)
        /// `q` (also the legacy `l`).
        case listen(RealtimeListen)
        /// `n` (also the legacy `u`).
        case unlisten(RealtimeListen)
        /// `g`: a one-shot read.
        case get(RealtimeListen)
        /// `p`: a set; with `hash`, only while the value's hash is still that (transactions).
        case put(path: Path, value: Node, hash: String?)
        /// `m`: a multi-path update; keys are relative paths, as sent (null deletes).
        case merge(path: Path, children: [Node.Entry])
        /// `o`: a set to make when the connection goes away.
        case onDisconnectPut(path: Path, value: Node)
        /// `om`: an update to make when the connection goes away.
        case onDisconnectMerge(path: Path, children: [Node.Entry])
        /// `oc`: cancel what is registered at and below the path.
        case onDisconnectCancel(path: Path)
        /// `auth`: an ID token (or a database secret).
        case auth(credential: String)
        /// `gauth`: an access token, optionally with the `auth` the rules see.
        case gauth(credential: String, override: AuthOverride?)
        /// `unauth`: back to anonymous.
        case unauth
        /// `appcheck`: an App Check token (accepted and otherwise ignored).
        case appCheck(token: String?)
        /// `unappeck` (the JS SDK's spelling) or `unappcheck`: the App Check token is gone.
        case appCheckRemoved(spelling: String)
        /// Any other action, with its body as sent: what a decoder gives for an action it does
        /// not know (the server refuses it), and what a caller that writes its own body sends.
        case raw(action: String, body: JSONText)

        public var name: String {
            switch self {
            case .stats: return "s"
            case .listen: return "q"
            case .unlisten: return "n"
            case .get: return "g"
            case .put: return "p"
            case .merge: return "m"
            case .onDisconnectPut: return "o"
            case .onDisconnectMerge: return "om"
            case .onDisconnectCancel: return "oc"
            case .auth: return "auth"
            case .gauth: return "gauth"
            case .unauth: return "unauth"
            case .appCheck: return "appcheck"
            case .appCheckRemoved(let spelling): return spelling
            case .raw(let action, _): return action
            }
        }
    }

    /// `gauth`'s choice of the `auth` variable the rules see instead of the token's.
    public enum AuthOverride: Sendable, Equatable {
        /// `authvar`: this object (compact JSON text).
        case variables(JSONText)
        /// `noauth: true`: `auth` is null.
        case unauthenticated
    }

    /// Whether a request of this action writes data (`p`, `m`): servers run those in order with
    /// other writes, everything else at once.
    public static func isWrite(action: String) -> Bool { action == "p" || action == "m" }

    // MARK: encoding

    func write(_ w: inout RealtimeJSONWriter) {
        w.raw(#"{"t":"d","d":{"r":"#)
        w.int(r)
        w.raw(#","a":"#)
        w.string(action.name)
        w.raw(#","b":"#)
        switch action {
        case .stats(let body), .raw(_, let body):
            w.text(body)
        case .listen(let l):
            w.raw(#"{"p":"#)
            w.requestPath(l.path)
            if let q = l.queryObject, let t = l.tag { w.raw(#","q":"#); w.text(q); w.raw(#","t":"#); w.int(t) }
            if let h = l.hash { w.raw(#","h":"#); w.string(h) }
            w.raw("}")
        case .unlisten(let l):
            w.raw(#"{"p":"#)
            w.requestPath(l.path)
            if let q = l.queryObject, let t = l.tag { w.raw(#","q":"#); w.text(q); w.raw(#","t":"#); w.int(t) }
            w.raw("}")
        case .get(let l):
            w.raw(#"{"p":"#)
            w.requestPath(l.path)
            if let q = l.queryObject { w.raw(#","q":"#); w.text(q) }
            w.raw("}")
        case .put(let path, let value, _), .onDisconnectPut(let path, let value):
            w.raw(#"{"p":"#)
            w.requestPath(path)
            w.raw(#","d":"#)
            w.value(value)
            if case .put(_, _, let hash?) = action { w.raw(#","h":"#); w.string(hash) }
            w.raw("}")
        case .merge(let path, let children), .onDisconnectMerge(let path, let children):
            w.raw(#"{"p":"#)
            w.requestPath(path)
            w.raw(#","d":{"#)
            for (i, e) in children.enumerated() {
                if i > 0 { w.raw(",") }
                w.string(e.key)
                w.raw(":")
                w.value(e.node)
            }
            w.raw("}}")
        case .onDisconnectCancel(let path):
            w.raw(#"{"p":"#)
            w.requestPath(path)
            w.raw(#","d":null}"#)
        case .auth(let credential):
            w.raw(#"{"cred":"#)
            w.string(credential)
            w.raw("}")
        case .gauth(let credential, let override):
            w.raw(#"{"cred":"#)
            w.string(credential)
            switch override {
            case .variables(let v)?: w.raw(#","authvar":"#); w.text(v)
            case .unauthenticated?: w.raw(#","noauth":true"#)
            case nil: break
            }
            w.raw("}")
        case .appCheck(let token):
            w.raw(#"{"token":"#)
            if let token { w.string(token) } else { w.raw("null") }
            w.raw("}")
        case .unauth, .appCheckRemoved:
            w.raw("{}")
        }
        w.raw("}}")
    }

    // MARK: decoding

    /// `d` holds `r` (already read) and `a`; the body's faults are `invalidBody` errors that
    /// keep `r`, so the server can answer them.
    static func decode(r: Int64, _ d: RealtimeFields, source: [UInt8]) throws(RealtimeDecodingError) -> RealtimeRequest {
        let action = try RealtimeFields(d.value, d.name, .envelope).string("a")
        let b = d.value["b"] ?? RawJSON(kind: .null, range: 0..<0)
        do {
            return RealtimeRequest(r: r, try Body(b, source).action(action))
        } catch {
            throw RealtimeDecodingError(.request(action), .invalidBody(r: r, error))
        }
    }

    /// A request body, read with the messages the server has always answered faults with.
    struct Body {
        let b: RawJSON
        let source: [UInt8]

        init(_ b: RawJSON, _ source: [UInt8]) {
            self.b = b
            self.source = source
        }

        func action(_ name: String) throws(RTDBError) -> Action {
            switch name {
            case "s": return .stats(b.range.isEmpty ? .null : JSONText(b, in: source))
            case "q", "l": return .listen(try listen(query: true))
            case "n", "u": return .unlisten(try listen(query: false))
            case "g": return .get(try listen(query: true))
            case "p": return .put(path: try path(), value: try value(), hash: try string("h"))
            case "m": return .merge(path: try path(), children: try children())
            case "o": return .onDisconnectPut(path: try path(), value: try value())
            case "om": return .onDisconnectMerge(path: try path(), children: try children())
            case "oc": return .onDisconnectCancel(path: try path())
            case "auth": return .auth(credential: try credential())
            case "gauth":
                let cred = try credential()
                var override: AuthOverride? = nil
                if let v = b["authvar"] {
                    guard v.members != nil else { throw RTDBError(.invalidData, "authvar must be an object") }
                    override = .variables(JSONText(compacting: v))
                }
                if let n = b["noauth"] {
                    guard case .bool(let yes) = n.kind else { throw RTDBError(.invalidData, "noauth must be true or false") }
                    if yes { override = .unauthenticated }
                }
                return .gauth(credential: cred, override: override)
            case "unauth": return .unauth
            case "appcheck": return .appCheck(token: b["token"]?.string)
            case "unappeck", "unappcheck": return .appCheckRemoved(spelling: name)
            default: return .raw(action: name, body: b.range.isEmpty ? .null : JSONText(b, in: source))
            }
        }

        func path() throws(RTDBError) -> Path {
            guard let p = b["p"]?.string else { throw RTDBError(.invalidPath, "a path (p) is needed") }
            do { return try Path(p) } catch let e as RTDBError { throw e } catch { throw RTDBError(.invalidPath, "\(error)") }
        }

        /// `d` as data; absent is null.
        func value() throws(RTDBError) -> Node {
            guard let d = b["d"] else { return .null }
            return try RealtimeFields.node(d, source)
        }

        /// The members of `d`, values read as data, nulls kept (they delete).
        func children() throws(RTDBError) -> [Node.Entry] {
            guard let members = b["d"]?.members else { throw RTDBError(.invalidData, "a merge needs an object") }
            var out: [Node.Entry] = []
            out.reserveCapacity(members.count)
            for m in members { out.append(Node.Entry(m.key, try RealtimeFields.node(m.value, source))) }
            return out
        }

        func string(_ key: String) throws(RTDBError) -> String? {
            guard let v = b[key], !v.isNull else { return nil }
            guard let s = v.string else { throw RTDBError(.invalidData, "\(key) must be a string") }
            return s
        }

        func credential() throws(RTDBError) -> String {
            guard let c = try string("cred") else { throw RTDBError(.invalidData, "a credential (cred) is needed") }
            return c
        }

        /// A listen's, unlisten's or get's body: path, query object, tag and hash. The query is
        /// read (and checked) only where the server evaluates it.
        func listen(query parse: Bool) throws(RTDBError) -> RealtimeListen {
            let path = try path()
            var l = RealtimeListen(path: path)
            if let q = b["q"] {
                l.queryObject = JSONText(compacting: q)
                if parse {
                    do {
                        l.query = try RealtimeQuery.parse(q, source: source, priorityOrder: .priority)
                        try l.query?.validate()
                    } catch let e as RealtimeQuery.Invalid {
                        throw RTDBError(.invalidQuery, e.message)
                    } catch let e as RTDBError {
                        throw e
                    } catch {
                        throw RTDBError(.invalidQuery, "\(error)")
                    }
                }
            }
            l.tag = b["t"]?.int
            // The cached value's hash is not used by the server (it always sends the data).
            l.hash = b["h"]?.string
            return l
        }
    }
}

/// The body of a listen (`q`), an unlisten (`n`) or a get (`g`): a location and, for a query,
/// its wire query object. A query listen carries a tag that the pushes
/// for it carry too.
public struct RealtimeListen: Sendable {
    public var path: Path
    /// The wire query object as sent (compact), e.g. `{"l":2,"vf":"r","i":"x"}`.
    public var queryObject: JSONText?
    /// The query object's meaning, filled in by decoding (nil: the whole location). Encoding
    /// writes `queryObject` only.
    public var query: Query?
    public var tag: Int64?
    /// The hash of the client's cached value (`""`: nothing cached).
    public var hash: String?

    public init(path: Path, queryObject: JSONText? = nil, tag: Int64? = nil, hash: String? = nil) {
        self.path = path
        self.queryObject = queryObject
        self.tag = tag
        self.hash = hash
    }
}
