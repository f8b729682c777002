import RTDBCore
import RTDBEngine
import RTDBNet
import RTDBWire

/// One client of the server: its connection and the protocol it speaks now. Every connection
/// starts with HTTP requests; a streaming GET makes it an event stream, a WebSocket upgrade a
/// realtime session, for good.
///
/// Requests run in arrival order: reads at once, each write in the group commit, and a
/// connection with a write in the batch runs nothing more until the write is answered (reads
/// never run inside an open batch: they would see writes that might still fail). What to
/// answer is the handlers' (HTTPHandler, SSEStream, RealtimeHandler); this type turns their
/// answers into bytes on its connection.
final class ServerConnection {
    enum Role {
        case http
        case stream(SSEStream)
        case realtime(RealtimeSession)
    }

    /// A request waiting to run, in arrival order.
    enum Work {
        case http(HTTPRequest)
        case realtime(RealtimeWork)
    }

    let link: SocketConnection
    /// Held while the connection is open: the core's table holds the connection until it
    /// closes, which ends the pair.
    let core: ServerCore
    var id: UInt64 { link.token }
    private(set) var role = Role.http
    /// The HTTP reader; emptied once the connection speaks something else.
    private var parser: HTTPRequestParser
    /// When the first byte of a request head still incomplete arrived (slow-loris check).
    private var headStarted: Int64? = nil
    /// The checks on the request still arriving (its head, its body's bytes, its pace).
    private var intake = RequestIntake()
    /// Requests in arrival order; those before `queueHead` have run (dropped in bulk, so taking
    /// the next one never moves the rest).
    private var queue: [Work] = []
    private var queueHead = 0
    /// Waiting for the answer of a write (the group commit) or of a large read (its thread):
    /// the next requests wait, so that answers keep their order.
    private var waitingForCommit = false
    /// In the core's list of connections with work to run.
    var scheduled = false
    /// Waiting to move to the writer's loop (a front loop's connection whose next request only
    /// the writer can serve): nothing more runs or is read here.
    private var moving = false

    init(link: SocketConnection, core: ServerCore) {
        self.link = link
        self.core = core
        self.parser = HTTPRequestParser(limits: core.options.limits)
    }

    // MARK: input

    /// The socket is readable: what it has is handled as it arrives.
    func readable() {
        // A client far ahead of its answers waits (its bytes stay in the socket) until the
        // queue shrinks (runQueued watches for input again). Called while paused, the socket
        // hung up or failed: read, to find out and close.
        if queueIsFull && !link.readingPaused {
            link.pauseReading(true)
            return
        }
        link.readAvailable(into: &core.readBuffer) { received($0) }
        if link.closed, let why = link.failure { core.log.tlsFailure(why) }
    }

    /// Bytes received: HTTP requests or WebSocket frames become queued work. Nothing more is
    /// read from a stream, nor from a connection that is closing.
    func received(_ bytes: UnsafeRawBufferPointer) {
        if link.closing { return }
        switch role {
        case .stream:
            return
        case .realtime(let session):
            session.frames.append(bytes)
            readFrames(session)
        case .http:
            parser.append(bytes)
            parseRequests()
            intake.pace.received(bytes.count, partial: parser.hasPartialRequest, now: link.lastInput)
            // A head must arrive whole within the idle timeout, however slowly it trickles.
            if parser.hasPartialRequest && parser.pendingHead == nil {
                if headStarted == nil { headStarted = link.lastInput }
            } else {
                headStarted = nil
            }
        }
    }

    private func parseRequests() {
        while !link.closing {
            do {
                guard let req = try parser.next() else { break }
                intake.requestRead()
                enqueue(.http(req))
                // Bytes after an upgrade request are WebSocket frames, not HTTP.
                if HTTPHandler.isUpgrade(req) { break }
            } catch let e as HTTPParseError {
                respondAndClose(HTTPResponse.error(e.status, e.message))
                return
            } catch {
                respondAndClose(HTTPResponse.error(400, "Bad request"))
                return
            }
        }
        guard admitPendingBody() else { return }
        if parser.needsContinue {
            // curl waits for this before sending a body over 1 KiB.
            link.send(HTTPResponse.continueHead)
            parser.continueSent()
        }
    }

