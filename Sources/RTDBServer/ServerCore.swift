import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the server's connections share: the handlers, the streams, group commit, the table of
/// connections and realtime sessions, and the running of queued requests at the end of each
/// loop turn.
///
/// Each turn, `serveQueued` runs every connection's queued reads at once and collects the
/// writes of all of them into one group commit; streams and listens get the commit's events
/// before the writers get their answers; then connections whose next request waited for a
/// write run again, until none has anything it can run.
///
/// A server has one such core per loop. The writer's (`writer == nil`) owns group commit,
/// streams and realtime sessions; a front loop's (FrontLoop.swift) answers plain reads itself
/// with handles of its own, sends its writes to the writer's batch (`WriterLink`), and moves to
/// the writer any connection whose next request only it can serve (`needsWriter`): its
/// streams, sessions and commit stay empty.
///
/// Ownership: everything here is the loop's (its thread runs every method). Connections are
/// held by `connections` while open; a connection's callbacks hold it weakly, and it holds the
/// core until it closes (closing removes it from the table, which ends both).
final class ServerCore {
    let options: Server.Options
    let log: ServerLog
    let rest: RESTHandler
    let http: HTTPHandler
    let realtime: RealtimeHandler
    let streams: ServerStreams
    let namespaces: ServerNamespaces
    let commit: GroupCommit
    /// Writes with huge bodies, run away from the loop.
    let detached: DetachedWrites
    /// Request bodies being received, bounded across connections.
    let bodies: BodiesInFlight
    /// Reads of large values, answered away from the loop.
    let detachedReads: DetachedReads
    /// Writes a commit's answers and events while the loop reads on (nil: no thread to be
    /// had, the loop writes them).
    let sender: OutputSender?
    private let loop: EventLoop
    /// Set while the server stops: answers carry `Connection: close`.
    var stopping = false
    /// The loop that owns group commit, when this one does not (a front loop's core).
    let writer: WriterLink?
    /// Connections open on all loops (`--max-connections`).
    let open: OpenConnections
    /// Writes sent to the writer whose answers have not come back.
    private(set) var forwarded = 0
    /// Connections waiting to move to the writer once what they are owed is sent.
    private var moving: [ServerConnection] = []
    private var moveTimer: EventLoop.TimerID? = nil

    private(set) var connections: [UInt64: ServerConnection] = [:]
    /// Realtime sessions by id, with their connection (a reconnecting client's `ls=`).
    private var sessions: [String: UInt64] = [:]
    /// Connections with work they can run, in the order they got it (and the list being run,
    /// kept to reuse its storage).
    private var runnable: [ServerConnection] = []
    private var running: [ServerConnection] = []
    /// Connections that used their slice (`ServerConnection.turnBudget`) with work left: they
    /// run first next turn, after the loop has read everyone else's input.
    private var later: [ServerConnection] = []
    /// Work is waiting for the next turn: the loop must not sleep.
    var hasDeferredWork: Bool { !later.isEmpty }
    /// Where every connection's reads land (one turn handles one read at a time).
    var readBuffer = [UInt8](repeating: 0, count: 65_536)

    /// `bodies` and `open` are shared by the server's loops; `writer` is nil on the loop that
    /// owns group commit.
    init(options: Server.Options, namespaces: ServerNamespaces, rest: RESTHandler, loop: EventLoop,
         url: @escaping () -> String, bodies: BodiesInFlight, open: OpenConnections, writer: WriterLink? = nil) throws {
        self.options = options
        self.loop = loop
        // A front loop writes its own answers: it has no commit to overlap them with.
        self.sender = writer == nil ? try? OutputSender(loop: loop) : nil
        self.namespaces = namespaces
        self.rest = rest
        self.writer = writer
        self.open = open
        self.log = ServerLog(requests: options.log)
        self.http = HTTPHandler(rest: rest, url: url, viewer: options.viewer)
        self.streams = ServerStreams()
        self.bodies = bodies
        self.realtime = RealtimeHandler(rest: rest, namespaces: namespaces, streams: streams, log: log)
        self.commit = GroupCommit(storage: namespaces)
        self.detached = DetachedWrites(loop: loop)
        self.detachedReads = DetachedReads(loop: loop)
        streams.deliver = { [weak self] subs, event in self?.deliver(subs, event) }
        streams.builder = EventBuilder(loop: loop, holding: commit)
        streams.opener = StreamOpener(loop: loop)
        namespaces.keepOpen = { [weak streams] f in streams?.follows(f) ?? false }
    }

    // MARK: connections

