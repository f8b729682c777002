#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readiness notification for many file descriptors (level-triggered). Each descriptor is
/// registered with a token the caller chooses; `wait` returns the tokens that are ready.
/// The kernel interface underneath is chosen once per process (`IOBackend`): epoll on Linux,
/// kqueue on macOS and the BSDs, poll(2) with RTDB_IO_BACKEND=posix or elsewhere.
public final class Poller {
    public struct Ready {
        public var token: UInt64
        public var readable: Bool
        public var writable: Bool
        /// The peer hung up or the descriptor is in error.
        public var closed: Bool
    }

    private let backend: any ReadinessBackend

    public convenience init(capacity: Int = 1024) throws {
        try self.init(backend: IOBackend.current, capacity: capacity)
    }

    /// A poller on a given back-end (tests run each one).
    public init(backend: IOBackend, capacity: Int = 1024) throws {
        self.backend = try backend.makeReadiness(capacity: capacity)
    }

    public func add(_ target: Int32, token: UInt64, read: Bool = true, write: Bool = false) throws {
        try backend.add(target, token: token, read: read, write: write)
    }

    public func modify(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        try backend.modify(target, token: token, read: read, write: write)
    }

    /// Stops watching `target` (closing a descriptor also does this).
    public func remove(_ target: Int32) {
        backend.remove(target)
    }

    /// Waits up to `timeoutMillis` (-1: without limit) for descriptors to become ready.
    public func wait(timeoutMillis: Int32) throws -> [Ready] {
        try backend.wait(timeoutMillis: timeoutMillis)
    }
}

public enum NetError: Error, CustomStringConvertible {
    case system(String, Int32)
    case address(String)
    case timeout(String)

    public var description: String {
        switch self {
        case .system(let call, let e): return "\(call): \(String(cString: strerror(e)))"
        case .address(let m): return m
        case .timeout(let m): return m
        }
    }

    public var errnoValue: Int32? {
        if case .system(_, let e) = self { return e }
        return nil
    }
}

/// Monotonic time in milliseconds.
public func monotonicMillis() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// Monotonic time in nanoseconds.
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
