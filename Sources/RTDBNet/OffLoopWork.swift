/// Work that runs on threads of its own while a loop goes on, each result handed back to the
/// loop: huge writes, large reads and the events of huge writes in `rtdb serve`. One place for
/// how that is done: the work is a `@Sendable` closure the thread owns; what the loop must run
/// when it ends (`done`, which may touch loop-only objects) stays here on the loop, keyed by
/// the work's number, and the thread posts only its result back (`LoopHandle.execute`).
///
/// At most `maxRunning` run at once; more wait here, in order, and start as others end. A
/// thread that cannot be had runs the work on the loop rather than not at all.
public final class OffLoopWork<Result: Sendable> {
    private let loop: EventLoop
    private let maxRunning: Int
    private var finished: [UInt64: (Result) -> Void] = [:]
    private var waiting: [(work: @Sendable () -> Result, done: (Result) -> Void)] = []
    private var nextNumber: UInt64 = 0

    public init(loop: EventLoop, maxRunning: Int = .max) {
        self.loop = loop
        self.maxRunning = max(1, maxRunning)
    }

    /// Work started or waiting.
    public var isRunning: Bool { !finished.isEmpty || !waiting.isEmpty }

    /// Runs `work` on a thread of its own (now, or when a place frees); `done` runs on the loop
    /// with its result.
    public func start(_ work: @escaping @Sendable () -> Result, done: @escaping (Result) -> Void) {
        loop.assertOnLoop()
        guard finished.count < maxRunning else {
            waiting.append((work, done))
            return
        }
        let number = nextNumber
        nextNumber += 1
        finished[number] = done
        let me = LoopBound(self, on: loop.handle)
        _ = startDetachedThread(orHere: true) {
            let result = work()
            me.handle.execute { me.value.end(number, result) }
        }
    }

    /// On the loop: a piece of work ended; the next waiting one takes its place.
    private func end(_ number: UInt64, _ result: Result) {
        finished.removeValue(forKey: number)?(result)
        if !waiting.isEmpty {
            let next = waiting.removeFirst()
            start(next.work, done: next.done)
        }
    }
}
