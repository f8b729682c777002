import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way into an event loop from another thread: a locked list of tasks and one
/// `Wakeup` the loop watches. Any thread may `execute` a task; the loop runs the tasks in the
/// order they came, on its own thread, during its next turn (swift-nio's `execute`).
///
/// The handle also knows which thread runs the loop, so loop-only code can check that it runs
/// there (`assertOnLoop`, compiled into debug builds only). Until the loop first runs, the
/// thread that made it owns it (a server is set up on one thread and run on another).
public final class LoopHandle: Sendable {
    private let tasks = Locked<[@Sendable () -> Void]>([])
    let wakeup: Wakeup
    /// `currentThreadID()` of the thread that owns the loop.
    private let owner = Atomic<UInt>(0)

    init() throws {
        wakeup = try Wakeup()
        owner.store(currentThreadID(), ordering: .releasing)
    }

    /// Runs `task` on the loop's thread during its next turn (from any thread, the loop's own
    /// included: then it runs in the next turn, not now).
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let first = tasks.withLock { list in
            list.append(task)
            return list.count == 1
        }
        // A list that was not empty has already woken the loop.
        if first { wakeup.wake() }
    }

    /// Tasks were posted that the loop has not taken yet.
    public var hasTasks: Bool { tasks.withLock { !$0.isEmpty } }

    /// The tasks posted so far, oldest first (the list is emptied).
    func take() -> [@Sendable () -> Void] {
        wakeup.drain()
        return tasks.withLock { list in
            let taken = list
            list = []
            return taken
        }
    }

    /// The calling thread runs the loop from now on.
    func claim() { owner.store(currentThreadID(), ordering: .releasing) }

    /// Whether the calling thread is the loop's.
    public var inLoop: Bool { owner.load(ordering: .acquiring) == currentThreadID() }

    /// Stops a debug build when loop-only state is touched from another thread.
    @inline(__always)
    public func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "touched off its event loop's thread", file: file, line: line)
    }
}

/// A loop-only value carried through code that may run elsewhere (a task posted from another
/// thread): it can be passed anywhere, but read only on its loop's thread, which debug builds
/// check (swift-nio's `NIOLoopBound`).
public struct LoopBound<Value>: @unchecked Sendable {
    // Sendable by construction: `value` is reachable only through `value`, which checks that
    // the caller is on the loop that owns it, so it is never touched by two threads.
    private let stored: Value
    public let handle: LoopHandle

    public init(_ value: Value, on handle: LoopHandle) {
        stored = value
        self.handle = handle
    }

    public var value: Value {
        handle.assertOnLoop()
        return stored
    }

    /// The value, for the thread that runs its loop from now on (`EventLoop.moveToCurrentThread`:
    /// a loop set up on one thread and started on a new one, which calls this first).
    public func movedToCurrentThread() -> Value {
        handle.claim()
        return stored
    }
}
