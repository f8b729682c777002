import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBWire

/// Firebase's realtime protocol on `rtdb serve` (realtime-protocol.md): `GET /.ws?v=5&ns=NS`
/// upgrades to a WebSocket; requests run in order per connection, writes in the group commit;
/// listens share the streams' views; onDisconnect writes run, as one atomic update, when the
/// connection ends for any reason other than the server stopping.
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
                                      admin: RESTAuth.allows(req, secret: options.secret))
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
        var sse: [UInt8]? = nil
        var pushes: [[UInt8]: [[UInt8]]] = [:]
        for sub in subs {
            guard let c = conns[sub.connID] else { continue }
            switch sub.kind {
            case .sse:
                if sse == nil { sse = SSE.frame(event: event.name, data: event.data) }
                enqueue(c, sse ?? [])
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
            pendingDisconnects.append((session.namespace, session.id, session.disconnect.update))
            session.disconnect = DisconnectWrites()
        }
    }

    /// Inside the group commit: one session's onDisconnect writes, as one update at the root.
    func runDisconnect(_ d: (namespace: String, session: String, entries: [(path: Path, value: Node)])) {
        do {
            _ = try namespaces.embedded(d.namespace).update(.root, d.entries)
        } catch {
            logLine(#"{"event":"error","message":"# + quoted("onDisconnect writes of session \(d.session) failed: \(error)") + "}")
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
                return authenticate(session, r, body)
            case "unauth":
                if options.secret != nil { session.admin = false }
                return RealtimeMessage.ok(r, "\"unauthenticated\"")
            case "q", "l":
                guard session.admin else { return RealtimeMessage.failure(r, "permission_denied", "Permission denied") }
                let path = try Server.path(body)
                let query = try RealtimeQuery.parse(body["q"], source: source, priorityOrder: .priority)
                if let query { try query.validate() }
                let tag = body["t"]?.int
                let key = RealtimeSession.listenKey(path, tag)
                if let old = session.listens[key] { streams.close(old) }
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
                return RealtimeMessage.ok(r)
            case "g":
                guard session.admin else { return RealtimeMessage.failure(r, "permission_denied", "Permission denied") }
                let path = try Server.path(body)
                let db = try namespaces.embedded(session.namespace)
                let value: Node
                if let query = try RealtimeQuery.parse(body["q"], source: source, priorityOrder: .priority) {
                    try query.validate()
                    value = Node.object(normalizing: try db.query(path, query))
                } else {
                    value = try db.export(path)
                }
                return RealtimeMessage.ok(r, RealtimeMessage.json(value))
            case "o":
                guard session.admin else { return RealtimeMessage.failure(r, "permission_denied", "Permission denied") }
                let path = try Server.path(body)
                let value = try body["d"].map { $0.isNull ? Node.null : try $0.node(in: source) } ?? .null
                try WriteCheck.value(value, at: path)
                session.disconnect.set(path, value)
                return RealtimeMessage.ok(r)
            case "om":
                guard session.admin else { return RealtimeMessage.failure(r, "permission_denied", "Permission denied") }
                let path = try Server.path(body)
                let list = try WriteCheck.update(try Server.members(body, source), at: path)
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
        } catch let e as RealtimeQuery.Invalid {
            return RealtimeMessage.failure(r, "failure", e.message)
        } catch {
            return RealtimeMessage.failure(r, "failure", "\(error)")
        }
    }

    /// `auth` / `gauth`: with a secret, only the secret admits; without one every credential does
    /// (the emulator's open default), and a token's claims are echoed back unverified.
    private func authenticate(_ session: RealtimeSession, _ r: Int64, _ body: RawJSON) -> String {
        let cred = body["cred"]?.string ?? ""
        if let secret = options.secret {
            guard RESTAuth.constantTimeEqual(cred, secret) else {
                session.admin = false
                return RealtimeMessage.failure(r, "invalid_token", "Invalid claim")
            }
            session.admin = true
            return RealtimeMessage.ok(r, #"{"auth":null,"expires":null}"#)
        }
        session.admin = true
        return RealtimeMessage.ok(r, #"{"auth":"# + (Server.claims(ofToken: cred) ?? "null") + #","expires":null}"#)
    }

    /// The payload of a JWT (unverified), as JSON text, when it is one.
    static func claims(ofToken token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[1])),
              let raw = try? RawJSON.parse(bytes), raw.members != nil else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Inside the group commit: a set (`p`, compare-and-set with `h`) or a merge (`m`).
    func realtimeWrite(_ session: RealtimeSession, _ req: RealtimeRequest) -> String? {
        guard case .data(let r, let action, let body, let source) = req else { return nil }
        do {
            guard session.admin else { return RealtimeMessage.failure(r, "permission_denied", "Permission denied") }
            let path = try Server.path(body)
            let db = try namespaces.embedded(session.namespace)
            if action == "p" {
                let value = try body["d"].map { $0.isNull ? Node.null : try $0.node(in: source) } ?? .null
                try WriteCheck.value(value, at: path)
                if let h = body["h"]?.string {
                    // A transaction's put: only if the value is still the one the client hashed.
                    if case .stale = try db.set(path, value, if: { NodeHash.hash($0) == h }) {
                        return RealtimeMessage.failure(r, "datastale", "hash mismatch")
                    }
                } else {
                    _ = try db.set(path, value)
                }
            } else {
                let list = try WriteCheck.update(try Server.members(body, source), at: path)
                if !list.isEmpty { _ = try db.update(path, list) }
            }
            return RealtimeMessage.ok(r)
        } catch let e as RTDBError {
            return RealtimeMessage.failure(r, Server.status(e), e.message)
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
