#if canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
#if canImport(Darwin)
import Darwin
#else
import Glibc
#endif

/// Readiness on macOS and the BSDs: one kqueue, level-triggered (no EV_CLEAR), the token in each
/// event's udata. It follows `EpollReadiness` step for step; the differences are kqueue's:
/// reading and writing are two filters (EVFILT_READ, EVFILT_WRITE), each added when wanted
/// (EV_ADD) and deleted when no longer wanted (EV_DELETE), so this keeps which ones a descriptor
/// has and under which token; their two events for one descriptor are merged into one `Ready`.
/// A filter whose token changes is deleted and added again (EV_ADD on a registered filter
/// modifies it on macOS and FreeBSD, but not in every kqueue). A hang-up is EV_EOF on a
/// registered filter (epoll reports it even with none).
final class KqueueReadiness: ReadinessBackend {
    private let fd: Int32
    private var buffer: [kevent]
    /// The filters each descriptor has (a closed descriptor loses them in the kernel; a stale
    /// entry here only costs a deletion that fails quietly).
    private var registered: [Int32: (read: Bool, write: Bool, token: UInt64)] = [:]

    init(capacity: Int) throws {
        fd = kqueue()
        if fd < 0 { throw NetError.system("kqueue", errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        buffer = Array(repeating: kevent(), count: capacity)
    }

    deinit { close(fd) }

    private static func change(_ target: Int32, _ filter: Int32, _ flags: Int32, _ token: UInt64) -> kevent {
        var ev = kevent()
        ev.ident = UInt(target)
        ev.filter = Int16(filter)
        ev.flags = UInt16(flags)
        ev.udata = UnsafeMutableRawPointer(bitPattern: UInt(truncatingIfNeeded: token))
        return ev
    }

    private func control(_ target: Int32, _ token: UInt64, read: Bool, write: Bool) throws {
        let old = registered[target] ?? (false, false, token)
        let retoken = old.token != token
        // Deletions one at a time, failures ignored: the filter may be gone with a closed descriptor.
        if old.read && (!read || retoken) { delete(target, Int32(EVFILT_READ)) }
        if old.write && (!write || retoken) { delete(target, Int32(EVFILT_WRITE)) }
        var changes: [kevent] = []
        if read && (!old.read || retoken) { changes.append(KqueueReadiness.change(target, Int32(EVFILT_READ), EV_ADD, token)) }
        if write && (!old.write || retoken) { changes.append(KqueueReadiness.change(target, Int32(EVFILT_WRITE), EV_ADD, token)) }
        registered[target] = (read, write, token)
        if !changes.isEmpty && kevent(fd, &changes, Int32(changes.count), nil, 0, nil) != 0 {
            throw NetError.system("kevent", errno)
        }
    }

    private func delete(_ target: Int32, _ filter: Int32) {
        var change = KqueueReadiness.change(target, filter, EV_DELETE, 0)
        _ = kevent(fd, &change, 1, nil, 0, nil)
    }

    func add(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        // A new descriptor: what is noted under its number belongs to a closed one.
        registered[target] = nil
        try control(target, token, read: read, write: write)
    }

    func modify(_ target: Int32, token: UInt64, read: Bool, write: Bool) throws {
        try control(target, token, read: read, write: write)
    }

    func remove(_ target: Int32) {
        guard let old = registered.removeValue(forKey: target) else { return }
        if old.read { delete(target, Int32(EVFILT_READ)) }
        if old.write { delete(target, Int32(EVFILT_WRITE)) }
    }

    func wait(timeoutMillis: Int32) throws -> [Poller.Ready] {
        var limit = timespec()
        limit.tv_sec = time_t(timeoutMillis / 1000)
        limit.tv_nsec = Int(timeoutMillis % 1000) * 1_000_000
        let n = buffer.withUnsafeMutableBufferPointer { events in
            timeoutMillis < 0 ? kevent(fd, nil, 0, events.baseAddress, Int32(events.count), nil)
                              : kevent(fd, nil, 0, events.baseAddress, Int32(events.count), &limit)
        }
        if n < 0 {
            if errno == EINTR { return [] }
            throw NetError.system("kevent", errno)
        }
        var out: [Poller.Ready] = []
        out.reserveCapacity(Int(n))
        var slot: [UInt64: Int] = [:]
        for i in 0..<Int(n) {
            let e = buffer[i]
            let token = UInt64(UInt(bitPattern: e.udata))
            let flags = Int32(e.flags)
            let k = slot[token] ?? out.count
            if k == out.count {
                slot[token] = k
                out.append(Poller.Ready(token: token, readable: false, writable: false, closed: false))
            }
            if Int32(e.filter) == Int32(EVFILT_READ) { out[k].readable = true }
            if Int32(e.filter) == Int32(EVFILT_WRITE) { out[k].writable = true }
            if flags & (EV_EOF | EV_ERROR) != 0 { out[k].closed = true }
        }
        return out
    }
}
#endif
