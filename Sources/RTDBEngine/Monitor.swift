#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value two threads share, reached only while its mutex is held; a thread that needs the
/// value in some state sleeps on its condition until another thread's change makes it so.
/// The mutex and the condition live on the heap, where they never move (a pthread object
/// must keep its address); every pthread call's result is checked. Shared state elsewhere is in
/// the standard library's `Mutex`, which has no condition to sleep on: this is the one wrapper
/// over pthread's, for the row writer, whose two threads each wait for the other.
final class Monitor<State: ~Copyable>: @unchecked Sendable {   // the state is only reached under the mutex
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    init(_ state: consuming State) {
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
    /// thread that waits: `body` may have made what it waits for true.
    func withLock<R>(when ready: (borrowing State) -> Bool = { _ in true },
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
