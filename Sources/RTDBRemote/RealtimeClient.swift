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

/// A client of Firebase's realtime protocol for a `--url` target:
/// production Firebase over wss, the emulator or `rtdb serve` over ws or wss. Every message it
/// sends or reads goes through RTDBWire's `RealtimeMessage`; the operations that build
/// requests are in RealtimeClient+Operations.swift.
///
/// Blocking and single-threaded: calls send and then read the socket until their answer comes;
/// pushes met on the way are queued for `nextEvent`. Invariants:
/// * requests carry increasing `r` numbers for the client's whole life; an answer is matched to
///   its request by number;
/// * the client re-creates its state on every new connection: it names its previous
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
    var nextTag = 1
    /// Requests sent and not answered yet, in order, with whether they are sent again on a new
    /// connection.
    private var pending: [(request: RealtimeRequest, resend: Bool)] = []
    private var answers: [Int: RealtimeAnswer] = [:]
    private var events: [RealtimeEvent] = []
    /// Open listens, sent again on every new connection; `query` is the wire query object.
    var listens: [(path: Path, query: JSONText?, tag: Int?)] = []
    /// onDisconnect registrations (`o`, `om`, `oc`), sent again on every new connection.
    var onDisconnect: [RealtimeRequest.Action] = []
    /// Set by an `ac` push: the next authentication mints a new service-account token.
    private var refreshCredential = false
    /// Listens sent again by `restore`, by request number, until answered.
    private var restoredListens: [Int: Path] = [:]

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
        error.code == .unavailable && error.fact == .upgradeRefused
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
            switch try receive(c, deadline: deadline) {
            case .message(.control(.hello(let h))):
                hello(h, c)
            case .message(.control(.reset(let host))):
                c.close()
                resets += 1
                guard resets <= 5, let host, let moved = movedEndpoint(host) else {
                    throw RTDBError(.unavailable, "\(endpoint.host) sent an unusable reset")
                }
                endpoint = moved
                continue
            case .message(.control(.shutdown(let reason))):
                c.close()
                let reason = reason ?? "no reason given"
                shutdownReason = reason
                throw RTDBError(.unavailable, "\(target.display) shut the connection down: \(reason)")
            case .malformed(let e) where e.context == .control("h"):
                c.close(code: 1002)
                throw RTDBError(.unavailable, "\(endpoint.host) sent a malformed realtime hello")
            case .malformed(let e) where e.context == .control("r"):
                c.close()
                throw RTDBError(.unavailable, "\(endpoint.host) sent an unusable reset")
            case .message, .malformed:
                c.close(code: 1002)
                throw RTDBError(.unavailable, "\(endpoint.host) did not start with a realtime hello")
            case .idle:
                c.close()
                throw RTDBError(.timeout, "\(endpoint.host) sent no realtime hello in time")
            case .closed(let why):
                throw RTDBError(.unavailable, "\(endpoint.host): \(why) before its hello")
            }
            break
        }
        try authenticate(deadline: deadline)
        try restore()
    }

    private func hello(_ h: RealtimeHello, _ c: WebSocketConnection) {
        connection = c
        connected = true
        connectionCount += 1
        sessionID = h.session
        let offset = h.timestamp - clock()
        serverTimeOffset = offset
        // Production names the host that serves this database: later connections go there.
        if !target.emulator, let host = h.host, let moved = movedEndpoint(host) { endpoint = moved }
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
        let action: RealtimeRequest.Action
        switch credential {
        case .accessToken(let t): action = .gauth(credential: t, override: nil)
        case .auth(let t): action = .auth(credential: t)
        case .serviceAccount(let s):
            action = .gauth(credential: try s.accessToken(refresh: refreshCredential, timeoutMillis: timeoutMillis, caFile: caFile),
                            override: nil)
            refreshCredential = false
        case .none:
            guard target.emulator && !target.secure else { return }
            action = .gauth(credential: "owner", override: nil)
        }
        let request = newRequest(action)
        pending.append((request, false))
        try write(request)
        let answer = try waitAnswer(Int(request.r), deadline: deadline)
        if !answer.isOK {
            drop("the credential was refused")
            throw RTDBError(.permissionDenied, "\(target.display) refused the credential (\(credential)): \(answer.status) \(answer.message)")
        }
    }

    /// Re-sends listens, onDisconnect registrations and unanswered writes on a new connection.
    private func restore() throws {
        for l in listens {
            let request = newRequest(.listen(RealtimeClient.listen(l.path, l.query, l.tag)))
            restoredListens[Int(request.r)] = l.path
            try write(request)
        }
        for o in onDisconnect { try write(newRequest(o)) }
        let again = pending.filter { $0.resend }
        pending = []
        for p in again {
            pending.append(p)
            try write(p.request)
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

    /// The next request number for `action`.
    private func newRequest(_ action: RealtimeRequest.Action) -> RealtimeRequest {
        defer { nextNumber += 1 }
        return RealtimeRequest(r: Int64(nextNumber), action)
    }

    private func write(_ request: RealtimeRequest) throws {
        guard let c = connection else { throw RTDBError(.unavailable, "\(target.display) is not connected") }
        do {
            try c.send(.request(request), timeoutMillis: 30_000)
        } catch {
            drop("sending failed")
            throw HTTPClient.transportError(error, endpoint)
        }
    }

    /// Sends a request whose body the caller wrote (`action` and `body`, one JSON value) and
    /// waits for its answer; see `call(_:resend:)`.
    public func call(_ action: String, _ body: String, resend: Bool = true) throws -> RealtimeAnswer {
        let json: JSONText
        do { json = try JSONText(validating: body) } catch {
            throw RTDBError(.invalidJSON, "the body of a realtime \(action) request is not JSON: \(error)")
        }
        return try call(.raw(action: action, body: json), resend: resend)
    }

    /// Sends a request (connecting first if needed) and waits for its answer. A request that
    /// may be sent again (`resend`) survives a lost connection: the client reconnects and
    /// sends it again within the deadline.
    func call(_ action: RealtimeRequest.Action, resend: Bool = true) throws -> RealtimeAnswer {
        let deadline = deadlineNow
        // Once connected before, a lost connection is waited out (with back-off) within the
        // deadline; a first connection that fails is an error at once.
        if connectionCount > 0 && !connected { try reconnect(deadline: deadline) } else { try connect() }
        let request = newRequest(action)
        let r = Int(request.r)
        pending.append((request, resend))
        try write(request)
        while true {
            do {
                return try waitAnswer(r, deadline: deadline)
            } catch let e as RTDBError where e.code == .unavailable && resend && shutdownReason == nil && !connected {
                do { try reconnect(deadline: deadline, after: e) } catch {
                    pending.removeAll { $0.request.r == request.r }
                    throw error
                }
            } catch {
                pending.removeAll { $0.request.r == request.r }
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
                if shutdownReason != nil || TLSHook.isCertificateRefusal(e) { throw e }
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
        case .message(let m):
            handle(m)
            return true
        case .malformed:
            return true   // a message this client cannot read is ignored, as Firebase's clients ignore one
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

    private func handle(_ message: RealtimeMessage) {
        switch message {
        case .control(.reset(let host)):
            if let host, let moved = movedEndpoint(host) { endpoint = moved }
            drop("the server asked to reconnect")
        case .control(.shutdown(let reason)):
            shutdownReason = reason ?? "no reason given"
            drop("the server shut the connection down")
        case .control, .request:
            break // pongs, errors, unknown controls (and requests, which servers do not send) are ignored
        case .response(let answer):
            let r = Int(answer.r)
            if let i = pending.firstIndex(where: { $0.request.r == answer.r }) {
                pending.remove(at: i)
                answers[r] = RealtimeAnswer(status: answer.status.rawValue, data: answer.data.bytes)
            } else if let p = restoredListens.removeValue(forKey: r), answer.status != .ok {
                listens.removeAll { $0.path.same(as: p) }
                events.append(.listenRevoked(p))
            }
        case .push(let push):
            handle(push)
        }
    }

    private func handle(_ push: RealtimePush) {
        switch push {
        case .put(let path, let value, let tag):
            events.append(.put(path: path, value: value, tag: tag.map { Int($0) }))
        case .merge(let path, let children, let tag):
            if !children.isEmpty { events.append(.merge(path: path, children: children, tag: tag.map { Int($0) })) }
        case .listenRevoked(let path, _):
            listens.removeAll { $0.path.same(as: path) }
            events.append(.listenRevoked(path))
        case .authRevoked(_, let reason):
            // The credential expired or was revoked: reconnect with a fresh one (a service
            // account mints a new token; a fixed token is sent again and judged again).
            events.append(.authRevoked(reason ?? "the credential was revoked"))
            refreshCredential = true
            drop("the server revoked the credential")
        case .appCheckRevoked, .securityDebug, .other:
            break // nothing this client acts on
        }
    }

    private func sleepMillis(_ ms: Int) { usleep(UInt32(min(ms, 60_000)) * 1000) }
}
