import RTDBCore
import RTDBNet
import RTDBWire

/// The realtime client's operations: each builds its request as a `RealtimeRequest` and
/// checks the answer.
extension RealtimeClient {
    /// A listen's body: the query object and tag only for a query listen; no cached value.
    static func listen(_ path: Path, _ query: JSONText?, _ tag: Int?) -> RealtimeListen {
        var l = RealtimeListen(path: path, hash: "")
        if let query, let tag {
            l.queryObject = query
            l.tag = Int64(tag)
        }
        return l
    }

    private func check(_ a: RealtimeAnswer, _ what: String) throws {
        switch RealtimeStatus(rawValue: a.status) {
        case .ok: return
        case .permissionDenied: throw RTDBError(.permissionDenied, "\(target.display) denied \(what): \(a.message)")
        case .dataStale: throw RTDBError(.notCommitted, "\(target.display): \(what) met a changed value")
        case .tooBig: throw RTDBError(.tooLarge, "\(target.display) refused \(what): \(a.message)")
        default: throw RTDBError(.unavailable, "\(target.display) refused \(what): \(a.status) \(a.message)")
        }
    }

    /// Child paths as a merge's members: relative paths as keys.
    private static func members(_ children: [(path: Path, value: Node)]) -> [Node.Entry] {
        children.map { Node.Entry($0.path.unrooted, $0.value) }
    }

    /// Overwrites `path` (`p`).
    public func put(_ path: Path, _ value: Node) throws {
        try check(call(.put(path: path, value: value, hash: nil)), "a write of \(path)")
    }

    /// Writes each child path below `path` (`m`), all or nothing.
    public func merge(_ path: Path, _ children: [(path: Path, value: Node)]) throws {
        try check(call(.merge(path: path, children: RealtimeClient.members(children))), "an update of \(path)")
    }

    /// Reads `path` once (`g`).
    public func get(_ path: Path) throws -> Node {
        let a = try call(.get(RealtimeListen(path: path, queryObject: .emptyObject)))
        try check(a, "a read of \(path)")
        do { return try JSONReader.parse(a.data) } catch {
            throw RTDBError(.unavailable, "\(target.display) answered a read of \(path) with data that is not JSON")
        }
    }

    /// Listens at `path`; `query` is a wire query object or nil for the whole location.
    /// The current value arrives as a `.put` event, then every change. Returns the tag of a
    /// query listen.
    @discardableResult
    public func listen(_ path: Path, query: String? = nil) throws -> Int? {
        var object: JSONText? = nil
        if let query {
            do { object = try JSONText(validating: query) } catch {
                throw RTDBError(.invalidQuery, "a listen's query object is not JSON: \(error)")
            }
        }
        var tag: Int? = nil
        if object != nil { tag = nextTag; nextTag += 1 }
        let a = try call(.listen(RealtimeClient.listen(path, object, tag)), resend: false)
        try check(a, "a listen at \(path)")
        listens.append((path, object, tag))
        return tag
    }

    /// Listens to a query at `path`: a tagged listen (its window arrives in events carrying the
    /// tag) or, without bounds and limit, a plain listen.
    @discardableResult
    public func listen(_ path: Path, _ query: Query) throws -> Int? {
        try listen(path, query: RealtimeQuery.object(query))
    }

    /// Stops the listen at `path` (with `tag` for a query listen).
    public func unlisten(_ path: Path, tag: Int? = nil) throws {
        guard let i = listens.firstIndex(where: { $0.path.same(as: path) && $0.tag == tag }) else { return }
        let l = listens.remove(at: i)
        var body = RealtimeListen(path: path)
        if let q = l.query, let t = l.tag {
            body.queryObject = q
            body.tag = Int64(t)
        }
        try check(call(.unlisten(body), resend: false), "an unlisten at \(path)")
    }

    /// Registers a write of `value` at `path` (null: a removal) that the server makes when this
    /// connection goes away (`o`). Registered again on every new connection.
    public func onDisconnectPut(_ path: Path, _ value: Node) throws {
        try registerOnDisconnect(.onDisconnectPut(path: path, value: value), path)
    }

    /// Registers an update of child paths below `path` on disconnect (`om`).
    public func onDisconnectMerge(_ path: Path, _ children: [(path: Path, value: Node)]) throws {
        try registerOnDisconnect(.onDisconnectMerge(path: path, children: RealtimeClient.members(children)), path)
    }

    /// Cancels the writes registered at and below `path` (`oc`).
    public func onDisconnectCancel(_ path: Path) throws {
        let action = RealtimeRequest.Action.onDisconnectCancel(path: path)
        try check(call(action, resend: false), "cancelling on-disconnect writes at \(path)")
        onDisconnect.removeAll { op in
            switch op {
            case .onDisconnectPut(let at, _), .onDisconnectMerge(let at, _), .onDisconnectCancel(let at): return path.contains(at)
            default: return false
            }
        }
        onDisconnect.append(action)
    }

    private func registerOnDisconnect(_ action: RealtimeRequest.Action, _ path: Path) throws {
        try check(call(action, resend: false), "an on-disconnect write at \(path)")
        onDisconnect.append(action)
    }
}

extension RemoteDatabase {
    /// A realtime client for the same target, credential, certificates and timeout.
    public func realtimeClient() -> RealtimeClient {
        RealtimeClient(target: target, credential: credential,
                       timeoutSeconds: timeoutMillis < 0 ? 0 : Double(timeoutMillis) / 1000, caFile: caFile, clock: clock)
    }

    /// Whether the server answers over REST (the offline cache's probe, for a target without the
    /// realtime protocol): `GET /.json?shallow=true&print=silent` answered with any status but
    /// 5xx and 429.
    public func answersREST() -> Bool {
        guard let r = try? send("GET", .root, params: [("shallow", "true"), ("print", "silent")], idempotent: true) else { return false }
        return r.status < 500 && r.status != 429
    }

    /// `/.info` from one realtime handshake: `connected` true and the
    /// handshake's `serverTimeOffset`, or `connected` false (no offset) when the server cannot
    /// be reached. A credential the server refuses is an error, not a disconnected state.
    public func realtimeInfo() throws -> Node {
        let client = realtimeClient()
        defer { client.close() }
        do {
            try client.connect()
        } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
            return Node.object([Node.Entry("connected", .bool(false))])
        }
        return client.info
    }
}
