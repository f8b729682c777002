import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the server pushed, or what happened to the connection.
public enum RealtimeEvent: Sendable {
    /// A hello arrived: the connection is up (`/.info/connected` is true).
    case connected(serverTimeOffset: Int64)
    /// The connection was lost (`/.info/connected` is false); the reason is for messages.
    case disconnected(String)
    /// `d`: the value at `path` is now `value` (null: deleted); `tag` names a query listen.
    case put(path: Path, value: Node, tag: Int?)
    /// `m`: each child path below `path` is now its value.
    case merge(path: Path, children: [(path: Path, value: Node)], tag: Int?)
    /// `c`: the server revoked the listen at `path`.
    case listenRevoked(Path)
    /// `ac`: the server revoked the credential.
    case authRevoked(String)
}

/// The answer to one request: its status (`ok`, `permission_denied`, `datastale`, …) and data.
public struct RealtimeAnswer: Sendable {
    public var status: String
    /// The `d` member's JSON text.
    public var data: [UInt8]

    public var isOK: Bool { status == "ok" }
    /// `d` as text when it is a string (errors carry their message there).
    public var message: String { (try? RawJSON.parse(data))?.string ?? String(decoding: data, as: UTF8.self) }
}

/// A client of Firebase's realtime protocol (realtime-protocol §1–§9) for a `--url` target:
/// production Firebase over wss, the emulator or `rtdb serve` over ws or wss.
///
/// Blocking and single-threaded: calls send and then read the socket until their answer comes;
/// pushes met on the way are queued for `nextEvent`. Invariants:
/// * requests carry increasing `r` numbers for the client's whole life; an answer is matched to
///   its request by number;
/// * the client re-creates its state on every new connection (§9): it names its previous
///   session with `ls=`, authenticates again, re-sends every listen, every onDisconnect
///   registration and every write still unanswered, in their original order;
/// * a reset `r` moves the client to the host it names (production); a shutdown `s` stops it for
///   good and every later call fails with the server's reason;
/// * after 45 s without sending, a keep-alive `0` goes out; server pings are answered.
public final class RealtimeClient {
    public let target: RemoteTarget
    let credential: Credential
    let caFile: String?
    let timeoutMillis: Int
    let clock: @Sendable () -> Int64
    /// Milliseconds without sending after which `0` is sent.
    public var keepAliveMillis: Int64 = 45_000

    private var connection: WebSocketConnection?
    /// The endpoint of the next connection (moved by `r`, and by `h` on production).
    private var endpoint: Endpoint
    private var nextNumber = 1
    private var nextTag = 1
    /// Requests sent and not answered yet, in order, with whether they are sent again on a new
    /// connection.
    private var pending: [(r: Int, action: String, body: String, resend: Bool)] = []
    private var answers: [Int: RealtimeAnswer] = [:]
    private var events: [RealtimeEvent] = []
    private var listens: [(path: Path, query: String?, tag: Int?)] = []
    private var onDisconnect: [(action: String, body: String)] = []

    /// True between a hello and the loss of its connection (`/.info/connected`).
    public private(set) var connected = false
    /// Server time minus local time at the last hello, in ms (`/.info/serverTimeOffset`);
    /// nil before the first hello.
    public private(set) var serverTimeOffset: Int64?
    /// The current (or last) session id; sent as `ls` by the next connection.
    public private(set) var sessionID: String?
    /// Hellos received so far.
    public private(set) var connectionCount = 0
    /// The request target of the latest upgrade (`/.ws?v=5&ns=…[&ls=…]`), for messages.
    public private(set) var lastUpgradeTarget: String?
    /// The reason of a shutdown `s`: the client does not connect again.
    public private(set) var shutdownReason: String?

    /// `timeoutSeconds` bounds each connection attempt and each call (0: no limit); `clock`
    /// gives milliseconds since the Unix epoch.
    public init(target: RemoteTarget, credential: Credential, timeoutSeconds: Double, caFile: String?,
                clock: @escaping @Sendable () -> Int64 = RemoteDatabase.wallClock) {
        self.target = target
        self.credential = credential
        self.caFile = caFile
        self.timeoutMillis = timeoutSeconds > 0 ? Int(min(timeoutSeconds, 86_400) * 1000) : -1
        self.clock = clock
        self.endpoint = Endpoint(secure: target.secure, host: target.host, port: target.port)
    }

