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

/// `rtdb serve`: an event loop (RTDBNet's EventLoop) per core, on a thread each. The loop of
/// the thread that calls `run` accepts connections, owns group commit, streams and realtime
/// sessions (the writer); the others (`FrontLoop`) are handed sockets in turn, answer plain
/// reads themselves, send writes to the writer's batch and move to it the connections that
/// need it (see ServerCore). With TLS, or `loops: 1`, the writer's loop serves everyone.
///
/// The parts: each loop knows descriptors and timers; each accepted socket is a `SocketConnection`
/// (RTDBNet) that owns its bytes and its closing; `ServerConnection` runs what the client asks
/// through the protocol handlers (HTTPHandler and RESTHandler, SSEStream, RealtimeHandler);
/// `GroupCommit` makes the writes of a loop turn durable together; `ServerStreams` follows the
/// database files' change feeds, woken by inotify on the database folder, by this server's own
/// commits, and by a slow safety poll. This type binds the socket, wires the parts to the loop
/// and runs it until a signal.
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
        /// Firebase's size limits on one request (ServeLimits.swift); `maxWriteBytes` also caps
        /// the bodies the HTTP reader takes.
        public var sizes = ServeLimits() {
            didSet { limits.maxBodyBytes = sizes.maxWriteBytes }
        }
        /// Serve https with this certificate and key (nil: plain http).
        public var tls: TLSServerContext? = nil
        /// Request bodies held at once by unfinished requests, all connections together
        /// (BodiesInFlight): past it a request is answered 503.
        public var maxBodyBytesInFlight = 268_435_456
        /// Listens and streams open at once, all connections together (StreamBudget).
        public var maxListens = 100_000
        /// Database files streams and listens may follow at once (StreamBudget).
        public var maxFollowedFiles = 256
        /// The data viewer at `/.ui/` (ViewerRoutes); `rtdb serve --no-ui` turns it off.
        public var viewer = true
        /// Event loops serving requests (`rtdb serve --loops`): one per core by default, at
        /// most 16. TLS connections are all served by the first.
        public var loops = Server.defaultLoops
        public init() {}
    }

    public let options: Options
    public let namespaces: ServerNamespaces
    let core: ServerCore
    let loop: EventLoop
    let listener: TCPListener
    let signals: SignalPipe
    let watch: FolderWatch?
    private var listenerToken: UInt64 = 0
    private var stopSignal: Int32? = nil
    /// The database files may hold commits the streams have not seen.
    private var feedDirty = false
    private var pollTimer: EventLoop.TimerID? = nil
    /// Connections accepted at most: `options.maxConnections`, lowered to what the descriptor
    /// limit the process could get leaves room for (see `descriptorBudget`).
    public private(set) var maxConnections: Int
    /// Accepting waits while the process is out of descriptors (see `acceptFailed`).
    private var acceptPaused = false
    private var lastAcceptLog: Int64 = -1_000_000
    private var acceptFailures = 0
    /// The other loops (started by `run`), and which loop the next accepted socket goes to
    /// (`fronts.count`: this one).
    private var fronts: [FrontDoor] = []
    private var nextLoop = 0
    private var frontsStopping = false
    private var ran = false

    /// One loop per core the process may run on, at most 16.
    public static var defaultLoops: Int { max(1, min(16, onlineCores())) }

    /// Binds the socket (so the caller can print where it listens) without serving yet.
    public init(options: Options, namespaces: ServerNamespaces, watchFolder: String?,
                security: SecurityOptions = SecurityOptions()) throws {
        self.options = options
        self.namespaces = namespaces
        let rest = RESTHandler(provider: namespaces, secret: options.secret)
        rest.security = security
        rest.sizeLimits = options.sizes
        let listener = try TCPListener(host: options.host, port: options.port)
        self.listener = listener
        let tls = options.tls != nil
        let loop = try EventLoop()
        self.loop = loop
        let bodies = BodiesInFlight(cap: options.maxBodyBytesInFlight)
        let open = OpenConnections()
        self.core = try ServerCore(options: options, namespaces: namespaces, rest: rest, loop: loop,
                               url: { Server.url(listener, tls: tls) }, bodies: bodies, open: open)
        self.signals = try SignalPipe()
        watch = watchFolder.flatMap { try? FolderWatch(folder: $0) }
        // Connections, cached files, followed files and a reserve share the descriptors.
        let wanted = DescriptorPlan(connections: options.maxConnections, openFiles: namespaces.maxOpenFiles,
                                    followedFiles: options.maxFollowedFiles)
        let limit = raiseOpenFileLimit(to: wanted.descriptors)
        let plan = DescriptorPlan.plan(limit: limit, connections: options.maxConnections,
                                       openFiles: namespaces.maxOpenFiles, followedFiles: options.maxFollowedFiles)
        maxConnections = plan.connections
        let loops = tls ? 1 : max(1, min(16, options.loops))
        // Each loop keeps its own handles on the files: they share the plan's budget.
        namespaces.maxOpenFiles = max(1, plan.openFiles / loops)
        core.realtime.budget = StreamBudget(maxListens: options.maxListens, maxFollowedFiles: plan.followedFiles)
        // The loop's handlers hold the server weakly: the server owns the loop.
        rest.onRulesChanged = { [weak self] ns in
            guard let self else { return }
            self.core.recheck()
            self.createDeclaredIndexes(ns)
        }
        let writer = LoopBound(core, on: loop.handle)
        let address = Server.url(listener, tls: tls)
        for _ in 1..<loops {
            fronts.append(try FrontLoop.make(options: options, writer: writer, rest: rest, namespaces: namespaces,
                                             bodies: bodies, open: open, url: { address }))
        }
        listenerToken = try loop.watch(listener.fd) { [weak self] _ in self?.acceptAll() }
        try loop.watch(signals.readEnd) { [weak self] _ in
            guard let self else { return }
            if let s = self.signals.drain().first { self.stopSignal = s }
        }
        if let watch {
            try loop.watch(watch.fd) { [weak self] _ in
                watch.drain()
                self?.feedDirty = true
            }
        }
    }

    /// Creates the engine's indexes for the `.indexOn` declarations of the rules in force, in
    /// the namespace's file (in every open file when `namespace` is nil): rules answer the
    /// `orderBy` queries they declare from an index, as Firebase does. Index entries that
    /// cannot be made are logged and skipped.
    public func createDeclaredIndexes(_ namespace: String?) {
        let rest = core.rest
        let names = namespace.map { [$0] } ?? ((try? namespaces.namespaces()) ?? []) + [rest.defaultNamespace]
        var done: Set<String> = []
        for ns in names {
            guard let rules = rest.rules(for: ns) else { continue }
            guard let db = try? namespaces.embedded(ns), !done.contains(db.file) else { continue }
            done.insert(db.file)
            for d in rules.indexDeclarations {
                for child in d.children {
                    do {
                        _ = try db.addIndex(try IndexDefinition(location: d.location, child: child))
                    } catch {
                        core.log.event("index_error", [("location", d.location), ("child", child), ("message", "\(error)")])
                    }
                }
            }
        }
    }

    /// Asks a running server to stop as SIGTERM would (answer what arrived, close, return).
    /// Safe to call from another thread: it posts the request to the loop, which acts on it.
    public func stop() {
        let me = LoopBound(self, on: loop.handle)
        loop.handle.execute { me.value.stopSignal = SIGTERM }
    }

    /// The base URL clients use, e.g. `http://127.0.0.1:9000`.
    public var url: String { Server.url(listener, tls: options.tls != nil) }

    static func url(_ listener: TCPListener, tls: Bool) -> String {
        let host = listener.isIPv6 ? "[\(listener.address)]" : listener.address
        return (tls ? "https://" : "http://") + "\(host):\(listener.port)"
    }

    public var port: Int { listener.port }

    deinit {
        // Loops that ran let go of themselves when they finish.
        if !ran { for f in fronts { f.abandon() } }
    }

    /// Serves until SIGINT or SIGTERM; returns the signal that ended it.
    public func run() throws -> Int32 {
        loop.moveToCurrentThread()
        ran = true
        // A loop whose thread cannot be had is left out: this one takes its share.
        fronts = fronts.filter { $0.start() }
        scheduleSweep()
        try loop.run(maxWaitMillis: 1_000) { self.endOfTurn() }
        shutdown()
        return stopSignal ?? SIGTERM
    }

    /// After each turn's reads: the queued requests, then the streams when the files may hold
    /// commits they have not seen.
    private func endOfTurn() {
        if stopSignal != nil {
            // Stop accepting; answer what has already arrived, then close everything.
            loop.unwatch(listener.fd, token: listenerToken)
            core.stopping = true
            if !frontsStopping {
                frontsStopping = true
                for f in fronts { f.stop(waking: loop.handle) }
            }
            core.serveQueued()
            // The other loops finish first: until then they may send writes and connections
            // here (and any they sent before finishing is taken before this loop ends).
            if fronts.contains(where: { !$0.finished.load(ordering: .acquiring) }) || loop.handle.hasTasks { return }
            // A write running away from the loop is waited for (it may be acknowledged yet), and
            // so are answers still with the sender's thread (their connections are told after)
            // and large reads still being rendered on theirs (they arrived before the stop).
            if core.detached.isRunning || core.detachedReads.isRunning || !core.commit.isEmpty
                || core.sender?.isBusy == true { return }
            loop.stop()
            return
        }
        core.serveQueued()
        // A connection's slice ran out: the next turn must come without waiting.
        if core.hasDeferredWork { loop.schedule(after: 0) {} }
        followOtherProcesses(!core.streams.isEmpty)
        guard !core.streams.isEmpty else { feedDirty = false; return }
        // A slow safety poll while anything streams: a commit the folder watch missed.
        if pollTimer == nil {
            pollTimer = loop.schedule(after: 250) { [weak self] in
                self?.pollTimer = nil
                self?.feedDirty = true
            }
        }
        if feedDirty {
            feedDirty = false
            // Streams whose location is no longer readable end before any new event.
            core.recheck()
            core.pumpFeeds(core.streams.files)
        }
    }

    /// The folder watch runs only while something streams: it is there to bring other
    /// processes' commits to streams and listens, and while on, every write in the folder (this
    /// server's own) costs the kernel an event. Turned on, the feeds are read once: a commit made
    /// between a stream's first value and the watch is delivered now, not at the next one.
    private func followOtherProcesses(_ wanted: Bool) {
        guard let watch, watch.isActive != wanted else { return }
        watch.isActive = wanted
        if watch.isActive { feedDirty = true }
    }

    /// Once a second: idle connections, keep-alives, expired tokens, and the sessions of
    /// `rtdb session` whose process died (their writes run now; the feeds deliver them).
    private func scheduleSweep() {
        loop.schedule(after: 1_000) { [weak self] in
            guard let self else { return }
            self.core.sweep(now: monotonicMillis())
            // (Not while a detached write holds a file's lock, nor waiting for another process's:
            // the loop never waits for a lock.)
            if !self.core.commit.detachedRunning {
                for (_, db) in self.namespaces.openDatabases where ((try? db.reapDeadSessions(waitingForLock: false)) ?? 0) > 0 {
                    self.feedDirty = true
                }
            }
            self.scheduleSweep()
        }
    }

    func acceptAll() {
        while !acceptPaused {
            let fd: Int32?
            do { fd = try listener.accept() } catch {
                acceptFailed(error)
                return
            }
            guard let fd else { return }
            if core.open.count >= maxConnections {
                // Full: refuse the newcomer, leave everyone else alone.
                if options.tls == nil { Server.sayFull(fd) }
                close(fd)
                continue
            }
            core.open.opened()
            // In turn to each loop; this one's share stays here.
            nextLoop = nextLoop >= fronts.count ? 0 : nextLoop + 1
            if nextLoop < fronts.count {
                core.open.handedToFront()
                fronts[nextLoop].adopt(fd, open: core.open)
                continue
            }
            let io: ConnectionIO
            if let tls = options.tls {
                guard let session = tls.session(fd: fd) else { close(fd); core.open.closed(); continue }
                io = .tls(fd, session)
            } else {
                io = .plain(fd)
            }
            let link: SocketConnection
            do { link = try SocketConnection(io: io, loop: loop) } catch {
                close(fd)
                core.open.closed()
                continue
            }
            core.add(link)
        }
    }

    /// A connection past `maxConnections` is told so before it is closed (best effort, never
    /// waiting: the socket is new, so its buffer has room), so that its client sees a 503 rather
    /// than a reset or a silence.
    private static func sayFull(_ fd: Int32) {
        let body = #"{"error":"too many connections to this server: try again later"}"#
        let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        Array(text.utf8).withUnsafeBytes { _ = SocketIO.write(fd, $0) }
        #if canImport(Glibc)
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        #elseif canImport(Darwin)
        _ = Darwin.shutdown(fd, Int32(SHUT_WR))
        #endif
    }

    /// `accept` failed, most often for want of descriptors (EMFILE, ENFILE): the connection
    /// stays in the kernel's queue and the listener stays readable, so trying again at once
    /// would spin. Accepting stops for 100 ms instead (the clients already connected are served
    /// meanwhile, and may close and free descriptors), and the failure is logged at most once
    /// a second, with the number of failures since the last line.
    private func acceptFailed(_ error: Error) {
        acceptFailures += 1
        let now = monotonicMillis()
        if now - lastAcceptLog >= 1_000 {
            lastAcceptLog = now
            core.log.event("accept_paused", [("message", "\(error)"), ("failures", String(acceptFailures)),
                                             ("connections", String(core.connections.count))])
            acceptFailures = 0
        }
        acceptPaused = true
        loop.unwatch(listener.fd, token: listenerToken)
        loop.schedule(after: 100) { [weak self] in self?.resumeAccepting() }
    }

    /// Accepting again after `acceptFailed`'s pause. Watching the listener again can fail too
    /// (the kernel refuses the registration): that is said once and tried again later, so a
    /// server never stays deaf while it runs.
    private func resumeAccepting() {
        acceptPaused = false
        guard stopSignal == nil else { return }
        do {
            listenerToken = try loop.watch(listener.fd) { [weak self] _ in self?.acceptAll() }
        } catch {
            core.log.event("accept_paused", [("message", "watching the listener again: \(error)"),
                                             ("connections", String(core.connections.count))])
            acceptPaused = true
            loop.schedule(after: 1_000) { [weak self] in self?.resumeAccepting() }
        }
    }

    private func shutdown() {
        loop.unwatch(listener.fd, token: listenerToken)
        // Answers already owed (a committed write's included) go out before the sockets close.
        core.sender?.finish()
        core.closeAll(within: 3_000) { loop.pause(millis: $0) }
    }
}
