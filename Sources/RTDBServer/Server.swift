import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBRules
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb serve`: one thread, one epoll loop, owning every socket.
///
/// Each loop turn reads what sockets have, answers every complete read request at once, and
/// collects the write requests of all connections into one group commit (one transaction and
/// one fsync per database file); their answers go out only after the COMMIT, so an
/// acknowledged write is on disk. A connection with a write in the batch waits for it before
/// its next pipelined request runs, and reads never run inside an open batch (they would see
/// writes that might still fail). Streams follow the files' change feeds (ServerStreams), woken
/// by inotify on the database folder, by this server's own commits, and by a slow safety poll.
public final class Server {
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 9000
        public var secret: String? = nil
        public var log = false
        public var maxConnections = 10_000
        public var idleTimeoutMillis: Int64 = 60_000
        public var keepAliveMillis: Int64 = 30_000
        /// Unsent stream bytes past which a client that does not read is dropped.
        public var streamBufferLimit = 16 << 20
        public var limits = HTTPLimits()
        /// Serve https with this certificate and key (nil: plain http).
        public var tls: TLSServerContext? = nil
        public init() {}
    }

    final class Conn {
        let fd: Int32
        /// The socket's reads and writes, straight or through TLS.
        let io: ConnectionIO
        let id: UInt64
        var parser: HTTPRequestParser
        var out: [UInt8] = []
        var outStart = 0
        var lastInput: Int64
        var lastOutput: Int64
        var closeWhenFlushed = false
        var watchingWritable = false
        var queued: [Work] = []
        var waitingForCommit = false
        /// The SSE stream this connection became, if any.
        var stream: StreamSubscriber?
        /// The realtime session this connection became (after a WebSocket upgrade), if any.
        var realtime: RealtimeSession?
        /// What the rules must keep granting for the stream to stay open (nil: not governed).
        var access: StreamAccess?
        var closed = false
        /// When the first byte of a request head still incomplete arrived (slow-loris check).
        var headStarted: Int64? = nil

        init(io: ConnectionIO, id: UInt64, limits: HTTPLimits, now: Int64) {
            self.fd = io.fd
            self.io = io
            self.id = id
            self.parser = HTTPRequestParser(limits: limits)
            self.lastInput = now
            self.lastOutput = now
        }

        var pendingOutput: Int { out.count - outStart }
    }

    /// A request waiting to run on its connection, in arrival order.
    enum Work {
        case http(HTTPRequest)
        case realtime(RealtimeRequest)

        var isWrite: Bool {
            switch self {
            case .http(let r): return Server.isWrite(r.method) && !Server.isStream(r)
            case .realtime(let r): return r.isWrite
            }
        }
    }

    /// A write in the current group commit, and the answer to send once it is durable.
    struct PendingWrite {
        let conn: Conn
        let work: Work
        var response: HTTPResponse? = nil
        var realtimeAnswer: String? = nil
        var files: [String] = []
        let started: UInt64
    }

    public let options: Options
    public let namespaces: ServerNamespaces
    let handler: RESTHandler
    let listener: TCPListener
    let poller: Poller
    let signals: SignalPipe
    var watch: FolderWatch?
    var conns: [UInt64: Conn] = [:]
    var byFD: [Int32: UInt64] = [:]
    var nextID: UInt64 = 16
    var streams: ServerStreams!
    var stopSignal: Int32? = nil
    var nextSubscriber: UInt64 = 1
    /// Realtime sessions by id (for a reconnecting client's `ls=`).
    var sessions: [String: UInt64] = [:]
    /// onDisconnect writes of sessions that ended, to run in the next group commit.
    var pendingDisconnects: [PendingDisconnect] = []

    /// A session's onDisconnect writes, with the credentials it last presented.
    typealias PendingDisconnect = (namespace: String, session: String, entries: [(path: Path, value: Node)], credentials: HTTPRequest)
    var readBuffer = [UInt8](repeating: 0, count: 65_536)

    static let listenerToken: UInt64 = 1
    static let signalToken: UInt64 = 2
    static let watchToken: UInt64 = 3
    static let stopToken: UInt64 = 4
    /// A pipe whose byte asks the loop to stop (`stop()`), as SIGTERM does.
    let stopPipe: (read: Int32, write: Int32)

    /// Binds the socket (so the caller can print where it listens) without serving yet.
    public init(options: Options, namespaces: ServerNamespaces, watchFolder: String?,
                security: SecurityOptions = SecurityOptions()) throws {
        self.options = options
        self.namespaces = namespaces
        self.handler = RESTHandler(provider: namespaces, secret: options.secret)
        handler.security = security
        self.listener = try TCPListener(host: options.host, port: options.port)
        self.poller = try Poller()
        self.signals = try SignalPipe()
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw NetError.system("pipe", errno) }
        setNonBlocking(fds[0])
        setNonBlocking(fds[1])
        stopPipe = (fds[0], fds[1])
        if let watchFolder { watch = try? FolderWatch(folder: watchFolder) }
        raiseOpenFileLimit(to: options.maxConnections + 64)
        streams = ServerStreams(deliver: { [unowned self] subs, event in self.deliver(subs, event) })
        handler.onRulesChanged = { [unowned self] ns in
            self.recheckStreams()
            self.recheckRealtimeListens()
            self.createDeclaredIndexes(ns)
        }
        try poller.add(listener.fd, token: Server.listenerToken)
        try poller.add(signals.readEnd, token: Server.signalToken)
        try poller.add(stopPipe.read, token: Server.stopToken)
        if let watch { try poller.add(watch.fd, token: Server.watchToken) }
    }

    /// Creates the engine's indexes for the `.indexOn` declarations of the rules in force, in
    /// the namespace's file (in every open file when `namespace` is nil): rules answer the
    /// `orderBy` queries they declare from an index, as Firebase does. Index entries that
    /// cannot be made are logged and skipped.
    public func createDeclaredIndexes(_ namespace: String?) {
        let names = namespace.map { [$0] } ?? ((try? namespaces.namespaces()) ?? []) + [handler.defaultNamespace]
        var done: Set<String> = []
        for ns in names {
            guard let rules = handler.rules(for: ns) else { continue }
            guard let db = try? namespaces.embedded(ns), !done.contains(db.file) else { continue }
            done.insert(db.file)
            for d in rules.indexDeclarations {
                for child in d.children {
                    do {
                        _ = try db.addIndex(try IndexDefinition(location: d.location, child: child))
                    } catch {
                        logLine(#"{"event":"index_error","location":"# + quoted(d.location) + #","child":"# + quoted(child)
                                + #","message":"# + quoted("\(error)") + "}")
                    }
                }
            }
        }
    }

    /// Asks a running server to stop as SIGTERM would (answer what arrived, close, return).
    /// Safe to call from another thread: it only writes one byte to a pipe.
    public func stop() {
        var b: UInt8 = 1
        _ = write(stopPipe.write, &b, 1)
    }

    /// The base URL clients use, e.g. `http://127.0.0.1:9000`.
    public var url: String {
        let host = listener.isIPv6 ? "[\(listener.address)]" : listener.address
        return (options.tls == nil ? "http://" : "https://") + "\(host):\(listener.port)"
    }

    public var port: Int { listener.port }

    /// Serves until SIGINT or SIGTERM; returns the signal that ended it.
    public func run() throws -> Int32 {
        var lastSweep = monotonicMillis()
        var lastPoll = lastSweep
        while stopSignal == nil {
            let timeout: Int32 = streams.isEmpty ? 1_000 : 250
            let ready = try poller.wait(timeoutMillis: timeout)
            var feedDirty = false
            for r in ready {
                switch r.token {
                case Server.listenerToken: acceptAll()
                case Server.signalToken:
                    if let s = signals.drain().first { stopSignal = s }
                case Server.stopToken:
                    stopSignal = SIGTERM
                case Server.watchToken:
                    watch?.drain()
                    feedDirty = true
                default:
                    guard let c = conns[r.token] else { continue }
                    let tlsWaitsForWritable = c.io.wantsWritable
                    if r.writable { flush(c) }
                    if r.readable || r.closed || (r.writable && tlsWaitsForWritable) { readFrom(c) }
                }
            }
            if stopSignal != nil {
                // Stop accepting; answer what has already arrived, then close everything.
                poller.remove(listener.fd)
                _ = serveQueued()
                break
            }
            let committedFiles = serveQueued()
            let now = monotonicMillis()
            if now - lastPoll >= 250 { feedDirty = true; lastPoll = now }
            _ = committedFiles
            if !streams.isEmpty && feedDirty {
                // Streams whose location is no longer readable end before any new event.
                recheckStreams()
                recheckRealtimeListens()
                pumpFeeds(streams.files)
            }
            if now - lastSweep >= 1_000 {
                lastSweep = now
                sweep(now)
                // Sessions of `rtdb session` whose process died: their writes run now, and the
                // feeds deliver them at the next poll.
                for (_, db) in namespaces.openDatabases where ((try? db.reapDeadSessions()) ?? 0) > 0 {
                    lastPoll = 0
                }
            }
        }
        shutdown()
        return stopSignal ?? SIGTERM
    }

    // MARK: connections

    func acceptAll() {
        while true {
            let fd: Int32?
            do { fd = try listener.accept() } catch {
                logLine(#"{"event":"error","message":"# + quoted("\(error)") + "}")
                return
            }
            guard let fd else { return }
            if conns.count >= options.maxConnections {
                // Full: refuse the newcomer, leave everyone else alone.
                close(fd)
                continue
            }
            let io: ConnectionIO
            if let tls = options.tls {
                guard let session = tls.session(fd: fd) else { close(fd); continue }
                io = .tls(fd, session)
            } else {
                io = .plain(fd)
            }
            let id = nextID
            nextID += 1
            let c = Conn(io: io, id: id, limits: options.limits, now: monotonicMillis())
            do { try poller.add(fd, token: id) } catch { close(fd); continue }
            conns[id] = c
            byFD[fd] = id
        }
    }

    func readFrom(_ c: Conn) {
        repeat {
            readOnce(c)
        } while !c.closed && c.io.hasBufferedInput   // TLS may hold bytes the socket will not signal
    }

    func readOnce(_ c: Conn) {
        if c.closed { return }
        let result = readBuffer.withUnsafeMutableBytes { c.io.read(into: $0) }
        switch result {
        case .done(let n):
            let now = monotonicMillis()
            c.lastInput = now
            if c.stream != nil || c.closeWhenFlushed { return }   // nothing more is read from them
            if let session = c.realtime {
                readBuffer.withUnsafeBytes { session.frames.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                readRealtime(c, session)
                return
            }
            readBuffer.withUnsafeBytes { c.parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            parseRequests(c)
            // A head must arrive whole within the idle timeout, however slowly it trickles.
            if c.parser.hasPartialRequest && c.parser.pendingHead == nil {
                if c.headStarted == nil { c.headStarted = now }
            } else {
                c.headStarted = nil
            }
        case .wouldBlock:
            // A TLS handshake that could not send all it had waits for the socket to drain.
            if c.io.wantsWritable { watchWritable(c, true) }
        case .closed:
            drop(c)
        case .failed:
            if options.log, case .tls(_, let session) = c.io, let why = session.failure {
                logLine(#"{"event":"tls_error","message":"# + quoted(why) + "}")
            }
            drop(c)
        }
    }

    func parseRequests(_ c: Conn) {
        while !c.closeWhenFlushed {
            do {
                guard let req = try c.parser.next() else { break }
                c.queued.append(.http(req))
                // Bytes after an upgrade request are WebSocket frames, not HTTP.
                if Server.isUpgrade(req) { break }
            } catch let e as HTTPParseError {
                respondAndClose(c, HTTPResponse.error(e.status, e.message))
                return
            } catch {
                respondAndClose(c, HTTPResponse.error(400, "Bad request"))
                return
            }
        }
        if c.parser.needsContinue {
            // curl waits for this before sending a body over 1 KiB.
            enqueue(c, HTTPResponse.continueHead)
            c.parser.continueSent()
        }
    }

    func respondAndClose(_ c: Conn, _ response: HTTPResponse) {
        c.queued.removeAll()
        enqueue(c, response.serialize(keepAlive: false))
        c.closeWhenFlushed = true
        flush(c)
    }

    func enqueue(_ c: Conn, _ bytes: [UInt8]) {
        if c.closed { return }
        if c.pendingOutput == 0 {
            // Try to write at once; keep only what the socket did not take.
            let r = bytes.withUnsafeBytes { c.io.write($0) }
            switch r {
            case .done(let n):
                if n == bytes.count { c.lastOutput = monotonicMillis(); afterFlush(c); return }
                c.out = Array(bytes[n...])
                c.outStart = 0
            case .wouldBlock:
                c.out = bytes
                c.outStart = 0
            case .closed, .failed:
                drop(c)
                return
            }
        } else {
            c.out.append(contentsOf: bytes)
        }
        if (c.stream != nil || c.realtime != nil) && c.pendingOutput > options.streamBufferLimit {
            // A stream client that stopped reading: drop it rather than grow without bound.
            drop(c)
            return
        }
        watchWritable(c, true)
    }

    func flush(_ c: Conn) {
        if c.closed { return }
        while c.pendingOutput > 0 {
            let r = c.out.withUnsafeBytes { c.io.write(UnsafeRawBufferPointer(rebasing: $0[c.outStart...])) }
            switch r {
            case .done(let n):
                c.outStart += n
                c.lastOutput = monotonicMillis()
            case .wouldBlock:
                watchWritable(c, true)
                return
            case .closed, .failed:
                drop(c)
                return
            }
        }
        c.out.removeAll(keepingCapacity: c.out.capacity <= 65_536)
        c.outStart = 0
        watchWritable(c, false)
        afterFlush(c)
    }

    func afterFlush(_ c: Conn) {
        if c.closeWhenFlushed && c.pendingOutput == 0 { drop(c) }
    }

    func watchWritable(_ c: Conn, _ on: Bool) {
        if c.closed || c.watchingWritable == on { return }
        c.watchingWritable = on
        try? poller.modify(c.fd, token: c.id, read: true, write: on)
    }

    func drop(_ c: Conn) {
        if c.closed { return }
        c.closed = true
        if let s = c.stream { streams.close(s) }
        if let session = c.realtime { endSession(session) }
        poller.remove(c.fd)
        c.io.close()
        conns[c.id] = nil
        byFD[c.fd] = nil
    }

    // MARK: requests

    static func isWrite(_ method: String) -> Bool {
        method != "GET" && method != "HEAD" && method != "OPTIONS"
    }

    static func isStream(_ r: HTTPRequest) -> Bool {
        r.method == "GET" && (r.header("accept")?.contains("text/event-stream") ?? false)
    }

    /// Answers queued requests: reads at once, writes in one group commit, until no connection
    /// has anything it can run. Streams and listens get a commit's events before the writers get
    /// their answers (a realtime client expects its own listens to see a write before its ack).
    /// Returns the files that were committed to.
    func serveQueued() -> [String] {
        var committed: [String] = []
        while true {
            var writes: [PendingWrite] = []
            for c in Array(conns.values) where !c.queued.isEmpty && !c.waitingForCommit && !c.closed {
                while let work = c.queued.first, !c.closed {
                    c.queued.removeFirst()
                    if work.isWrite {
                        c.waitingForCommit = true
                        writes.append(PendingWrite(conn: c, work: work, started: monotonicNanos()))
                        break
                    }
                    switch work {
                    case .http(let req):
                        answerRead(c, req)
                        if c.stream != nil || c.realtime != nil || c.closeWhenFlushed { c.queued.removeAll() }
                    case .realtime(let req):
                        if let session = c.realtime { answerRealtime(c, session, req) }
                    }
                    if c.stream != nil { break }
                }
            }
            let disconnects = pendingDisconnects
            pendingDisconnects = []
            if writes.isEmpty && disconnects.isEmpty { break }
            namespaces.beginBatch()
            for d in disconnects { runDisconnect(d) }
            var disconnectFiles = namespaces.touched
            for i in writes.indices {
                namespaces.startRequest()
                switch writes[i].work {
                case .http(let req):
                    if case .response(let r) = handler.handle(req) {
                        writes[i].response = r
                    } else {
                        writes[i].response = HTTPResponse.error(400, "Streaming needs GET")
                    }
                case .realtime(let req):
                    if let session = writes[i].conn.realtime { writes[i].realtimeAnswer = realtimeWrite(session, req) }
                }
                writes[i].files = namespaces.touched
            }
            let failed = namespaces.commitBatch()
            disconnectFiles.removeAll { failed[$0] != nil }
            var files = disconnectFiles
            for w in writes { for f in w.files where failed[f] == nil && !files.contains(f) { files.append(f) } }
            for f in files where !committed.contains(f) { committed.append(f) }
            if !streams.isEmpty && !files.isEmpty {
                // Streams whose location is no longer readable end before any new event.
                recheckStreams()
                recheckRealtimeListens()
                pumpFeeds(files.filter { streams.files.contains($0) })
            }
            for w in writes {
                w.conn.waitingForCommit = false
                let lost = w.files.first { failed[$0] != nil }.flatMap { failed[$0] }
                switch w.work {
                case .http(let req):
                    var response = w.response ?? HTTPResponse.error(500, "no answer")
                    if let e = lost { response = HTTPResponse.error(500, "The write could not be committed: \(e.message)") }
                    send(w.conn, req, response, started: w.started)
                case .realtime(let req):
                    guard case .data(let r, _, _, _) = req else { continue }
                    let answer = lost.map { RealtimeMessage.failure(r, "failure", "the write could not be committed: \($0.message)") }
                        ?? w.realtimeAnswer ?? RealtimeMessage.failure(r, "failure", "no answer")
                    sendRealtime(w.conn, answer)
                }
            }
        }
        return committed
    }

    func answerRead(_ c: Conn, _ req: HTTPRequest) {
        let started = monotonicNanos()
        if Server.isUpgrade(req) {
            upgrade(c, req, started: started)
            return
        }
        switch handler.handle(req) {
        case .response(let r):
            send(c, req, r, started: started)
        case .stream(let s):
            openStream(c, req, s, started: started)
        }
    }

    func openStream(_ c: Conn, _ req: HTTPRequest, _ s: StreamRequest, started: UInt64) {
        do {
            let db = try namespaces.embedded(s.namespace)
            let sub = StreamSubscriber(id: nextSubscriber, connID: c.id, kind: .sse(export: s.export))
            nextSubscriber += 1
            c.stream = sub
            c.access = s.access
            enqueue(c, SSE.head())
            try streams.open(sub, file: namespaces.path(of: s.namespace), db: db, path: s.path, query: s.query)
            log(req, status: 200, started: started)
        } catch let e as RTDBError {
            c.stream = nil
            send(c, req, HTTPResponse.error(e.code == .permissionDenied ? 401 : 500, e.message), started: started)
            c.closeWhenFlushed = true
            afterFlush(c)
        } catch {
            c.stream = nil
            send(c, req, HTTPResponse.error(500, "\(error)"), started: started)
        }
    }

    func send(_ c: Conn, _ req: HTTPRequest, _ response: HTTPResponse, started: UInt64) {
        let keep = req.keepAlive && stopSignal == nil
        if !keep { c.closeWhenFlushed = true; c.queued.removeAll() }
        log(req, status: response.status, started: started)
        enqueue(c, response.serialize(keepAlive: keep))
        afterFlush(c)
    }

    // MARK: streams and timers

    func pumpFeeds(_ files: [String]) {
        for f in files {
            guard let db = namespaces.openDatabases.first(where: { $0.file == f })?.db else { continue }
            do { try streams.pump(file: f, db: db) } catch {
                logLine(#"{"event":"error","message":"# + quoted("reading changes of \(f): \(error)") + "}")
            }
        }
    }

    /// Sends `cancel` to every rules-governed stream whose location its principal may no
    /// longer read (after a commit or a rules change), and closes it.
    func recheckStreams() {
        for c in Array(conns.values) where c.stream != nil && !c.closed {
            guard let access = c.access, !handler.canStillRead(access) else { continue }
            c.access = nil
            if let s = c.stream { streams.close(s) }
            enqueue(c, SSE.frame(event: "cancel", data: "\"Permission denied\""))
            c.closeWhenFlushed = true
            afterFlush(c)
        }
    }

    /// Drops idle and half-sent requests (slow clients), and keeps streams alive.
    func sweep(_ now: Int64) {
        let keepAlive = SSE.frame(event: "keep-alive", data: "null")
        let seconds = handler.clock() / 1000
        for c in Array(conns.values) {
            if c.stream != nil {
                if let access = c.access, Server.expired(access.principal, seconds, handler) {
                    // The ID token the stream was opened with expired: Firebase's answer.
                    c.access = nil
                    if let s = c.stream { streams.close(s) }
                    enqueue(c, SSE.frame(event: "auth_revoked", data: "credential is no longer valid"))
                    c.closeWhenFlushed = true
                    afterFlush(c)
                    continue
                }
                if now - c.lastOutput >= options.keepAliveMillis { enqueue(c, keepAlive) }
                continue
            }
            if let session = c.realtime {
                if handler.security.projectID != nil, let p = try? principal(session), Server.expired(p, seconds, handler) {
                    // The client refreshes its token and authenticates again (realtime-protocol §4.2).
                    session.credentials = HTTPRequest(method: "GET", target: "/")
                    sendRealtime(c, #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"Auth token is expired"}}}"#)
                }
                if now - c.lastInput >= options.idleTimeoutMillis * 2 { drop(c) }
                continue
            }
            if c.waitingForCommit { continue }
            if let started = c.headStarted, now - started >= options.idleTimeoutMillis { drop(c); continue }
            if now - c.lastInput >= options.idleTimeoutMillis && c.pendingOutput == 0 { drop(c) }
            else if now - c.lastInput >= options.idleTimeoutMillis * 2 { drop(c) }
        }
    }

    /// True when `principal` is a user whose verified ID token (`--project-id`) has expired.
    static func expired(_ principal: Principal, _ nowSeconds: Int64, _ handler: RESTHandler) -> Bool {
        guard handler.security.projectID != nil, case .user(let auth) = principal else { return false }
        switch auth.child("token").child("exp") {
        case .int(let exp): return exp <= nowSeconds
        case .double(let exp): return exp <= Double(nowSeconds)
        default: return false
        }
    }

    func shutdown() {
        poller.remove(listener.fd)
        // onDisconnect writes are not made when the server itself stops (as in Firebase).
        for c in conns.values { c.realtime?.disconnect = DisconnectWrites() }
        // Answers already owed (a committed write's included) go out before the sockets close:
        // keep flushing while clients read, for up to 3 seconds.
        let deadline = monotonicMillis() + 3_000
        while monotonicMillis() < deadline {
            let owing = conns.values.filter { $0.pendingOutput > 0 && !$0.closed }
            if owing.isEmpty { break }
            for c in owing { flush(c) }
            _ = try? poller.wait(timeoutMillis: 20)
        }
        for c in Array(conns.values) { drop(c) }
    }

    // MARK: logging

    func log(_ req: HTTPRequest, status: Int, started: UInt64) {
        guard options.log else { return }
        let ms = Double(monotonicNanos() - started) / 1e6
        // The path only: query strings can carry credentials.
        logLine(#"{"method":"# + quoted(req.method) + #","path":"# + quoted(req.rawPath)
                + #","status":\#(status),"ms":"# + JSONWriter.format((ms * 1000).rounded() / 1000) + "}")
    }

    func logLine(_ s: String) {
        var bytes = Array(s.utf8)
        bytes.append(10)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { p in write(2, p.baseAddress.map { $0 + off }, p.count - off) }
            if n <= 0 { break }
            off += n
        }
    }

    func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        JSONWriter.appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