    /// The request whose body is arriving, before more of it is read: refused from its head when
    /// its credential cannot let it through (judged once the requests before it have run, so
    /// their answers come first), and its body's bytes claimed against the total across
    /// connections (503 past it). False when it was refused and the connection is closing.
    private func admitPendingBody() -> Bool {
        let mayJudge = queueHead == queue.count && !waitingForCommit
        guard let refused = intake.admit(parser, mayJudge: mayJudge, core.http, core.bodies) else { return true }
        if let head = parser.pendingHead { core.log.request(head, status: refused.status, started: monotonicNanos()) }
        respondAndClose(refused)
        return false
    }

    /// The requests before a pending head have been answered: it is judged now, without
    /// waiting for more of its body to arrive.
    private func judgePendingHead() {
        guard case .http = role, !link.closing, intake.awaitsJudging(parser) else { return }
        _ = admitPendingBody()
    }

    /// Gives back the body bytes this connection claims (the connection ends).
    func releaseBody() { intake.release(core.bodies) }

    func enqueue(_ work: Work) {
        if queueHead > 0 && queueHead == queue.count { clearQueue() }
        queue.append(work)
        if !waitingForCommit { core.schedule(self) }
    }

    func clearQueue() {
        queue.removeAll()
        queueHead = 0
    }

    // MARK: running requests

    /// Requests one connection runs in one turn before others get theirs: a client that sends
    /// thousands at once is served in slices, and everyone else's requests wait for one slice
    /// at most.
    static let turnBudget = 64

    /// Work that could run now.
    var hasRunnableWork: Bool { queueHead < queue.count && !link.closed && !waitingForCommit && !moving }

    /// Too much waiting work: nothing more is read until it shrinks (the socket's buffer then
    /// fills and the client's sends wait: back-pressure instead of an unbounded queue).
    var queueIsFull: Bool { queue.count - queueHead >= 4_096 }

    /// Runs queued requests in order: reads at once, up to the first write, which goes to the
    /// group commit (the rest then waits for its answer); at most `turnBudget` of them. What it
    /// sends goes out in one write at the end.
    func runQueued() {
        link.hold()
        defer {
            link.release()
            if link.readingPaused && !queueIsFull && !moving { link.pauseReading(false) }
            judgePendingHead()
        }
        var budget = ServerConnection.turnBudget
        while hasRunnableWork && budget > 0 {
            budget -= 1
            let work = queue[queueHead]
            // (Asked once: a large read is answered away from the loop, by the writer's.)
            var large = false
            if case .http(let req) = work {
                large = HTTPHandler.kind(req) == .read && core.rest.isLargeRead(req)
                if core.writer != nil && (large || core.needsWriter(req)) {
                    moving = true
                    link.pauseReading(true)
                    core.moveToWriter(self)
                    return
                }
            }
            queueHead += 1
            if queueHead >= 1_024 && queueHead * 2 >= queue.count {
                queue.removeFirst(queueHead)   // what ran, dropped in bulk
                queueHead = 0
            }
            switch work {
            case .http(let req):
                let kind = HTTPHandler.kind(req)
                if kind == .write {
                    submit(work)
                    return
                }
                answerRead(req, upgrade: kind == .upgrade, large: large)
                if case .http = role, !link.closing {} else { clearQueue() }
                if case .stream = role { return }
            case .realtime(let w):
                if w.isWrite {
                    submit(work)
                    return
                }
                if case .realtime(let session) = role { send(core.realtime.answer(w, session, connection: id)) }
            }
        }
    }

    private func submit(_ work: Work) {
        waitingForCommit = true
        let started = monotonicNanos()
        if case .http(let req) = work, DetachedWrites.wants(req) {
            core.commit.submitDetached { [self] in
                core.runDetached(req) { response in
                    self.writeDone()
                    self.respond(req, response, started: started)
                }
            }
            return
        }
        if let writer = core.writer, case .http(let req) = work {
            core.forward(req, via: writer) { [self] response in
                writeDone()
                respond(req, response, started: started)
            }
            return
        }
        core.commit.submit { [self] in
            switch work {
            case .http(let req):
                let response = core.http.write(req)
                return { lost in
                    self.writeDone()
                    self.respond(req, lost.map(HTTPHandler.lost) ?? response, started: started)
                }
            case .realtime(let w):
                var answer: RealtimeResponse? = nil
                if case .realtime(let session) = role { answer = core.realtime.write(w, session) }
                return { lost in
                    self.writeDone()
                    guard let r = w.r else { return }
                    let response = lost.map { RealtimeResponse.failure(r, .failure, "the write could not be committed: \($0.message)") }
                        ?? answer ?? .failure(r, .failure, "no answer")
                    self.send([.response(response)])
                }
            }
        }
    }

