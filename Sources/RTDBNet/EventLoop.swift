/// One thread's event loop (swift-nio's shape, without swift-nio): it knows descriptors and
/// timers and nothing of what they carry.
///
/// Each turn waits until a watched descriptor is ready or the next timer is due (never longer
/// than the turn's limit), runs the handler of every ready descriptor, then every timer that is
/// due, in deadline order. What a turn should end with (a server's group commit) is the
/// caller's: `run` calls `afterEachTurn` once per turn. Handlers may watch, unwatch and
/// schedule during a turn; a descriptor unwatched during a turn gets no further call in it.
public final class EventLoop {
    public typealias TimerID = TimerQueue<() -> Void>.ID

    private let poller: Poller
    private var handlers: [UInt64: any EventHandler] = [:]
    private var nextToken: UInt64 = 1
    private var timers = TimerQueue<() -> Void>()
    private let clock: () -> Int64
    private var stopRequested = false
    /// Set by `OutputSender.gather`: plain connections hand their output to it.
    var outputBatch: OutputSender.Batch? = nil

    /// `clock` gives monotonic milliseconds (injected by tests that order timers).
    public init(clock: @escaping () -> Int64 = monotonicMillis) throws {
        self.poller = try Poller()
        self.clock = clock
    }

    public var now: Int64 { clock() }

    /// The number of descriptors watched.
    public var watchedCount: Int { handlers.count }

    /// Calls `handler` whenever `fd` is ready; returns the token that names the registration.
    /// The loop keeps the handler until `unwatch`.
    @discardableResult
    public func watch(_ fd: Int32, read: Bool = true, write: Bool = false, handler: any EventHandler) throws -> UInt64 {
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

    /// Changes what `fd` is watched for.
    public func modify(_ fd: Int32, token: UInt64, read: Bool, write: Bool) {
        guard handlers[token] != nil else { return }
        try? poller.modify(fd, token: token, read: read, write: write)
    }

    /// Stops watching `fd` (before it is closed).
    public func unwatch(_ fd: Int32, token: UInt64) {
        guard handlers.removeValue(forKey: token) != nil else { return }
        poller.remove(fd)
    }

    /// Runs `action` once, `millis` from now.
    @discardableResult
    public func schedule(after millis: Int64, _ action: @escaping () -> Void) -> TimerID {
        timers.schedule(at: clock() + millis, action)
    }

    public func cancel(_ timer: TimerID) {
        timers.cancel(timer)
    }

    /// One turn (see the type's comment); waits at most `maxWaitMillis`.
    public func turn(maxWaitMillis: Int64) throws {
        let wait = timers.waitMillis(now: clock(), limit: maxWaitMillis)
        let ready = try poller.wait(timeoutMillis: Int32(clamping: wait))
        for r in ready {
            handlers[r.token]?.ready(r)
        }
        for action in timers.popDue(now: clock()) { action() }
    }

    /// Turns until `stop()`, calling `afterEachTurn` at the end of each.
    public func run(maxWaitMillis: Int64 = 1_000, afterEachTurn: () -> Void) throws {
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
        _ = try? poller.wait(timeoutMillis: millis)
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