    deinit { connection?.close() }

    /// Whether `error` says the server answered the WebSocket upgrade with an HTTP status other
    /// than 101: it serves REST only (or something in between does not pass WebSockets).
    public static func isUpgradeRefusal(_ error: RTDBError) -> Bool {
        error.code == .unavailable && error.message.contains(WebSocketConnection.refusalMarker)
    }

    /// `/.info` as a value: `{"connected": …, "serverTimeOffset": …}` (the offset absent before
    /// the first hello).
    public var info: Node {
        var entries: [Node.Entry] = [Node.Entry("connected", .bool(connected))]
        if let o = serverTimeOffset { entries.append(Node.Entry("serverTimeOffset", .int(o))) }
        return Node.object(entries)
    }

    // MARK: connecting

    /// The request target of the upgrade: `/.ws?v=5&ns=NS[&ls=SESSION]`.
    var upgradeTarget: String {
        var t = "/.ws?v=5&ns=" + target.namespace
        if let s = sessionID { t += "&ls=" + PercentCoding.encode(s) }
        return t
    }

    private var deadlineNow: Int64 { timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis) }

    /// Connects unless connected: follows resets, waits for the hello, authenticates and
    /// restores listens, onDisconnect registrations and unanswered writes.
    public func connect() throws {
        if connected, connection != nil { return }
        if let reason = shutdownReason { throw RTDBError(.unavailable, "\(target.display) shut the connection down: \(reason)") }
        let deadline = deadlineNow
        var resets = 0
        while true {
            lastUpgradeTarget = upgradeTarget
            let c = try WebSocketConnection.open(endpoint, target: upgradeTarget,
                                                 headers: [("User-Agent", "rtdb/1")], caFile: caFile,
                                                 timeoutMillis: HTTPClient.left(deadline))
            let first: [UInt8]
            switch try receive(c, deadline: deadline) {
            case .message(let m): first = m
            case .idle: c.close(); throw RTDBError(.timeout, "\(endpoint.host) sent no realtime hello in time")
            case .closed(let why): throw RTDBError(.unavailable, "\(endpoint.host): \(why) before its hello")
            }
            guard let msg = try? RawJSON.parse(first), msg["t"]?.string == "c", let d = msg["d"], let kind = d["t"]?.string else {
                c.close(code: 1002)
                throw RTDBError(.unavailable, "\(endpoint.host) did not start with a realtime hello")
            }
            switch kind {
            case "h":
                try hello(d["d"], c)
            case "r":
                c.close()
                resets += 1
                guard resets <= 5, let host = d["d"]?.string, let moved = movedEndpoint(host) else {
                    throw RTDBError(.unavailable, "\(endpoint.host) sent an unusable reset")
                }
                endpoint = moved
                continue
            case "s":
                c.close()
                let reason = d["d"]?.string ?? "no reason given"
                shutdownReason = reason
                throw RTDBError(.unavailable, "\(target.display) shut the connection down: \(reason)")
            default:
                c.close(code: 1002)
                throw RTDBError(.unavailable, "\(endpoint.host) did not start with a realtime hello")
            }
            break
        }
        try authenticate(deadline: deadline)
        try restore()
    }

    private func hello(_ body: RawJSON?, _ c: WebSocketConnection) throws {
        guard let body, let ts = body["ts"]?.int, let session = body["s"]?.string else {
            c.close(code: 1002)
            throw RTDBError(.unavailable, "\(endpoint.host) sent a malformed realtime hello")
        }
        connection = c
        connected = true
        connectionCount += 1
        sessionID = session
        let offset = ts - clock()
        serverTimeOffset = offset
        // Production names the host that serves this database: later connections go there.
        if !target.emulator, let h = body["h"]?.string, let moved = movedEndpoint(h) { endpoint = moved }
        events.append(.connected(serverTimeOffset: offset))
    }

    /// `HOST[:PORT]` from a hello or reset; the scheme stays, the port stays unless named.
    func movedEndpoint(_ text: String) -> Endpoint? {
        guard !text.isEmpty, let (host, port) = try? RemoteTarget.splitHostPort(text, { RTDBError(.usage, $0) }) else { return nil }
        return Endpoint(secure: endpoint.secure, host: host, port: port ?? endpoint.port)
    }

    /// `gauth` for access tokens (and a service account's), `auth` for ID tokens and secrets,
    /// `gauth owner` for an emulator-style plain-http URL without a credential (as REST sends
    /// `Bearer owner`). The answer is awaited: a refused credential is an error.
    private func authenticate(deadline: Int64) throws {
        let action: String
        let token: String
        switch credential {
        case .accessToken(let t): (action, token) = ("gauth", t)
        case .auth(let t): (action, token) = ("auth", t)
        case .serviceAccount(let s):
            (action, token) = ("gauth", try s.accessToken(refresh: refreshCredential, timeoutMillis: timeoutMillis, caFile: caFile))
            refreshCredential = false
        case .none:
            guard target.emulator && !target.secure else { return }
            (action, token) = ("gauth", "owner")
        }
        var body: [UInt8] = Array(#"{"cred":"#.utf8)
        JSONWriter.appendString(token, to: &body)
        body.append(UInt8(ascii: "}"))
        let r = nextNumber
        nextNumber += 1
        pending.append((r, action, "", false))
        try write(r, action, String(decoding: body, as: UTF8.self))
        let answer = try waitAnswer(r, deadline: deadline)
        if !answer.isOK {
            drop("the credential was refused")
            throw RTDBError(.permissionDenied, "\(target.display) refused the credential (\(credential)): \(answer.status) \(answer.message)")
        }
    }

    /// Re-sends listens, onDisconnect registrations and unanswered writes on a new connection.
    private func restore() throws {
        for l in listens {
            let r = nextNumber
            nextNumber += 1
            restoredListens[r] = l.path
            try write(r, "q", listenBody(l.path, l.query, l.tag))
        }
        for o in onDisconnect {
            let r = nextNumber
            nextNumber += 1
            try write(r, o.action, o.body)
        }
        let again = pending.filter { $0.resend }
        pending = []
        for p in again {
            pending.append(p)
            try write(p.r, p.action, p.body)
        }
    }

    /// Closes the connection (a clean WebSocket close: the server runs onDisconnect writes).
    public func close() {
        connection?.close()
        connection = nil
        if connected { connected = false }
    }

    /// Drops the socket without a close frame, as a killed process does.
    public func abandon() {
        connection?.abandon()
        connection = nil
        connected = false
    }

    private func drop(_ why: String) {
        connection?.close()
        connection = nil
        if connected {
            connected = false
            events.append(.disconnected(why))
        }
    }

    // MARK: requests

    private func write(_ r: Int, _ action: String, _ body: String) throws {
        guard let c = connection else { throw RTDBError(.unavailable, "\(target.display) is not connected") }
        do {
            try c.send(#"{"t":"d","d":{"r":\#(r),"a":"\#(action)","b":\#(body)}}"#, timeoutMillis: 30_000)
        } catch {
            drop("sending failed")
            throw HTTPClient.transportError(error, endpoint)
        }
    }

    /// Sends a request (connecting first if needed) and waits for its answer. A request that
    /// may be sent again (`resend`) survives a lost connection: the client reconnects and
    /// sends it again within the deadline.
    public func call(_ action: String, _ body: String, resend: Bool = true) throws -> RealtimeAnswer {
        let deadline = deadlineNow
        // Once connected before, a lost connection is waited out (with back-off) within the
        // deadline; a first connection that fails is an error at once.
        if connectionCount > 0 && !connected { try reconnect(deadline: deadline) } else { try connect() }
        let r = nextNumber
        nextNumber += 1
        pending.append((r, action, body, resend))
        try write(r, action, body)
        while true {
            do {
                return try waitAnswer(r, deadline: deadline)
            } catch let e as RTDBError where e.code == .unavailable && resend && shutdownReason == nil && !connected {
                do { try reconnect(deadline: deadline, after: e) } catch {
                    pending.removeAll { $0.r == r }
                    throw error
                }
            } catch {
                pending.removeAll { $0.r == r }
                throw error
            }
        }
    }

    /// Reconnects with back-off (1 s, ×1.3, at most 30 s) until connected or the deadline.
    public func reconnect(deadline: Int64? = nil, after error: RTDBError? = nil) throws {
        let end = deadline ?? deadlineNow
        var pause = 1_000
        var last = error
        while true {
            if let reason = shutdownReason { throw RTDBError(.unavailable, "\(target.display) shut the connection down: \(reason)") }
            do {
                try connect()
                return
            } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
                if shutdownReason != nil { throw e }
                last = e
            }
            if end != Int64.max && monotonicMillis() + Int64(pause) >= end {
                throw last ?? RTDBError(.unavailable, "\(target.display) is unreachable")
            }
            sleepMillis(pause)
            pause = min(30_000, pause * 13 / 10)
        }
    }

    /// Reads the socket until request `r` is answered.
    private func waitAnswer(_ r: Int, deadline: Int64) throws -> RealtimeAnswer {
        while true {
            if let a = answers.removeValue(forKey: r) { return a }
            guard connection != nil else { throw RTDBError(.unavailable, "\(target.display): the connection was lost before an answer") }
            let left = HTTPClient.left(deadline)
            if deadline != Int64.max && monotonicMillis() >= deadline {
                throw RTDBError(.timeout, "\(target.display) did not answer within \(timeoutMillis) ms")
            }
            _ = try pump(timeoutMillis: left)
        }
    }

    private func receive(_ c: WebSocketConnection, deadline: Int64) throws -> WebSocketConnection.Received {
        do {
            return try c.receive(timeoutMillis: HTTPClient.left(deadline))
        } catch {
            c.abandon()
            return .closed("the connection failed: \(HTTPClient.transportError(error, endpoint).message)")
        }
    }

    /// Reads what arrives within `timeoutMillis` (sending the keep-alive when due) and handles
    /// it. False when nothing came.
    @discardableResult
    public func pump(timeoutMillis: Int) throws -> Bool {
        guard let c = connection else { return false }
        let now = monotonicMillis()
        let dueIn = c.lastSent + keepAliveMillis - now
        if dueIn <= 0 {
            do { try c.sendKeepAlive(timeoutMillis: 30_000) } catch { drop("sending the keep-alive failed"); return true }
            return try pump(timeoutMillis: timeoutMillis)
        }
        let wait = timeoutMillis < 0 ? Int(dueIn) : min(timeoutMillis, Int(dueIn))
        switch try receive(c, deadline: monotonicMillis() + Int64(max(0, wait))) {
        case .idle:
            return false
        case .closed(let why):
            connection = nil
            drop(why)
            return true
        case .message(let bytes):
            try handle(bytes)
            return true
        }
    }

    /// The next event, reading the socket up to `timeoutMillis` (-1: no limit); nil when none.
    public func nextEvent(timeoutMillis: Int) throws -> RealtimeEvent? {
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        while events.isEmpty {
            if connection == nil { return nil }
            // -1 waits without limit; a deadline already passed (by however little) ends it.
            var left = -1
            if deadline != Int64.max {
                left = Int(deadline - monotonicMillis())
                if left <= 0 { return nil }
            }
            _ = try pump(timeoutMillis: left)
        }
        return events.removeFirst()
    }

    private func handle(_ bytes: [UInt8]) throws {
        guard let msg = try? RawJSON.parse(bytes), let t = msg["t"]?.string, let d = msg["d"] else { return }
        if t == "c" {
            switch d["t"]?.string {
            case "r":
                if let host = d["d"]?.string, let moved = movedEndpoint(host) { endpoint = moved }
                drop("the server asked to reconnect")
            case "s":
                shutdownReason = d["d"]?.string ?? "no reason given"
                drop("the server shut the connection down")
            default:
                break // pongs, errors and unknown controls are ignored
            }
            return
        }
        guard t == "d" else { return }
        if let r = d["r"]?.int {
            guard let b = d["b"], let s = b["s"]?.string else { return }
            let data = b["d"].map { Array(bytes[$0.range]) } ?? Array("null".utf8)
            if let i = pending.firstIndex(where: { $0.r == Int(r) }) {
                pending.remove(at: i)
                answers[Int(r)] = RealtimeAnswer(status: s, data: data)
            } else if let p = restoredListens.removeValue(forKey: Int(r)), s != "ok" {
                listens.removeAll { $0.path.same(as: p) }
                events.append(.listenRevoked(p))
            }
            return
        }
        guard let action = d["a"]?.string, let b = d["b"] else { return }
        let path = (b["p"]?.string).flatMap { try? Path($0) } ?? Path(validatedKeys: [])
        let tag = b["t"]?.int.map { Int($0) }
        switch action {
        case "d":
            guard let v = b["d"], let node = try? v.node(in: bytes) else { return }
            events.append(.put(path: path, value: node, tag: tag))
        case "m":
            guard let members = b["d"]?.members else { return }
            var children: [(path: Path, value: Node)] = []
            for m in members {
                guard let p = try? Path(m.key), let node = try? m.value.node(in: bytes) else { continue }
                children.append((p, node))
            }
            if !children.isEmpty { events.append(.merge(path: path, children: children, tag: tag)) }
        case "c":
            listens.removeAll { $0.path.same(as: path) }
            events.append(.listenRevoked(path))
        case "ac":
            // The credential expired or was revoked: reconnect with a fresh one (a service
            // account mints a new token; a fixed token is sent again and judged again).
            events.append(.authRevoked(b["d"]?.string ?? "the credential was revoked"))
            refreshCredential = true
            drop("the server revoked the credential")
        default:
            break // unknown pushes are ignored (§11)
        }
    }

    /// Set by an `ac` push: the next authentication mints a new service-account token.
    private var refreshCredential = false

    /// Listens re-sent by `restore`, by request number, until answered.
    private func sleepMillis(_ ms: Int) { usleep(UInt32(min(ms, 60_000)) * 1000) }

    private var restoredListens: [Int: Path] = [:]

    // MARK: operations

    static func pathText(_ path: Path) -> String {
        var b: [UInt8] = []
        JSONWriter.appendString(path.description, to: &b)
        return String(decoding: b, as: UTF8.self)
    }

    static func value(_ node: Node) -> String { JSONWriter.string(node, export: true) }

    static func children(_ entries: [(path: Path, value: Node)]) -> String {
        var b: [UInt8] = [UInt8(ascii: "{")]
        for (i, e) in entries.enumerated() {
            if i > 0 { b.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(e.path.unrooted, to: &b)
            b.append(UInt8(ascii: ":"))
            b += Array(value(e.value).utf8)
        }
        b.append(UInt8(ascii: "}"))
        return String(decoding: b, as: UTF8.self)
    }

    private func listenBody(_ path: Path, _ query: String?, _ tag: Int?) -> String {
        var s = #"{"p":"# + RealtimeClient.pathText(path)
        if let query, let tag { s += #","q":"# + query + #","t":\#(tag)"# }
        return s + #","h":""}"#
    }

    private func check(_ a: RealtimeAnswer, _ what: String) throws {
        switch a.status {
        case "ok": return
        case "permission_denied": throw RTDBError(.permissionDenied, "\(target.display) denied \(what): \(a.message)")
        case "datastale": throw RTDBError(.notCommitted, "\(target.display): \(what) met a changed value")
        case "too_big": throw RTDBError(.tooLarge, "\(target.display) refused \(what): \(a.message)")
        default: throw RTDBError(.unavailable, "\(target.display) refused \(what): \(a.status) \(a.message)")
        }
    }

    /// Overwrites `path` (`p`).
    public func put(_ path: Path, _ value: Node) throws {
        try check(call("p", #"{"p":\#(RealtimeClient.pathText(path)),"d":\#(RealtimeClient.value(value))}"#), "a write of \(path)")
    }

    /// Writes each child path below `path` (`m`), all or nothing.
    public func merge(_ path: Path, _ children: [(path: Path, value: Node)]) throws {
        try check(call("m", #"{"p":\#(RealtimeClient.pathText(path)),"d":\#(RealtimeClient.children(children))}"#), "an update of \(path)")
    }

    /// Reads `path` once (`g`).
    public func get(_ path: Path) throws -> Node {
        let a = try call("g", #"{"p":\#(RealtimeClient.pathText(path)),"q":{}}"#)
        try check(a, "a read of \(path)")
        do { return try JSONReader.parse(a.data) } catch {
            throw RTDBError(.unavailable, "\(target.display) answered a read of \(path) with data that is not JSON")
        }
    }

    /// Listens at `path`; `query` is a wire query object (§5) or nil for the whole location.
    /// The current value arrives as a `.put` event, then every change. Returns the tag of a
    /// query listen.
    @discardableResult
    public func listen(_ path: Path, query: String? = nil) throws -> Int? {
        var tag: Int? = nil
        if query != nil { tag = nextTag; nextTag += 1 }
        let body = listenBody(path, query, tag)
        let a = try call("q", body, resend: false)
        try check(a, "a listen at \(path)")
        listens.append((path, query, tag))
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
        var body = #"{"p":"# + RealtimeClient.pathText(path)
        if let q = l.query, let t = l.tag { body += #","q":"# + q + #","t":\#(t)"# }
        try check(call("n", body + "}", resend: false), "an unlisten at \(path)")
    }

    /// Registers a write of `value` at `path` (null: a removal) that the server makes when this
    /// connection goes away (`o`). Registered again on every new connection.
    public func onDisconnectPut(_ path: Path, _ value: Node) throws {
        try registerOnDisconnect("o", #"{"p":\#(RealtimeClient.pathText(path)),"d":\#(RealtimeClient.value(value))}"#, path)
    }

    /// Registers an update of child paths below `path` on disconnect (`om`).
    public func onDisconnectMerge(_ path: Path, _ children: [(path: Path, value: Node)]) throws {
        try registerOnDisconnect("om", #"{"p":\#(RealtimeClient.pathText(path)),"d":\#(RealtimeClient.children(children))}"#, path)
    }

    /// Cancels the writes registered at and below `path` (`oc`).
    public func onDisconnectCancel(_ path: Path) throws {
        let body = #"{"p":\#(RealtimeClient.pathText(path)),"d":null}"#
        try check(call("oc", body, resend: false), "cancelling on-disconnect writes at \(path)")
        onDisconnect.removeAll { op in
            guard let raw = try? RawJSON.parse(Array(op.body.utf8)), let p = raw["p"]?.string, let opPath = try? Path(p) else { return false }
            return path.contains(opPath)
        }
        onDisconnect.append(("oc", body))
    }

    private func registerOnDisconnect(_ action: String, _ body: String, _ path: Path) throws {
        try check(call(action, body, resend: false), "an on-disconnect write at \(path)")
        onDisconnect.append((action, body))
    }
}

extension RemoteDatabase {
    /// A realtime client for the same target, credential, certificates and timeout.
    public func realtimeClient() -> RealtimeClient {
        RealtimeClient(target: target, credential: credential,
                       timeoutSeconds: timeoutMillis < 0 ? 0 : Double(timeoutMillis) / 1000, caFile: caFile, clock: clock)
    }

    /// Whether the server answers over REST (offline.md §2.9's probe, for a target without the
    /// realtime protocol): `GET /.json?shallow=true&print=silent` answered with any status but
    /// 5xx and 429.
    public func answersREST() -> Bool {
        guard let r = try? send("GET", .root, params: [("shallow", "true"), ("print", "silent")], idempotent: true) else { return false }
        return r.status < 500 && r.status != 429
    }

    /// `/.info` from one realtime handshake (firebase-semantics §11): `connected` true and the
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