    /// Moves this connection to the writer's loop (see `moving`): false while its client is
    /// still owed bytes, which go out first.
    func handOver(to writer: WriterLink) -> Bool {
        let requests = queue[queueHead...].compactMap { w -> HTTPRequest? in if case .http(let r) = w { r } else { nil } }
        // The claim on bodies in flight moves with the connection: closing it here must not
        // give it back.
        let kept = intake
        intake = RequestIntake()
        guard let fd = link.detach() else {
            intake = kept
            return false
        }
        clearQueue()
        writer.handOver(HandedConnection(fd: fd, parser: parser, requests: requests, intake: kept, headStarted: headStarted))
        return true
    }

    /// A connection moved here from a front loop (`handOver`) goes on where it was.
    func resume(_ handed: HandedConnection) {
        parser = handed.parser
        intake = handed.intake
        headStarted = handed.headStarted
        for r in handed.requests { enqueue(.http(r)) }
    }

    private func writeDone() {
        waitingForCommit = false
        if hasRunnableWork { core.schedule(self) }
    }

    private func answerRead(_ req: HTTPRequest, upgrade isUpgrade: Bool, large: Bool) {
        let started = monotonicNanos()
        if isUpgrade {
            upgrade(req, started: started)
            return
        }
        if large {
            // Answered by another thread; this connection's next requests wait for it.
            waitingForCommit = true
            core.runDetachedRead(req) { [self] response in
                respond(req, response, started: started)
                writeDone()
            }
            return
        }
        switch core.http.read(req) {
        case .response(let r): respond(req, r, started: started)
        case .stream(let s): openStream(req, s, started: started)
        }
    }

    /// Sends `response`; the connection closes after it when the client or the server says so.
    private func respond(_ req: HTTPRequest, _ response: HTTPResponse, started: UInt64) {
        let keepAlive = HTTPHandler.keepsAlive(req, stopping: core.stopping)
        if !keepAlive { clearQueue() }
        core.log.request(req, status: response.status, started: started)
        if response.body.count >= 65_536 && !HTTPResponse.bodyless(response.status) {
            // A large body goes out as it is, after its head: no copy of it behind the head.
            link.send(response.serializeHead(keepAlive: keepAlive))
            link.send(response.body, andClose: !keepAlive)
        } else {
            link.send(response.serialize(keepAlive: keepAlive), andClose: !keepAlive)
        }
        if keepAlive { judgePendingHead() }
    }

    private func respondAndClose(_ response: HTTPResponse) {
        clearQueue()
        link.send(response.serialize(keepAlive: false), andClose: true)
        link.flush()
    }

    private func openStream(_ req: HTTPRequest, _ s: StreamRequest, started: UInt64) {
        if let why = core.realtime.budget.refusal(file: core.namespaces.path(of: s.namespace), core.streams) {
            respond(req, HTTPResponse.error(503, why), started: started)
            return
        }
        do {
            let db = try core.namespaces.embedded(s.namespace)
            let sub = core.streams.subscriber(connection: id, kind: .sse(export: s.export))
            let file = core.namespaces.path(of: s.namespace)
            if try core.streams.opensLarge(db: db, path: s.path) {
                openStreamAway(req, s, sub, file: file, db: db, started: started)
                return
            }
            let first = try core.streams.open(sub, file: file, db: db, path: s.path, query: s.query)
            role = .stream(SSEStream(subscriber: sub, access: s.access))
            leaveHTTP()
            link.send(SSEStream.opening(first, export: s.export))
            core.log.request(req, status: 200, started: started)
        } catch {
            respond(req, ErrorStatus.response(error), started: started)
            if error is RTDBError { link.closeWhenFlushed() }
        }
    }

