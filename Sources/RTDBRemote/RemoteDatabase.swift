import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `Database` seam over Firebase's REST API and its Server-Sent Events streams,
/// for production Firebase, the emulator and `rtdb serve`.
///
/// One HTTP connection per process, reused for every request. Semantics stay in Core: a query
/// is sent server-side and its result is put back in query order with `Query.window`; watch
/// replays put/patch events onto a local copy that the command diffs with the event generator.
/// Pushes use push IDs made here, so `push --lines` is one PATCH, all or nothing.
/// Transactions use ETags: a read sends `X-Firebase-ETag: true` and remembers the tag, and
/// `compareAndSet` sends the write with `if-match`; 412 brings the fresh value and tag.
///
/// Priorities travel as Firebase's REST API carries them: a written value that holds any goes
/// out in the export form (`{".value":v,".priority":p}`, an object's `".priority"` key), and
/// reads that must see them (a read a transaction starts from, a query, a stream) ask for
/// `format=export`.
public final class RemoteDatabase: Database {
    public let target: RemoteTarget
    /// Replaced when a fresh credential is fetched (`--auth-command`, offline flushing).
    public var credential: Credential
    let client: HTTPClient
    let timeoutMillis: Int
    let caFile: String?
    let clock: @Sendable () -> Int64
    var pushIDs: PushIDGenerator
    /// The last value read or written (without priorities) with its ETag and its own priority
    /// (nil when unknown: a 412 answer leaves priorities out), for the next conditional write.
    var tagged: (path: Path, value: Node, etag: String, priority: Node?)?
    /// Seconds between the server's keep-alive events on a stream; silence for twice as long
    /// counts as a dropped connection.
    public var keepAliveSeconds: Double = 30
    /// The first and the longest pause before reconnecting a dropped stream (jittered).
    public var reconnectMillis: (first: Int, cap: Int) = (250, 15_000)
    /// Told when a `watch` stream has delivered its first value (true: the stream is live and
    /// what it delivered is current) and when that stream drops (false).
    public var onStreamState: ((Bool) -> Void)? = nil
    /// Told once when a watch's stream is lost and once when it is back (`StreamNotices`).
    public var onStreamNotice: ((StreamNotice) -> Void)? = nil

    /// `timeoutSeconds` bounds each request (0: no limit); `clock` gives milliseconds since the
    /// Unix epoch (push IDs, token lifetimes).
    public init(target: RemoteTarget, credential: Credential, timeoutSeconds: Double, caFile: String?,
                clock: @escaping @Sendable () -> Int64 = RemoteDatabase.wallClock) {
        self.target = target
        self.credential = credential
        self.timeoutMillis = timeoutSeconds > 0 ? Int(min(timeoutSeconds, 86_400) * 1000) : -1
        self.caFile = caFile
        self.clock = clock
        self.pushIDs = PushIDGenerator()
        self.client = HTTPClient(endpoint: Endpoint(secure: target.secure, host: target.host, port: target.port),
                                 timeoutMillis: timeoutMillis, caFile: caFile)
    }

    public static let wallClock: @Sendable () -> Int64 = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    // MARK: requests

    /// The credential's header or parameter (`refresh` mints a new service-account token).
    func authorization(refresh: Bool = false) throws -> Authorization {
        switch credential {
        case .accessToken(let t): return Authorization(header: ("Authorization", "Bearer " + t))
        case .auth(let t): return Authorization(param: ("auth", t))
        case .serviceAccount(let s):
            let t = try s.accessToken(refresh: refresh, timeoutMillis: timeoutMillis, caFile: caFile)
            return Authorization(header: ("Authorization", "Bearer " + t))
        case .none:
            // The emulator's (and rtdb serve's) admin credential, never sent over the network
            // to anything but an emulator-style plain-http URL.
            if target.emulator && !target.secure { return Authorization(header: ("Authorization", "Bearer owner")) }
            return Authorization()
        }
    }

    func spec(_ method: String, _ path: Path, params: [(name: String, value: String)] = [],
              headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, idempotent: Bool,
              refresh: Bool = false) throws -> HTTPRequestSpec {
        let auth = try authorization(refresh: refresh)
        var all = params
        if let p = auth.param { all.append(p) }
        var h: [(name: String, value: String)] = [("User-Agent", "rtdb/1"), ("Accept", "application/json")]
        if let a = auth.header { h.append(a) }
        h += headers
        if body != nil { h.append(("Content-Type", "application/json")) }
        return HTTPRequestSpec(method: method, target: target.requestTarget(path, all), headers: h, body: body, idempotent: idempotent)
    }

    /// A value as a request body: in the export form when it holds priorities, so the server
    /// stores them (data without any is written exactly as before, arrays as arrays).
    static func json(_ node: Node) -> [UInt8] {
        var b: [UInt8] = []
        JSONWriter(export: node.hasPriorities).write(node, into: &b)
        return b
    }

