#if os(Linux)
import CLinux
import Glibc

/// Readiness on Linux: one epoll instance, level-triggered, the token in the event's data.
final class EpollReadiness: ReadinessBackend {
    private let fd: Int32
    private var buffer: [epoll_event]

    init(capacity: Int) throws {
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

    func add(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        try control(EPOLL_CTL_ADD, target, token, read: read, write: write)
    }

    func modify(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        try control(EPOLL_CTL_MOD, target, token, read: read, write: write)
    }

    func remove(_ target: Int32) {
        var ev = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, target, &ev)
    }

    func wait(timeoutMillis: Int32) throws -> [Poller.Ready] {
        let n = buffer.withUnsafeMutableBufferPointer { epoll_wait(fd, $0.baseAddress, Int32($0.count), timeoutMillis) }
        if n < 0 {
            if errno == EINTR { return [] }
            throw NetError.system("epoll_wait", errno)
        }
        var out: [Poller.Ready] = []
        out.reserveCapacity(Int(n))
        for i in 0..<Int(n) {
            let e = buffer[i].events
            out.append(Poller.Ready(token: buffer[i].data.u64,
                                    readable: e & EPOLLIN.rawValue != 0,
                                    writable: e & EPOLLOUT.rawValue != 0,
                                    closed: e & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0))
        }
        return out
    }
}
#endif
