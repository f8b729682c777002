#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which kernel interfaces wait for readiness and for other processes' commits.
///
/// * `native`: what the system offers for it. Linux: epoll for readiness, inotify for commits.
///   macOS, FreeBSD and the other BSDs: kqueue for both (EVFILT_READ/WRITE; EVFILT_VNODE on
///   the database file, its write-ahead log and their folder). Any other system: `posix`.
/// * `posix`: what every POSIX system has. Readiness is poll(2); a commit is noticed by a
///   periodic stat(2) of the database file and its write-ahead log (`CommitCheck`: every 10 ms
///   while commits come, 50 ms after a quiet second, 250 ms after ten); `rtdb serve` notices
///   other processes' commits on its 250 ms feed check. Wake-ups between threads and from signal
///   handlers are self-pipes on every back-end.
///
/// `native` is the default. `RTDB_IO_BACKEND=posix` chooses `posix` for the whole process (so
/// the code macOS and the BSDs fall back to runs, and is tested, on Linux); `native`, unset or
/// any other value keeps the default.
public enum IOBackend: String, Sendable {
    case native
    case posix

    /// This process's choice, read once from RTDB_IO_BACKEND.
    public static let current: IOBackend = IOBackend(environmentValue: getenv("RTDB_IO_BACKEND").map { String(cString: $0) })

    public init(environmentValue: String?) {
        self = environmentValue == "posix" ? .posix : .native
    }

    /// The readiness implementation this choice runs here.
    public var readinessName: String {
        switch self {
        case .posix: return "poll"
        case .native:
            #if os(Linux)
            return "epoll"
            #elseif canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
            return "kqueue"
            #else
            return "poll"
            #endif
        }
    }

    func makeReadiness(capacity: Int) throws -> any ReadinessBackend {
        switch self {
        case .posix: return PollReadiness()
        case .native:
            #if os(Linux)
            return try EpollReadiness(capacity: capacity)
            #elseif canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
            return try KqueueReadiness(capacity: capacity)
            #else
            return PollReadiness()
            #endif
        }
    }
}

/// What `Poller` delegates to: one kernel interface for "which of these descriptors can be read
/// or written". Level-triggered: a descriptor stays ready until it is drained.
protocol ReadinessBackend: AnyObject {
    func add(_ fd: Int32, token: UInt64, read: Bool, write: Bool) throws
    func modify(_ fd: Int32, token: UInt64, read: Bool, write: Bool) throws
    func remove(_ fd: Int32)
    func wait(timeoutMillis: Int32) throws -> [Poller.Ready]
}
