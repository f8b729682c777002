#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// State shared between threads, reached only inside `withLock`, with a condition to sleep on
/// until the state is ready. This is the project's one lock.
///
/// Why not the standard library's `Synchronization.Mutex`: on Linux its contended path locks
/// with `FUTEX_LOCK_PI`, where the kernel, not an atomic instruction the thread sanitizer sees,
/// hands the lock over; the sanitizer then reports every contended hand-over as a data race,
/// so a clean run would prove nothing (`make test` runs the threaded suites and a soak under
/// it). A pthread mutex is seen by the sanitizer, and it brings a condition variable, which
/// `Mutex` has not. The mutex and condition live at allocated addresses (a pthread object must
/// not move), and every return code is checked.
public final class Locked<State: ~Copyable> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    public init(_ state: consuming State) {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        precondition(pthread_cond_init(condition, nil) == 0, "pthread_cond_init failed")
        self.state = state
    }

    deinit {
        precondition(pthread_cond_destroy(condition) == 0, "pthread_cond_destroy failed")
        precondition(pthread_mutex_destroy(mutex) == 0, "pthread_mutex_destroy failed")
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the state once `ready` holds (sleeping until then), then wakes every
    /// thread that waits: `body` may have made what it waits for true. With no thread waiting
    /// the wake-up costs a load.
    public func withLock<R>(when ready: (borrowing State) -> Bool = { _ in true },
                            _ body: (inout State) throws -> R) rethrows -> R {
        precondition(pthread_mutex_lock(mutex) == 0, "pthread_mutex_lock failed")
        defer {
            precondition(pthread_cond_broadcast(condition) == 0, "pthread_cond_broadcast failed")
            precondition(pthread_mutex_unlock(mutex) == 0, "pthread_mutex_unlock failed")
        }
        while !ready(state) {
            precondition(pthread_cond_wait(condition, mutex) == 0, "pthread_cond_wait failed")
        }
        return try body(&state)
    }
}

/// Threads may share the lock when they may share what it holds: the state is only reached
/// under the mutex. (A state that is not `Sendable`, such as the row writer's statements, is
/// shared with the one thread that owns it next by passing the object itself.)
extension Locked: @unchecked Sendable where State: ~Copyable, State: Sendable {}
