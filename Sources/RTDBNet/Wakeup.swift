#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A descriptor that another thread makes readable: how one thread wakes another that waits in
/// poll(2), epoll or kqueue (an event loop) or sleeps in `wait` (a worker thread). A self-pipe,
/// the same on every system; both ends are non-blocking and closed on exec, and closed when the
/// value goes.
///
/// Wakes coalesce: a pipe that is full already wakes its reader, so `wake` drops a byte it cannot
/// write, and `drain` empties the pipe whatever number of wakes it holds. Whoever is woken looks
/// at shared state (under a lock) to learn why; the byte itself carries nothing.
public final class Wakeup: Sendable {
    /// Readable while a wake is pending.
    public let readEnd: Int32
    let writeEnd: Int32

    public init() throws {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw NetError.system("pipe", errno) }
        setNonBlocking(fds[0])
        setNonBlocking(fds[1])
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        _ = systemClose(readEnd)
        _ = systemClose(writeEnd)
    }

    /// Makes `readEnd` readable (safe from any thread, and from a signal handler).
    public func wake() {
        var b: UInt8 = 1
        _ = write(writeEnd, &b, 1)
    }

    /// Empties the pipe: the next `wait` sleeps until the next `wake`.
    public func drain() {
        var b = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &b, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Sleeps until a wake is pending (at most `timeoutMillis`, -1: no limit), then drains it.
    /// Returns whether it was woken.
    @discardableResult
    public func wait(timeoutMillis: Int32 = -1) -> Bool {
        var p = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, timeoutMillis)
        if n > 0 { drain() }
        return n > 0
    }
}
