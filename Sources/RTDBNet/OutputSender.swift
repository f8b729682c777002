#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes the answers of a stretch of loop work (a group commit's acknowledgements and events)
/// on a thread of its own, so that the loop reads and parses the next requests while the
/// kernel delivers the last answers. On loopback one small `send` also runs the receiver's side
/// of TCP and wakes the receiver: the largest single cost of answering a small write.
///
/// Inside `gather`, `SocketConnection.send` on a plain socket with nothing else queued (and this
/// sender as its `sender`) hands its bytes here instead of writing them; they go to the thread a
/// slice at a time, and the thread makes one non-blocking `send` per connection and posts back
/// to the loop (`LoopHandle.execute`) how much each took. The thread sees descriptors and bytes
/// only; the loop keeps the connections. Until its bytes come back a connection writes nothing
/// else (later output queues behind, so bytes leave in the order they were sent) and does not
/// close its descriptor (so the number cannot be reused under the thread); what the socket did
/// not take goes out from the loop, as any output. TLS connections never hand off: their
/// session is the loop's.
///
/// Ownership: this object is its loop's (debug builds check); the thread shares only `Shared`,
/// whose state is `Locked`.
public final class OutputSender {
    struct Item: Sendable {
        let fd: Int32
        let bytes: [UInt8]
    }

    /// A slice on its way: the sends, and who is told what each took (-1: the socket failed).
    struct Job: Sendable {
        let items: [Item]
        let done: @Sendable ([Int]) -> Void
    }

    /// What the thread and the loop share: the slices to write, in order, and the wake-up the
    /// thread sleeps on while there are none.
    private final class Shared: Sendable {
        struct State: Sendable {
            var queue: [Job] = []
            var stopping = false
        }

        let state = Locked(State())
        let work: Wakeup

        init() throws { work = try Wakeup() }

        func append(_ job: Job) {
            state.withLock { $0.queue.append(job) }
            work.wake()
        }

        func stop() {
            state.withLock { $0.stopping = true }
            work.wake()
        }

        /// The thread's body: write slices in order until stopped with nothing left.
        func run() {
            while true {
                let (job, stopping) = state.withLock { s -> (Job?, Bool) in
                    (s.queue.isEmpty ? nil : s.queue.removeFirst(), s.stopping)
                }
                guard let job else {
                    if stopping { return }
                    work.wait()
                    continue
                }
                var taken: [Int] = []
                taken.reserveCapacity(job.items.count)
                for item in job.items {
                    switch item.bytes.withUnsafeBytes({ SocketIO.write(item.fd, $0) }) {
                    case .done(let n): taken.append(n)
                    case .wouldBlock: taken.append(0)
                    case .closed, .failed: taken.append(-1)
                    }
                }
                job.done(taken)
            }
        }
    }

    private let shared: Shared
    /// The loop whose connections hand bytes here, and whose thread is told what was written.
    private let loop: EventLoop
    /// Gathered sends go to the thread in slices of this many, so that it starts writing while
    /// the loop still makes the rest (one write fanned out to 1,000 streams: its slowest
    /// subscriber is served about a fifth sooner than with one batch at the end).
    let slice: Int
    /// The connections of the slices with the thread, oldest first, in item order.
    private var inFlight: [[SocketConnection]] = []
    /// Inside `gather`: plain connections hand their output here.
    public private(set) var isGathering = false
    /// The slice being gathered: its connections and what each sent, in order.
    private var gatheredConnections: [SocketConnection] = []
    private var gatheredItems: [Item] = []

    /// Some slice has not come back yet.
    public var isBusy: Bool { !inFlight.isEmpty }

    /// Starts the thread; throws when no wake-up or thread can be had (then write on the loop).
    public init(loop: EventLoop, slice: Int = 64) throws {
        self.loop = loop
        self.slice = max(1, slice)
        let shared = try Shared()
        self.shared = shared
        let rc = startDetachedThread { shared.run() }
        if rc != 0 { throw NetError.system("pthread_create", rc) }
    }

    deinit {
        // Slices still with the thread hold this object (their reply does), so none is left
        // here: the thread ends once its queue is empty.
        shared.stop()
    }

    /// Runs `body` with the sends of this loop's plain connections gathered and handed to the
    /// thread (a slice at a time, the rest at the end). Not nested.
    public func gather(_ body: () -> Void) {
        loop.assertOnLoop()
        isGathering = true
        body()
        isGathering = false
        submit()
    }

    /// A connection's send during `gather`.
    func add(_ connection: SocketConnection, fd: Int32, _ bytes: [UInt8]) {
        gatheredConnections.append(connection)
        gatheredItems.append(Item(fd: fd, bytes: bytes))
        if gatheredItems.count >= slice { submit() }
    }

    /// Hands what was gathered so far to the thread.
    private func submit() {
        if gatheredItems.isEmpty { return }
        inFlight.append(gatheredConnections)
        let me = LoopBound(self, on: loop.handle)
        shared.append(Job(items: gatheredItems, done: { taken in
            me.handle.execute { me.value.handedBack(taken) }
        }))
        gatheredConnections = []
        gatheredItems = []
    }

    /// On the loop: the oldest slice came back; its connections learn what their socket took.
    private func handedBack(_ taken: [Int]) {
        let connections = inFlight.removeFirst()
        for (c, n) in zip(connections, taken) { c.handedBack(written: n) }
    }

    /// On the loop, while it stops: waits for the thread to write what it holds and hands it
    /// back (running whatever else other threads posted meanwhile).
    public func finish() {
        while !inFlight.isEmpty { loop.waitForTasks(millis: 100) }
    }
}
