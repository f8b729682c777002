import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a new thread with a stack of `bytes` (a secondary thread's usual 512 KB, far
/// less than the main thread's 8 MB) and waits for it; nil when the thread could not start.
/// Rules that fit there fit on any thread that checks them; rules that do not crash the test.
func onStack<T: Sendable>(of bytes: Int, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Mutex<T?>(nil)
    let job = Job { let value = body(); result.withLock { $0 = value } }
    var attributes = pthread_attr_t()
    guard pthread_attr_init(&attributes) == 0 else { return nil }
    defer { pthread_attr_destroy(&attributes) }
    guard pthread_attr_setstacksize(&attributes, bytes) == 0 else { return nil }
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t? = nil
    #endif
    let raw = Unmanaged.passRetained(job).toOpaque()
    let rc = pthread_create(&thread, &attributes, { raw in
        guard let raw else { return nil }
        Unmanaged<Job>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, raw)
    guard rc == 0 else {
        Unmanaged<Job>.fromOpaque(raw).release()
        return nil
    }
    #if canImport(Glibc)
    pthread_join(thread, nil)
    #else
    if let thread { pthread_join(thread, nil) }
    #endif
    return result.withLock { $0 }
}

/// What the new thread runs, handed to it through pthread_create's one pointer.
private final class Job: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// A secondary thread's stack on macOS, the smallest any thread here gets.
let smallStack = 512 * 1024
