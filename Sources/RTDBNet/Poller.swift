import CLinux
import Glibc

/// Readiness notification for many file descriptors (epoll, level-triggered). Each descriptor is
/// registered with a token the caller chooses; `wait` returns the tokens that are ready.
public final class Poller {
    public struct Ready {
        public var token: UInt64
        public var readable: Bool
        public var writable: Bool
        /// The peer hung up or the descriptor is in error.
        public var closed: Bool
    }

    private let fd: Int32
    private var buffer: [epoll_event]

    public init(capacity: Int = 1024) throws {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        if fd < 0 { throw NetError.system("epoll_create1", errno) }
        buffer = Array(repeating: epoll_event(), count: capacity)
    }

    deinit { close(fd) }

    private func control(_ op: Int32, _ target: Int32, _ token: UInt64, read: Bool, write: Bool) throws {
        var ev = epoll_event()
        var mask: UInt32 = EPOLLRDHUP.rawValue
        if read { mask |= EPOLLIN.rawValue }
        if write { mask |= EPOLLOUT.rawValue }
        ev.events = mask
        ev.data.u64 = token
        if epoll_ctl(fd, op, target, &ev) != 0 { throw NetError.system("epoll_ctl", errno) }
    }

    public func add(_ target: Int32, token: UInt64, read: Bool = true, write: Bool = false) throws {
        try control(EPOLL_CTL_ADD, target, token, read: read, write: write)
    }

    public func modify(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        try control(EPOLL_CTL_MOD, target, token, read: read, write: write)
    }

    /// Stops watching `target` (closing a descriptor also does this).
    public func remove(_ target: Int32) {
        var ev = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, target, &ev)
    }

    /// Waits up to `timeoutMillis` (-1: without limit) for descriptors to become ready.
    public func wait(timeoutMillis: Int32) throws -> [Ready] {
        let n = buffer.withUnsafeMutableBufferPointer { epoll_wait(fd, $0.baseAddress, Int32($0.count), timeoutMillis) }
        if n < 0 {
            if errno == EINTR { return [] }
            throw NetError.system("epoll_wait", errno)
        }
        var out: [Ready] = []
        out.reserveCapacity(Int(n))
        for i in 0..<Int(n) {
            let e = buffer[i].events
            out.append(Ready(token: buffer[i].data.u64,
                             readable: e & EPOLLIN.rawValue != 0,
                             writable: e & EPOLLOUT.rawValue != 0,
                             closed: e & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0))
        }
        return out
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