    /// A stream whose first value is large: read and rendered on another thread
    /// (`StreamOpener`); this connection's next requests wait, as for a large read.
    private func openStreamAway(_ req: HTTPRequest, _ s: StreamRequest, _ sub: StreamSubscriber, file: String,
                                db: EmbeddedDatabase, started: UInt64) {
        waitingForCommit = true
        do {
            try core.streams.openAway(sub, file: file, db: db, path: s.path, query: s.query, export: s.export,
                                      stillWanted: { [weak self] in self.map { !$0.link.closed && !$0.link.closing } ?? false }) { [self] result in
                waitingForCommit = false
                switch result {
                case .success(let opening):
                    role = .stream(SSEStream(subscriber: sub, access: s.access))
                    leaveHTTP()
                    link.send(opening)
                    core.log.request(req, status: 200, started: started)
                case .failure(let error):
                    respond(req, ErrorStatus.response(error), started: started)
                    link.closeWhenFlushed()
                }
            }
        } catch {
            waitingForCommit = false
            respond(req, ErrorStatus.response(error), started: started)
            if error is RTDBError { link.closeWhenFlushed() }
        }
    }

    private func upgrade(_ req: HTTPRequest, started: UInt64) {
        switch core.http.upgrade(req) {
        case .refuse(let response, let close):
            respond(req, response, started: started)
            if close { link.closeWhenFlushed() }
        case .accept(let key, let namespace, let host, let previous, let credentials):
            // A reconnecting client names its previous session: end that one now (its
            // onDisconnect writes run), so presence never waits for the old socket to time out.
            if let previous { core.session(previous)?.link.close() }
            let session = RealtimeSession(id: RealtimeSession.newID(), namespace: namespace, host: host, credentials: credentials)
            core.sessionStarted(session, on: self)
            role = .realtime(session)
            leaveHTTP()
            core.log.request(req, status: 101, started: started)
            link.send(HTTPHandler.switchingProtocols(key: key))
            send([core.realtime.hello(session)])
        }
    }

    /// The connection became a stream or a session: its unsent bytes are bounded from now on,
    /// and the HTTP reader's buffer is let go (nothing more is read as HTTP).
    private func leaveHTTP() {
        link.outputLimit = core.options.streamBufferLimit
        parser = HTTPRequestParser(limits: core.options.limits)
        headStarted = nil
        releaseBody()
        intake = RequestIntake()
    }

    // MARK: timers and rules

    /// After a commit or a rules change: streams and listens whose location is no longer
    /// readable end.
    func recheck() {
        switch role {
        case .stream(let s):
            // (Without rules `canStillRead` answers at once.)
            if s.access != nil, case .end(let bytes)? = s.recheck(core.rest.canStillRead) { endStream(s, bytes) }
        case .realtime(let session):
            if !session.access.isEmpty { send(core.realtime.recheck(session)) }
        case .http:
            break
        }
    }

    /// Once a second: keeps streams alive, revokes expired credentials, drops idle and
    /// half-sent requests (slow clients) and silent realtime clients.
    func sweep(now: Int64, seconds: Int64) {
        let idle = core.options.idleTimeoutMillis
        switch role {
        case .stream(let s):
            // A stream still being sent what it is owed is not quiet: no keep-alive behind it
            // (which would also count against its output limit).
            let quiet = link.pendingOutput > 0 ? 0 : now - link.lastOutput
            switch s.sweep(quietFor: quiet, keepAliveMillis: core.options.keepAliveMillis,
                           expired: { self.core.rest.expired($0, seconds) }) {
            case .send(let bytes)?: link.send(bytes)
            case .end(let bytes)?: endStream(s, bytes)
            case nil: break
            }
        case .realtime(let session):
            send(core.realtime.sweep(session, nowSeconds: seconds))
            if now - link.lastInput >= idle * 2 { link.close() }
        case .http:
            // A request that arrives too slowly is dropped, however regularly its bytes come.
            if link.readingPaused { intake.pace.restart(now: now) } else if intake.pace.tooSlow(now: now) {
                core.log.event("too_slow", [("connection", String(id))])
                respondAndClose(HTTPResponse.error(408, InputPace.refusal))
                return
            }
            if waitingForCommit { return }
            if let started = headStarted, now - started >= idle { link.close(); return }
            if now - link.lastInput >= idle && link.pendingOutput == 0 { link.close() }
            else if now - link.lastInput >= idle * 2 { link.close() }
        }
    }

    private func endStream(_ s: SSEStream, _ bytes: [UInt8]) {
        core.streams.close(s.subscriber)
        link.send(bytes, andClose: true)
    }
}
