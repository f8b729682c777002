import RTDBCore
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `observe` over a REST event stream.
///
/// Invariant: `local` is the value at the streamed location as the events received so far
/// describe it. Every `put` and `patch` is applied to it and the result handed to `onChange`,
/// which diffs it against the previous one with Core's event generator, so the command prints
/// exactly what the embedded target prints for the same changes. The stream asks for
/// `format=export`, so values carry their priorities (a priority order and a priority change
/// show as they do on the file); a server that answers 400 to that is asked again without it. With a filtered `query` the request carries its parameters
/// and the server sends the window alone (children leaving it come as `null`), which the
/// event generator windows again to the same children. A `…/.priority` path streams its node
/// and passes on the node's priority.
///
/// On a dropped connection, a `cancel`, a stream silent for twice the keep-alive interval, or
/// a malformed event, the stream reconnects after a capped, jittered pause; the fresh first
/// `put` replaces `local` and the diff shows only real differences, so no event is duplicated
/// or lost. `auth_revoked` mints a new token for a service account, else ends with
/// `permission_denied`. A first connection that fails is an error; later failures are retried.
struct RemoteStream {
    let db: RemoteDatabase
    /// The watched path (possibly a `…/.priority`).
    let path: Path
    /// The location whose value `local` is: `path`, or the node of a priority path.
    let location: Path
    /// The request's parameters: `format=export`, and a filtered query's own.
    var params: [(name: String, value: String)]
    var local: Node = .null
    var delivered = false

    /// `query`, when given, must be filtered (`Query.isFiltered`); a priority path takes none.
    init(db: RemoteDatabase, path: Path, query: Query?) {
        self.db = db
        self.path = path
        location = path.node
        var params: [(name: String, value: String)] = [("format", "export")]
        if let query, !path.isPriority { params = RESTQuery.parameters(query) + params }
        self.params = params
    }

    /// What `onChange` gets: the location's value, or the node's priority for a priority path.
    var delivery: Node { path.isPriority ? local.priority : local }

    enum Change {
        case put(Path, Node)
        case patch(Path, [Node.Entry])
    }

    mutating func run(idle: () throws -> Bool, onChange: (Node, [String]?) throws -> Bool) throws {
        var connected = false
        var failures = 0
        var refresh = false
        var refreshed = false
        // Said once when a synchronised stream is lost and once when it is back, not per attempt.
        var lost = false
        var why = "the stream ended"
        let silence = Int64(db.keepAliveSeconds * 2000)
        while true {
            if failures > 0 {
                guard try pause(backoff(failures), idle: idle) else { return }
            }
            let head: HTTPResponseHead
            do {
                let spec = try db.spec("GET", location, params: params,
                                       headers: [("Accept", "text/event-stream"), ("Cache-Control", "no-cache")],
                                       idempotent: true, refresh: refresh)
                refresh = false
                head = try db.client.openStream(spec)
            } catch let e as RTDBError where e.code == .unavailable || e.code == .timeout {
                if !connected { throw e }
                failures += 1
                continue
            }
            if head.status != 200 {
                let body = drain()
                db.client.disconnect()
                // Firebase documents format=export for reads, not for streams: a server that
                // refuses it on a stream still streams the plain values (without priorities).
                if head.status == 400, let i = params.firstIndex(where: { $0.name == "format" }) {
                    params.remove(at: i)
                    continue
                }
                if head.status == 401, case .serviceAccount = db.credential, !refreshed {
                    refresh = true
                    refreshed = true
                    continue
                }
                if connected && (head.status == 429 || head.status >= 500) {
                    failures += 1
                    continue
                }
                throw RemoteErrors.error(HTTPClientResponse(head: head, body: body), target: db.target, what: "a watch of \(path)")
            }
            connected = true
            var decoder = SSEDecoder()
            var heard = monotonicMillis()
            var synced = false
            reading: while true {
                guard try idle() else { return }
                let chunk: HTTPClient.StreamRead
                do { chunk = try db.client.readBody(timeoutMillis: 100) } catch { why = "the connection failed"; break reading }
                let events: [SSEDecoder.Event]
                switch chunk {
                case .ended:
                    why = "the server closed the stream"
                    break reading
                case .idle:
                    if monotonicMillis() - heard > silence { why = "nothing arrived for \(silence / 1000) s"; break reading }
                    continue
                case .bytes(let b):
                    heard = monotonicMillis()
                    do { events = try decoder.feed(b) } catch { why = "the stream was malformed"; break reading }
                }
                for e in events {
                    switch e.event {
                    case "put", "patch":
                        guard let change = RemoteStream.parse(e) else { why = "the stream sent a malformed event"; break reading }
                        let keys = apply(change)
                        let first = !synced
                        if !synced {
                            synced = true
                            failures = 0
                            refreshed = false
                        }
                        delivered = true
                        if try !onChange(delivery, path.isPriority ? nil : keys) { return }
                        if first { db.onStreamState?(true) }
                        if first && lost {
                            lost = false
                            db.onStreamNotice?(.restored)
                        }
                    case "auth_revoked":
                        guard case .serviceAccount = db.credential else {
                            db.client.disconnect()
                            throw RTDBError(.permissionDenied, "\(db.target.display) revoked the credential of the watch of \(path)")
                        }
                        refresh = true
                        why = "the credential was revoked"
                        break reading
                    case "cancel":
                        why = "the server cancelled the stream"
                        break reading
                    default:
                        continue   // keep-alive, and anything newer than this client
                    }
                }
            }
            db.client.disconnect()
            if synced { db.onStreamState?(false) }
            if synced && !lost {
                lost = true
                db.onStreamNotice?(.lost(why))
            }
            failures += 1
        }
    }