    /// A new connection (counted in `open` by whoever accepted it): it speaks HTTP until it
    /// becomes something else.
    @discardableResult
    func add(_ link: SocketConnection) -> ServerConnection {
        loop.assertOnLoop()
        let c = ServerConnection(link: link, core: self)
        connections[link.token] = c
        link.sender = sender
        // Weak: the table owns the connection; a callback that outlives it (the socket reports
        // input in the same readiness as the failed write that closed it) finds nothing.
        link.onReadable = { [weak c] in c?.readable() }
        link.onClose = { [weak self, weak c] in
            guard let self, let c else { return }
            self.closed(c)
        }
        return c
    }

    /// A connection closed: its stream or listens end; a realtime session's onDisconnect writes
    /// go to the next group commit.
    private func closed(_ c: ServerConnection) {
        if let why = c.link.readinessFailure {
            // Closed because the loop could not watch it as needed: said once, here.
            log.event("readiness_error", [("message", "\(why)")])
        }
        c.releaseBody()
        switch c.role {
        case .stream(let s):
            streams.close(s.subscriber)
        case .realtime(let session):
            sessions[session.id] = nil
            if let d = realtime.end(session) { commit.submitDisconnect { [weak self] in self?.realtime.runDisconnect(d) } }
        case .http:
            break
        }
        connections[c.id] = nil
        open.closed()
    }

    // MARK: loops

    /// Whether `request` must be served by the writer's loop: it opens a stream or a realtime
    /// session (they live there, with the commits they follow), or it is a write large enough
    /// to run on a thread of its own (the writer coordinates those with its batches); so must a
    /// large read (`RESTHandler.isLargeRead`, asked by the connection, which needs its answer
    /// anyway). So must a read of a file this loop cannot open now while the writer may hold it
    /// open (the process is out of descriptors: the writer's loop then answers, or waits as it
    /// would alone). Everything else a front loop answers, or sends to the writer's batch.
    func needsWriter(_ request: HTTPRequest) -> Bool {
        switch HTTPHandler.kind(request) {
        case .upgrade: return true
        case .write: return DetachedWrites.wants(request)
        case .read: return HTTPHandler.isStream(request) || !canRead(request)
        }
    }

    /// Whether this loop's handle of the file `request` reaches is open or opens now (nothing
    /// to open for a namespace it cannot name: that error is answered here).
    private func canRead(_ request: HTTPRequest) -> Bool {
        guard let ns = try? rest.namespace(request) else { return true }
        return namespaces.canRead(ns)
    }

    /// `c` moves to the writer's loop as soon as nothing is owed to its client (`moveWaiting`).
    func moveToWriter(_ c: ServerConnection) {
        moving.append(c)
    }

    /// Moves the connections that wait to (see `moveToWriter`); those still being sent what
    /// they are owed try again in a millisecond.
    private func moveWaiting() {
        guard !moving.isEmpty, let writer else { return }
        moving.removeAll { c in c.link.closed || c.handOver(to: writer) }
        if !moving.isEmpty && moveTimer == nil {
            moveTimer = loop.schedule(after: 1) { [weak self] in self?.moveTimer = nil }
        }
    }

    /// Runs `request`, a write a front loop sent, in the next batch; `done` gets its response
    /// once the batch is committed (a failed commit's answer when it was not).
    func commitForwarded(_ request: HTTPRequest, done: @escaping (HTTPResponse) -> Void) {
        loop.assertOnLoop()
        commit.submit { [self] in
            let response = http.write(request)
            return { lost in done(lost.map(HTTPHandler.lost) ?? response) }
        }
    }

    /// Sends `request`, a write, to the writer's batch (on a front loop); `answer` runs here
    /// with its response.
    func forward(_ request: HTTPRequest, via writer: WriterLink, answer: @escaping (HTTPResponse) -> Void) {
        forwarded += 1
        writer.write(request, answer: LoopBound({ [weak self] response in
            self?.forwarded -= 1
            answer(response)
        }, on: loop.handle))
    }

    /// A connection a front loop moved here: it goes on where it was (see HandedConnection).
    func adopt(_ handed: HandedConnection) {
        loop.assertOnLoop()
        open.opened()
        open.movedToWriter()
        let link: SocketConnection
        do { link = try SocketConnection(io: .plain(handed.fd), loop: loop) } catch {
            close(handed.fd)
            var intake = handed.intake
            intake.release(bodies)
            open.closed()
            return
        }
        add(link).resume(handed)
    }

    /// Whether anything this loop started elsewhere is still to come back: forwarded writes'
    /// answers, or connections still to move (a front loop stops only when none is).
    var awaitsWriter: Bool { forwarded > 0 || !moving.isEmpty }

    func sessionStarted(_ session: RealtimeSession, on c: ServerConnection) {
        sessions[session.id] = c.id
    }

    /// The connection of a live realtime session.
    func session(_ id: String) -> ServerConnection? {
        sessions[id].flatMap { connections[$0] }
    }

    /// `c` has work it can run at the end of this turn.
    func schedule(_ c: ServerConnection) {
        if c.scheduled { return }
        c.scheduled = true
        runnable.append(c)
    }

