import Synchronization
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One more loop of `rtdb serve`, on a thread of its own, so that parsing requests, answering
/// reads and sending answers use more than one core. The accepting loop (the writer, which
/// owns group commit) hands it sockets in turn; it answers their plain reads from handles of
/// its own on the same files (WAL lets them read the last commit while the writer commits),
/// sends their writes to the writer's batch and gives their answers once the batch is durable,
/// and moves to the writer a connection whose next request only the writer can serve (see
/// `ServerCore.needsWriter`). Rules, bodies in flight and the connection count are shared and
/// locked (RulesTable, BodiesInFlight, OpenConnections).
///
/// Ownership: the loop, its core and their connections are this thread's; other threads
/// reach it only through `FrontDoor`, which posts tasks to its loop.
final class FrontLoop {
    private let loop: EventLoop
    private let core: ServerCore
    private let door: FrontDoor
    /// When the door said stop (monotonic milliseconds).
    private var stopRequested: Int64? = nil

    /// A loop set up on the calling thread, started later by `FrontDoor.start`; the door is all
    /// the caller keeps of it.
    static func make(options: Server.Options, writer: LoopBound<ServerCore>, rest: RESTHandler,
                     namespaces: ServerNamespaces, bodies: BodiesInFlight, open: OpenConnections,
                     url: @escaping () -> String) throws -> FrontDoor {
        let loop = try EventLoop()
        let own = namespaces.detachedCopy()
        own.maxOpenFiles = namespaces.maxOpenFiles
        let core = try ServerCore(options: options, namespaces: own, rest: rest.detachedCopy(provider: own), loop: loop,
                                  url: url, bodies: bodies, open: open, writer: WriterLink(writer: writer))
        let front = FrontLoop(loop: loop, core: core, door: FrontDoor(handle: loop.handle))
        front.door.bind(front)
        return front.door
    }

    private init(loop: EventLoop, core: ServerCore, door: FrontDoor) {
        self.loop = loop
        self.core = core
        self.door = door
    }

    /// How long a stopping loop waits for clients to take what they are owed.
    static let closingMillis: Int64 = 3_000

    fileprivate func run() {
        loop.moveToCurrentThread()
        scheduleSweep()
        try? loop.run(maxWaitMillis: 1_000) { endOfTurn() }
        // Answers already owed go out before the sockets close.
        core.closeAll(within: FrontLoop.closingMillis) { loop.pause(millis: $0) }
    }

    /// A socket the writer accepted for this loop.
    func adopt(_ fd: Int32) {
        let link: SocketConnection
        do { link = try SocketConnection(io: .plain(fd), loop: loop) } catch {
            close(fd)
            core.open.closed()
            return
        }
        core.add(link)
    }

    func stop() { stopRequested = stopRequested ?? monotonicMillis() }

    private func endOfTurn() {
        if let since = stopRequested {
            // As the writer stops: answer what has arrived (with `Connection: close`), wait for
            // the writes sent to the writer, then end. A connection still moving there waits
            // for its client to take what it is owed, for as long as closing waits for anyone
            // (`closeAll`), and is closed with the rest after that.
            core.stopping = true
            core.serveQueued()
            if core.forwarded == 0 && (!core.awaitsWriter || monotonicMillis() - since >= FrontLoop.closingMillis) {
                loop.stop()
            }
            return
        }
        core.serveQueued()
        if core.hasDeferredWork { loop.schedule(after: 0) {} }
    }

    /// Once a second: idle connections and expired credentials (see ServerCore.sweep).
    private func scheduleSweep() {
        loop.schedule(after: 1_000) { [weak self] in
            guard let self else { return }
            core.sweep(now: monotonicMillis())
            scheduleSweep()
        }
    }
}

/// What other threads know of a `FrontLoop`: they give it sockets and tell it to stop, and
/// learn when it has finished (its connections closed, nothing left with the writer).
final class FrontDoor: Sendable {
    let handle: LoopHandle
    private let front = Locked<LoopBound<FrontLoop>?>(nil)
    let finished = Atomic<Bool>(false)
    /// Woken when the loop finishes (the writer's, which waits for it to stop).
    private let onFinish = Locked<LoopHandle?>(nil)

    init(handle: LoopHandle) {
        self.handle = handle
    }

    /// Runs the loop on a new thread until told to stop; false when no thread could be had
    /// (the door then counts as finished, and the writer serves every socket itself).
    func start() -> Bool {
        guard front.withLock({ $0 }) != nil else { return false }
        if startDetachedThread({ [self] in
            runLoop()
            // The loop, its core and its handles are gone by now, let go of on their own
            // thread (the core held the writer's through its link): only then is it finished.
            finish()
        }) == 0 { return true }
        finish()
        return false
    }

    /// The loop's thread: runs it until it has stopped and closed its connections, then lets go
    /// of it (the last reference, unless tasks were posted to it after it stopped).
    private func runLoop() {
        guard let bound = front.withLock({ $0 }) else { return }
        bound.movedToCurrentThread().run()
        front.withLock { $0 = nil }
    }

    /// Lets go of a loop that was never started (its server was made and not run): the loop
    /// and the door hold each other until then.
    func abandon() {
        front.withLock { $0 = nil }
    }

    fileprivate func bind(_ loop: FrontLoop) {
        let bound = LoopBound(loop, on: handle)
        front.withLock { $0 = bound }
    }

    /// Posts `task` to the loop; false when the loop is gone (finished or never started).
    @discardableResult
    private func post(_ task: @escaping @Sendable (FrontLoop) -> Void) -> Bool {
        guard let bound = front.withLock({ $0 }) else { return false }
        handle.execute { task(bound.value) }
        return true
    }

    /// Gives the loop an accepted socket; it is closed here if the loop is gone.
    func adopt(_ fd: Int32, open: OpenConnections) {
        if !post({ $0.adopt(fd) }) {
            close(fd)
            open.closed()
        }
    }

    /// Asks the loop to stop; `waker` is woken once it has.
    func stop(waking waker: LoopHandle) {
        onFinish.withLock { $0 = waker }
        post { $0.stop() }
    }

    private func finish() {
        // Nothing may reach the loop through the door any more.
        front.withLock { $0 = nil }
        finished.store(true, ordering: .releasing)
        onFinish.withLock { $0 }?.execute {}
    }
}