    /// A JSON object with these entries in this order, nulls kept: the body of a PATCH, which
    /// must stay an object even when its keys look like array indices.
    static func objectJSON(_ entries: [Node.Entry]) -> [UInt8] {
        var b: [UInt8] = [UInt8(ascii: "{")]
        for (i, e) in entries.enumerated() {
            if i > 0 { b.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(e.key, to: &b)
            b.append(UInt8(ascii: ":"))
            JSONWriter(export: e.node.hasPriorities).write(e.node, into: &b)
        }
        b.append(UInt8(ascii: "}"))
        return b
    }

    /// Sends a request; a service-account token the server rejects (401) is minted again once.
    func send(_ method: String, _ path: Path, params: [(name: String, value: String)] = [],
              headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, idempotent: Bool) throws -> HTTPClientResponse {
        let r = try client.send(spec(method, path, params: params, headers: headers, body: body, idempotent: idempotent))
        if r.status == 401, case .serviceAccount = credential {
            return try client.send(spec(method, path, params: params, headers: headers, body: body, idempotent: idempotent, refresh: true))
        }
        return r
    }

    /// The JSON body of a 200 answer, else the error the status stands for.
    func value(_ r: HTTPClientResponse, _ what: String) throws -> Node {
        guard r.status == 200 else { throw RemoteErrors.error(r, target: target, what: what) }
        do {
            return try JSONReader.parse(r.body)
        } catch {
            throw RTDBError(.unavailable, "\(target.display) answered \(what) with a body that is not JSON")
        }
    }

    func entries(_ r: HTTPClientResponse, _ what: String) throws -> [Node.Entry]? {
        guard r.status == 200 else { throw RemoteErrors.error(r, target: target, what: what) }
        do {
            return try r.body.withUnsafeBufferPointer { try JSONReader.parseEntries($0) }
        } catch {
            throw RTDBError(.unavailable, "\(target.display) answered \(what) with a body that is not JSON")
        }
    }

    static func isIdempotent(_ node: Node) -> Bool { !ServerValues.containsPlaceholder(node) }

    /// One request with the answer as it came (status, headers, body), for callers that act on
    /// the status themselves (the offline flusher). Transport failures throw `unavailable` or
    /// `timeout`. `idempotent` allows the client to send it again after a dropped connection.
    public func request(_ method: String, _ path: Path, params: [(name: String, value: String)] = [],
                        headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
                        idempotent: Bool) throws -> HTTPClientResponse {
        try send(method, path, params: params, headers: headers, body: body, idempotent: idempotent)
    }

    /// Connects now unless a connection is ready; throws `unavailable`/`timeout` when the
    /// server cannot be reached (then no request of this process reached it).
    public func connect() throws { try client.prepare() }

    /// What an answer that is not a success stands for (the mapping every command uses).
    public func failure(for answer: HTTPClientResponse, what: String) -> RemoteFailure {
        RemoteErrors.failure(answer, target: target, what: what)
    }

    /// Another handle on the same database, with the same credential, certificates and
    /// timeout, and a connection of its own.
    public func sibling() -> RemoteDatabase {
        RemoteDatabase(target: target, credential: credential, timeoutSeconds: timeoutMillis < 0 ? 0 : Double(timeoutMillis) / 1000,
                       caFile: caFile, clock: clock)
    }

    /// The JSON body of a set for `value`, the same bytes `set` sends.
    public static func body(_ value: Node) -> [UInt8] { json(value) }

    /// The JSON body of an update, nulls kept.
    public static func updateBody(_ entries: [Node.Entry]) -> [UInt8] { objectJSON(entries) }

    // MARK: Database

    /// The value without priorities. It is read in the export form, so that a transaction
    /// that starts from it can keep the node's priority (see `compareAndSet`).
    public func get(_ path: Path) throws -> Node {
        let r = try send("GET", path, params: [("format", "export")], headers: [("X-Firebase-ETag", "true")], idempotent: true)
        let v = try value(r, "a read of \(path)")
        let data = v.withoutPriorities
        if let tag = r.header("etag") { tagged = (path, data, tag, v.priority) }
        return data
    }

    /// The value with its priorities (Firebase's `format=export`).
    public func export(_ path: Path) throws -> Node {
        try value(send("GET", path, params: [("format", "export")], idempotent: true), "a read of \(path)")
    }

    public func shallow(_ path: Path) throws -> Node {
        try value(send("GET", path, params: [("shallow", "true")], idempotent: true), "a shallow read of \(path)")
    }

    public func query(_ path: Path, _ query: Query) throws -> [Node.Entry] {
        // With priorities (export), which a priority order needs and the seam promises.
        let r = try send("GET", path, params: RESTQuery.parameters(query) + [("format", "export")], idempotent: true)
        // The server's object is unordered JSON: put it back in query order (and window).
        return query.window(of: try value(r, "a query of \(path)"))
    }

    public func set(_ path: Path, _ value: Node) throws -> Node {
        let r = try send("PUT", path, body: RemoteDatabase.json(value), idempotent: RemoteDatabase.isIdempotent(value))
        return try self.value(r, "a write to \(path)")
    }

    public func update(_ path: Path, _ entries: [(path: Path, value: Node)]) throws -> [(path: Path, value: Node)] {
        if entries.isEmpty { return [] }
        let body = RemoteDatabase.objectJSON(entries.map { Node.Entry($0.path.unrooted, $0.value) })
        let idem = entries.allSatisfy { RemoteDatabase.isIdempotent($0.value) }
        let answered = try self.entries(send("PATCH", path, body: body, idempotent: idem), "an update of \(path)") ?? []
        return entries.map { e in
            let key = e.path.unrooted
            return (e.path, answered.last(where: { $0.key == key })?.node ?? e.value)
        }
    }

    public func push(_ path: Path, _ values: [Node]) throws -> [Node.Entry] {
        if values.isEmpty { return [] }
        let now = clock()
        let items = values.map { Node.Entry(pushIDs.next(now: now), $0) }
        // Push IDs are chosen here, so the PATCH may be sent again safely (unless it holds
        // server values, which would resolve twice).
        let idem = values.allSatisfy(RemoteDatabase.isIdempotent)
        let answered = try entries(send("PATCH", path, body: RemoteDatabase.objectJSON(items), idempotent: idem), "a push to \(path)") ?? []
        var byKey: [String: Node] = [:]
        if answered.count == items.count, zip(answered, items).allSatisfy({ $0.key == $1.key }) {
            return zip(answered, items).map { Node.Entry($1.key, $0.node) }
        }
        for a in answered { byKey[a.key] = a.node }
        return items.map { Node.Entry($0.key, byKey[$0.key] ?? $0.node) }
    }

    /// As on the embedded file, the node keeps its priority unless `value` carries one: the
    /// priority read with the ETag goes out with the value (a 412 answer has none, so the next
    /// attempt reads it again unless `value` brings its own).
    public func compareAndSet(_ path: Path, expected: Node, value: Node) throws -> CompareAndSetResult {
        var tag: (etag: String, priority: Node?)
        if let t = tagged, t.path.same(as: path), t.value.same(as: expected.withoutPriorities),
           t.priority != nil || !value.priority.isNull {
            tag = (t.etag, t.priority)
        } else {
            tagged = nil
            let current = try get(path)
            guard let t = tagged, t.path.same(as: path) else {
                throw RTDBError(.unsupported, "\(target.display) does not support ETags (X-Firebase-ETag), which transactions need")
            }
            if !current.same(as: expected.withoutPriorities) { return .stale(current: current) }
            tag = (t.etag, t.priority)
        }
        tagged = nil
        let sent = value.priority.isNull ? value.withPriority(tag.priority ?? .null) : value
        let r = try send("PUT", path, headers: [("if-match", tag.etag)], body: RemoteDatabase.json(sent), idempotent: false)
        if r.status == 412 {
            let fresh: Node
            do { fresh = try JSONReader.parse(r.body) } catch {
                throw RTDBError(.unavailable, "\(target.display) answered a stale transaction with a body that is not JSON")
            }
            guard let etag = r.header("etag") else {
                throw RTDBError(.unavailable, "\(target.display) answered a stale transaction without an ETag")
            }
            tagged = (path, fresh, etag, nil)
            return .stale(current: fresh)
        }
        let stored = try self.value(r, "a transaction at \(path)")
        if let etag = r.header("etag") { tagged = (path, stored.withoutPriorities, etag, sent.priority) }
        return .committed(stored)
    }

    public func increment(_ path: Path, by delta: Node) throws -> Node {
        let sv = Node.object([Node.Entry(".sv", .object([Node.Entry("increment", delta)]))])
        return try value(send("PUT", path, body: RemoteDatabase.json(sv), idempotent: false), "an increment of \(path)")
    }

    public func observe(_ path: Path, idle: () throws -> Bool,
                        onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws {
        var stream = RemoteStream(db: self, path: path, query: nil)
        try stream.run(idle: idle, onChange: onChange)
    }

    /// A query with a range or a limit is asked of the server, as the SDKs' listens ask for
    /// theirs: the stream carries the window alone (rules that look at `query.*` judge it as
    /// they judge the same `query`), and the values passed hold only the window's children.
    public func observe(_ path: Path, query: Query, idle: () throws -> Bool,
                        onChange: (_ value: Node, _ changedKeys: [String]?) throws -> Bool) throws {
        var stream = RemoteStream(db: self, path: path, query: query.isFiltered ? query : nil)
        try stream.run(idle: idle, onChange: onChange)
    }
}