    // MARK: the end of a turn

    /// Answers queued requests: reads at once, writes in group commits, until no connection
    /// has anything it can run.
    func serveQueued() {
        loop.assertOnLoop()
        if !later.isEmpty {
            runnable.insert(contentsOf: later, at: 0)   // still marked scheduled
            later.removeAll(keepingCapacity: true)
        }
        while true {
            // The reads of this round share a snapshot per file; it ends before the commit.
            namespaces.sharingReads {
                while !runnable.isEmpty {
                    swap(&running, &runnable)
                    for c in running {
                        c.scheduled = false
                        c.runQueued()
                        if c.hasRunnableWork {
                            c.scheduled = true
                            later.append(c)
                        }
                    }
                    running.removeAll(keepingCapacity: true)
                }
            }
            if !commit.canRun {
                // (A front loop's commit never runs: its connections that wait to move, move.)
                moveWaiting()
                // Another process holds a file's write lock: the batch runs again after a pause.
                if let millis = commit.takeRetryDelay() { loop.schedule(after: millis) {} }
                return
            }
            gatheringAnswers { commit.run { files in committed(files) } }
        }
    }

    /// Runs `body` with what it sends on plain sockets handed to the sender's thread (written
    /// by the loop itself when there is no such thread).
    private func gatheringAnswers(_ body: () -> Void) {
        if let sender { sender.gather(body) } else { body() }
    }

    /// After a commit of `files`: their events go to streams and listens (before the writers
    /// are answered).
    func committed(_ files: [String]) {
        guard !streams.isEmpty && !files.isEmpty else { return }
        // Streams whose location is no longer readable end before any new event.
        recheck()
        pumpFeeds(files.filter { streams.follows($0) })
    }

    /// Starts `request`, a write with a huge body, on its own thread (see DetachedWrites);
    /// `answer` runs on the loop once it is committed, after its events went out.
    func runDetached(_ request: HTTPRequest, answer: @escaping (HTTPResponse) -> Void) {
        let file = (try? rest.namespace(request)).map { namespaces.path(of: $0) }
        let own = namespaces.detachedCopy()
        let job = DetachedWrites.Job(request: request, handler: rest.detachedCopy(provider: own), namespaces: own)
        detached.start(job) { [weak self] response in
            guard let self else { return }
            commit.detachedFinished()
            // The loop's handle of the file reads the new commit from here on.
            if let file { committed([file]) }
            answer(response)
        }
    }

    /// Starts `request`, a read of a large value, on its own thread (see DetachedReads);
    /// `answer` runs on the loop with its response.
    func runDetachedRead(_ request: HTTPRequest, answer: @escaping (HTTPResponse) -> Void) {
        let own = namespaces.detachedCopy()
        let handler = rest.detachedCopy(provider: own)
        handler.boundsReads = true
        detachedReads.start(DetachedWrites.Job(request: request, handler: handler, namespaces: own), finished: answer)
    }

    /// Sends the new commits of `files` to the streams and listens that follow them.
    func pumpFeeds(_ files: [String]) {
        for f in files {
            guard let db = namespaces.openDatabase(f) else { continue }
            do { try streams.pump(file: f, db: db) } catch {
                log.error("reading changes of \(f): \(error)")
            }
        }
    }

    /// Sends a commit's event to its subscribers, encoding it once per protocol and location
    /// (`PreparedEvent`, which may hold the bytes already). The connection table is read once.
    func deliver(_ subs: [StreamSubscriber], _ event: PreparedEvent) {
        var prepared = event
        let connections = self.connections
        for sub in subs {
            guard let c = connections[sub.connID] else { continue }
            prepared.each(for: sub.kind) { c.link.send($0) }
        }
    }

    /// Ends the streams and listens whose location their principal may no longer read (none
    /// while no rules are loaded anywhere: then everyone may read everything).
    func recheck() {
        guard rest.hasRules else { return }
        for c in Array(connections.values) { c.recheck() }
    }

    /// Once a second (see ServerConnection.sweep).
    func sweep(now: Int64) {
        let seconds = rest.clock() / 1000
        for c in Array(connections.values) { c.sweep(now: now, seconds: seconds) }
    }

    /// While the server stops: onDisconnect writes are not made (as in Firebase), and what is
    /// owed goes out for up to `millis` while clients read; then every connection closes.
    func closeAll(within millis: Int64, wait: (Int32) -> Void) {
        for c in connections.values { if case .realtime(let s) = c.role { s.disconnect = DisconnectWrites() } }
        let deadline = monotonicMillis() + millis
        while monotonicMillis() < deadline {
            let owing = connections.values.filter { $0.link.pendingOutput > 0 && !$0.link.closed }
            if owing.isEmpty { break }
            for c in owing { c.link.flush() }
            wait(20)
        }
        for c in Array(connections.values) { c.link.close() }
    }
}
