#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a new detached thread; pthread_create's result (0: started).
public func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
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
    if rc != 0 { Unmanaged<Box>.fromOpaque(box).release() }
    return rc
}