    /// Applies a change to `local`; returns the child keys it may have touched (nil: any, as
    /// when the location's own priority changes).
    mutating func apply(_ change: Change) -> [String]? {
        switch change {
        case .put(let p, let data):
            local = local.setting(p, to: data)
            return p.node.isRoot ? nil : p.keys.first.map { [$0] }
        case .patch(let p, let entries):
            var keys: [String]? = []
            for e in entries {
                guard let rel = try? Path(e.key) else { continue }
                let full = p.appending(rel)
                local = local.setting(full, to: e.node)
                if full.node.isRoot { keys = nil } else if let k = full.keys.first, keys?.contains(k) == false { keys?.append(k) }
            }
            return p.isRoot ? keys : p.keys.first.map { [$0] }
        }
    }

    /// Reads what is left of an error answer's body (bounded by the request timeout).
    func drain() -> [UInt8] {
        var body: [UInt8] = []
        let deadline = db.client.deadlineNow
        while body.count < 1 << 20 {
            guard let r = try? db.client.readBody(timeoutMillis: HTTPClient.left(deadline)) else { break }
            switch r {
            case .bytes(let b): body += b
            case .idle: if deadline != Int64.max && monotonicMillis() >= deadline { return body }
            case .ended: return body
            }
        }
        return body
    }

    func backoff(_ failures: Int) -> Int {
        let (first, cap) = db.reconnectMillis
        let base = min(cap, first << min(failures - 1, 16))
        return Int.random(in: (base / 2)...max(base / 2, base))
    }

    /// Waits `millis`, asking `idle` at least every 100 ms; false when it asks to stop.
    func pause(_ millis: Int, idle: () throws -> Bool) throws -> Bool {
        let end = monotonicMillis() + Int64(millis)
        while monotonicMillis() < end {
            guard try idle() else { return false }
            usleep(UInt32(min(100, max(1, end - monotonicMillis()))) * 1000)
        }
        return try idle()
    }

    /// A `put` or `patch` event's path and data; nil when it is malformed.
    static func parse(_ e: SSEDecoder.Event) -> Change? {
        let bytes = Array(e.data.utf8)
        guard let members = JSONMembers.spans(bytes),
              let pathSpan = members.first(where: { $0.key == "path" })?.span,
              let dataSpan = members.first(where: { $0.key == "data" })?.span,
              case .string(let p)? = try? JSONReader.parse(Array(bytes[pathSpan])),
              let path = try? Path(p) else { return nil }
        let data = Array(bytes[dataSpan])
        if e.event == "put" {
            guard let node = try? JSONReader.parse(data) else { return nil }
            return .put(path, node)
        }
        guard let entries = (try? data.withUnsafeBufferPointer({ try JSONReader.parseEntries($0) })) ?? nil else { return nil }
        return .patch(path, entries)
    }
}

/// The raw byte ranges of a JSON object's top-level members (keys decoded), so one member can
/// be read with its own rules (a patch's data keeps its nulls). Nil when the text is not an
/// object; the member values are not validated here.
enum JSONMembers {
    static func spans(_ b: [UInt8]) -> [(key: String, span: Range<Int>)]? {
        var i = 0
        func space() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        /// Index just past the string starting at i.
        func stringEnd(_ from: Int) -> Int? {
            var j = from + 1
            while j < b.count {
                if b[j] == UInt8(ascii: "\\") { j += 2; continue }
                if b[j] == UInt8(ascii: "\"") { return j + 1 }
                j += 1
            }
            return nil
        }
        space()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var out: [(key: String, span: Range<Int>)] = []
        space()
        if i < b.count, b[i] == UInt8(ascii: "}") { return out }
        while i < b.count {
            space()
            guard i < b.count, b[i] == UInt8(ascii: "\""), let kEnd = stringEnd(i),
                  case .string(let key)? = try? JSONReader.parse(Array(b[i..<kEnd])) else { return nil }
            i = kEnd
            space()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            space()
            let start = i
            var depth = 0
            while i < b.count {
                let c = b[i]
                if c == UInt8(ascii: "\"") {
                    guard let e = stringEnd(i) else { return nil }
                    i = e
                    continue
                }
                if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") { depth += 1 }
                if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                    if depth == 0 { break }
                    depth -= 1
                }
                if c == UInt8(ascii: ","), depth == 0 { break }
                i += 1
            }
            var end = i
            while end > start, b[end - 1] == 0x20 || b[end - 1] == 0x0A || b[end - 1] == 0x0D || b[end - 1] == 0x09 { end -= 1 }
            if end == start { return nil }
            out.append((key, start..<end))
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: "}") { return out }
            i += 1   // ","
        }
        return nil
    }
}
