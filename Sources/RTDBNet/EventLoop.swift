/// One thread's event loop (swift-nio's shape, without swift-nio): it knows descriptors and
/// timers and nothing of what they carry.
///
/// Each turn waits until a watched descriptor is ready or the next timer is due (never longer
/// than the turn's limit), runs the handler of every ready descriptor, then every timer that is
/// due, in deadline order, and the tasks other threads posted (`handle`). What a turn should
/// end with (a server's group commit) is the caller's: `run` calls `afterEachTurn` once per
/// turn. Handlers may watch, unwatch and schedule during a turn; a descriptor unwatched during a
/// turn gets no further call in it.
///
/// Ownership: everything here belongs to the thread that runs the loop (the one that made it
/// until `run` starts). Other threads reach it through `handle` only; debug builds check that
/// the loop's own methods are called on its thread.
public final class EventLoop {
    public typealias TimerID = TimerQueue<() -> Void>.ID

    private let poller: Poller
    private var handlers: [UInt64: any EventHandler] = [:]
    private var nextToken: UInt64 = 1
    private var timers = TimerQueue<() -> Void>()
    private let clock: () -> Int64
    private var stopRequested = false
    /// How other threads hand this loop work: its one cross-thread wake-up.
    public let handle: LoopHandle
    /// The poller's token for `handle`'s wake-up (never a handler's: tokens start at 1).
    private static let wakeToken: UInt64 = 0

    /// `clock` gives monotonic milliseconds (injected by tests that order timers).
    public init(clock: @escaping () -> Int64 = monotonicMillis) throws {
        self.poller = try Poller()
        self.clock = clock
        self.handle = try LoopHandle()
        try poller.add(handle.wakeup.readEnd, token: EventLoop.wakeToken)
    }

    deinit {
        poller.remove(handle.wakeup.readEnd)
    }

    /// Stops a debug build when called off the loop's thread.
    @inline(__always)
    public func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        handle.assertOnLoop(file: file, line: line)
    }

    public var now: Int64 { clock() }

    /// The number of descriptors watched.
    public var watchedCount: Int { handlers.count }

    /// Calls `handler` whenever `fd` is ready; returns the token that names the registration.
    /// The loop keeps the handler until `unwatch`.
    @discardableResult
    public func watch(_ fd: Int32, read: Bool = true, write: Bool = false, handler: any EventHandler) throws -> UInt64 {
        assertOnLoop()
        let token = nextToken
        try poller.add(fd, token: token, read: read, write: write)
        nextToken += 1
        handlers[token] = handler
        return token
    }

    /// `watch` with a closure for a handler.
    @discardableResult
    public func watch(_ fd: Int32, read: Bool = true, write: Bool = false,
                      _ handler: @escaping (Poller.Ready) -> Void) throws -> UInt64 {
        try watch(fd, read: read, write: write, handler: ClosureHandler(handler))
    }

    /// Changes what `fd` is watched for. The kernel refusing the change (it has no room for
    /// it, or the descriptor is not what the loop thinks) is thrown: the caller decides.
    public func modify(_ fd: Int32, token: UInt64, read: Bool, write: Bool) throws {
        assertOnLoop()
        guard handlers[token] != nil else { return }
        try poller.modify(fd, token: token, read: read, write: write)
    }

    /// Stops watching `fd` (before it is closed).
    public func unwatch(_ fd: Int32, token: UInt64) {
        assertOnLoop()
        guard handlers.removeValue(forKey: token) != nil else { return }
        poller.remove(fd)
    }

    /// Runs `action` once, `millis` from now.
    @discardableResult
    public func schedule(after millis: Int64, _ action: @escaping () -> Void) -> TimerID {
        assertOnLoop()
        return timers.schedule(at: clock() + millis, action)
    }

    public func cancel(_ timer: TimerID) {
        assertOnLoop()
        timers.cancel(timer)
    }

    /// One turn (see the type's comment); waits at most `maxWaitMillis`.
    public func turn(maxWaitMillis: Int64) throws {
        assertOnLoop()
        let wait = timers.waitMillis(now: clock(), limit: maxWaitMillis)
        let ready = try poller.wait(timeoutMillis: Int32(clamping: wait))
        var woken = false
        for r in ready {
            if r.token == EventLoop.wakeToken { woken = true; continue }
            handlers[r.token]?.ready(r)
        }
        if woken { runTasks() }
        for action in timers.popDue(now: clock()) { action() }
    }

    /// Runs the tasks other threads have posted through `handle`, in the order they came.
    public func runTasks() {
        assertOnLoop()
        for task in handle.take() { task() }
    }

    /// Sleeps until another thread posts a task (at most `millis`), then runs what was posted:
    /// a loop winding down that waits for its helpers' answers without serving descriptors.
    public func waitForTasks(millis: Int32) {
        assertOnLoop()
        handle.wakeup.wait(timeoutMillis: millis)
        runTasks()
    }

    /// The calling thread owns the loop from now on: a loop set up on one thread and run on
    /// another is handed over before anything else touches it there.
    public func moveToCurrentThread() {
        handle.claim()
    }

    /// Turns until `stop()`, calling `afterEachTurn` at the end of each. The calling thread
    /// owns the loop from here on.
    public func run(maxWaitMillis: Int64 = 1_000, afterEachTurn: () -> Void) throws {
        handle.claim()
        stopRequested = false
        while !stopRequested {
            try turn(maxWaitMillis: maxWaitMillis)
            afterEachTurn()
        }
    }

    /// Ends `run` after the current turn.
    public func stop() { stopRequested = true }

    /// Waits for the watched descriptors without running anything (a loop winding down that
    /// only wants to know when sockets can take more bytes).
    public func pause(millis: Int32) {
        assertOnLoop()
        let ready = (try? poller.wait(timeoutMillis: millis)) ?? []
        // A pending wake-up stays readable until drained: run what was posted.
        if ready.contains(where: { $0.token == EventLoop.wakeToken }) { runTasks() }
    }
}

/// What a watched descriptor's readiness is handed to.
public protocol EventHandler: AnyObject {
    func ready(_ r: Poller.Ready)
}

private final class ClosureHandler: EventHandler {
    let body: (Poller.Ready) -> Void
    init(_ body: @escaping (Poller.Ready) -> Void) { self.body = body }
    func ready(_ r: Poller.Ready) { body(r) }
}
