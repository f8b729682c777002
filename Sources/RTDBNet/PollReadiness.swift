#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Readiness with poll(2), which every POSIX system has: the portable back-end
/// (RTDB_IO_BACKEND=posix) and the fallback where neither epoll nor kqueue exists.
///
/// It keeps the registered descriptors in one array that each `wait` hands to poll, so a wait
/// costs time in proportion to the descriptors registered (epoll and kqueue: to those ready).
/// The kernel keeps no registration, so one difference from epoll and kqueue is handled here:
/// they forget a descriptor when it is closed, poll reports it as invalid (POLLNVAL). Such an
/// entry is reported once as closed and dropped, and adding a descriptor number that is still
/// listed replaces the old entry (the number was closed and reused).
final class PollReadiness: ReadinessBackend {
    private var entries: [pollfd] = []
    private var tokens: [UInt64] = []
    private var index: [Int32: Int] = [:]

    private static func events(read: Bool, write: Bool) -> Int16 {
        var mask: Int16 = 0
        if read { mask |= Int16(POLLIN) }
        if write { mask |= Int16(POLLOUT) }
        return mask
    }

    func add(_ fd: Int32, token: UInt64, read: Bool, write: Bool) throws {
        if fd < 0 { throw NetError.system("poll add", EBADF) }
        if let i = index[fd] {
            entries[i].events = PollReadiness.events(read: read, write: write)
            tokens[i] = token
            return
        }
        index[fd] = entries.count
        entries.append(pollfd(fd: fd, events: PollReadiness.events(read: read, write: write), revents: 0))
        tokens.append(token)
    }

    func modify(_ fd: Int32, token: UInt64, read: Bool, write: Bool) throws {
        guard let i = index[fd] else { throw NetError.system("poll modify", ENOENT) }
        entries[i].events = PollReadiness.events(read: read, write: write)
        tokens[i] = token
    }

    func remove(_ fd: Int32) {
        guard let i = index.removeValue(forKey: fd) else { return }
        let last = entries.count - 1
        if i != last {
            entries[i] = entries[last]
            tokens[i] = tokens[last]
            index[entries[i].fd] = i
        }
        entries.removeLast()
        tokens.removeLast()
    }

    func wait(timeoutMillis: Int32) throws -> [Poller.Ready] {
        let n = entries.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeoutMillis) }
        if n < 0 {
            if errno == EINTR { return [] }
            throw NetError.system("poll", errno)
        }
        if n == 0 { return [] }
        var out: [Poller.Ready] = []
        out.reserveCapacity(Int(n))
        var invalid: [Int32] = []
        for i in entries.indices where entries[i].revents != 0 {
            let e = entries[i].revents
            out.append(Poller.Ready(token: tokens[i],
                                    readable: e & Int16(POLLIN) != 0,
                                    writable: e & Int16(POLLOUT) != 0,
                                    closed: e & Int16(POLLERR | POLLHUP | POLLNVAL) != 0))
            if e & Int16(POLLNVAL) != 0 { invalid.append(entries[i].fd) }
            entries[i].revents = 0
        }
        for fd in invalid { remove(fd) }
        return out
    }
}
