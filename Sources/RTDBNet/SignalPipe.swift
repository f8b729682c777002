import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The write end of the newest `SignalPipe` (-1: none), read by the signal handler: an atomic
/// load is lock-free, so it is safe there (a mutex is not).
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// The process's one self-pipe for signals: SIGINT and SIGTERM become bytes on a pipe that an
/// event loop (`rtdb serve`) or a waiting command (`tx`, `session`, `sync`) watches, so a signal
/// is handled between two steps, never in the middle of one. The handler only writes a byte,
/// which is async-signal-safe. SIGPIPE is ignored (writes report EPIPE). Both ends are
/// non-blocking and closed on exec, so a child process never inherits them, and closed when the
/// pipe goes (a later pipe takes the signals over; one that goes while newer ones exist leaves
/// theirs alone).
public final class SignalPipe: Sendable {
    public let readEnd: Int32
    let writeEnd: Int32

    public init() throws {
        var fds: [Int32] = [0, 0]
        if pipe(&fds) != 0 { throw NetError.system("pipe", errno) }
        for fd in fds {
            setNonBlocking(fd)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
        signalPipeWriteEnd.store(fds[1], ordering: .sequentiallyConsistent)
        signal(SIGPIPE, SIG_IGN)
        for sig in [SIGINT, SIGTERM] {
            signal(sig) { n in
                var b = UInt8(truncatingIfNeeded: n)
                let fd = signalPipeWriteEnd.load(ordering: .sequentiallyConsistent)
                if fd >= 0 { _ = write(fd, &b, 1) }
            }
        }
    }

    deinit {
        // The handler stops writing here before the descriptor number can be reused.
        _ = signalPipeWriteEnd.compareExchange(expected: writeEnd, desired: -1, ordering: .sequentiallyConsistent)
        _ = systemClose(writeEnd)
        _ = systemClose(readEnd)
    }

    /// The signals received since the last call (oldest first).
    public func drain() -> [Int32] {
        var out: [Int32] = []
        var buf = [UInt8](repeating: 0, count: 64)
        while true {
            let n = read(readEnd, &buf, buf.count)
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n].map { Int32($0) })
        }
        return out
    }
}
