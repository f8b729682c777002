#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a new detached thread; pthread_create's result (0: started). `body` is sent:
/// the caller keeps no reference to what it captures, so the thread owns it alone (what it
/// shares with others must be Sendable). With `orHere`, a thread that cannot be had leaves
/// `body` to run on the calling thread before this returns.
public func startDetachedThread(orHere: Bool = false, _ body: sending @escaping () -> Void) -> Int32 {
    final class Box {
        let body: () -> Void
        init(_ body: sending @escaping () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    // The main thread's size, on every system (macOS gives other threads 512 KB): a detached
    // write checks rules as the loop does, with the same room.
    pthread_attr_setstacksize(&attributes, detachedThreadStackBytes)
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t? = nil
    #endif
    let rc = pthread_create(&thread, &attributes, { raw in
        #if canImport(Glibc)
        guard let raw else { return nil }
        #endif
        Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, box)
    if rc != 0 {
        let unstarted = Unmanaged<Box>.fromOpaque(box).takeRetainedValue()
        if orHere { unstarted.body() }
    }
    return rc
}

/// The stack of a thread `startDetachedThread` starts.
public let detachedThreadStackBytes = 8 << 20
