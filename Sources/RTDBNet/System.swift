#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The one place where the C library differs between the systems rtdb builds on: Linux (glibc),
// macOS (Darwin) and FreeBSD. Every other file writes plain POSIX and calls these where a type,
// a constant or a function is spelled differently.
//
// Swift names FreeBSD's C library `Glibc` too, so `canImport(Glibc)` means "Linux or a BSD";
// what only Linux has is guarded with `os(Linux)`. `errno` needs nothing: the Glibc and Darwin
// modules both give it as a variable (thread-local underneath), so code reads it directly.

// MARK: - Sockets

/// SOCK_STREAM as socket() and addrinfo take it: glibc declares it as an enum case
/// (`__socket_type`), Darwin and FreeBSD as an Int32 macro.
public var streamSocketType: Int32 {
    #if os(Linux)
    return Int32(SOCK_STREAM.rawValue)
    #else
    return SOCK_STREAM
    #endif
}

/// The flags of every send(): no SIGPIPE when the peer is gone (EPIPE is reported instead).
/// Darwin has no MSG_NOSIGNAL; its sockets get SO_NOSIGPIPE instead (`configureSocket`).
public var sendFlags: Int32 {
    #if canImport(Darwin)
    return 0
    #else
    return Int32(MSG_NOSIGNAL)
    #endif
}

/// A new non-blocking, close-on-exec stream socket of `family` (-1 and errno on failure).
/// Linux sets both flags atomically; elsewhere they are set right after.
public func openStreamSocket(family: Int32) -> Int32 {
    #if os(Linux)
    return socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    #else
    let fd = socket(family, SOCK_STREAM, 0)
    if fd >= 0 { configureSocket(fd) }
    return fd
    #endif
}

/// Makes a socket from accept() or socket() non-blocking and close-on-exec, and on Darwin
/// keeps a write to a closed peer from raising SIGPIPE.
public func configureSocket(_ fd: Int32) {
    setNonBlocking(fd)
    #if canImport(Darwin)
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    #endif
}

// libc's functions under names that a type's own methods (`close()`, `read(into:)`,
// `connect(...)`) cannot hide, without naming the C module (Glibc or Darwin) at the call.

public func systemClose(_ fd: Int32) -> Int32 { close(fd) }

public func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

public func systemAccept(_ fd: Int32) -> Int32 { accept(fd, nil, nil) }

public func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }

public func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

// MARK: - Files

/// What stat(2) says about a file that changes when it is written, replaced or removed:
/// the identity of its inode, its size and its modification time.
public struct FileStamp: Equatable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modifiedNanos: Int64

    public init(_ st: stat) {
        // dev_t is signed on Darwin, unsigned elsewhere: its bits are what identify the device.
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modifiedNanos = modificationNanos(st)
    }

    /// The stamp of what `path` names now (following symbolic links), or nil when nothing does.
    public static func of(_ path: String) -> FileStamp? {
        var st = stat()
        return stat(path, &st) == 0 ? FileStamp(st) : nil
    }
}

/// st_mtim (Linux, FreeBSD) is st_mtimespec on Darwin.
public func modificationNanos(_ st: stat) -> Int64 {
    #if canImport(Darwin)
    return Int64(st.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(st.st_mtimespec.tv_nsec)
    #else
    return Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    #endif
}

// MARK: - Processes

/// Raises this process's limit of open descriptors toward `wanted` (as far as the hard limit
/// allows; Darwin also refuses more than OPEN_MAX unless the hard limit is finite and lower);
/// returns the soft limit in force afterwards.
@discardableResult
public func raiseOpenFileLimit(to wanted: Int) -> Int {
    #if os(Linux)
    let resource = Int32(RLIMIT_NOFILE.rawValue)
    #else
    let resource = RLIMIT_NOFILE
    #endif
    var rl = rlimit()
    guard getrlimit(resource, &rl) == 0 else { return wanted }
    var want = rlim_t(wanted)
    #if canImport(Darwin)
    want = min(want, rlim_t(OPEN_MAX))
    #endif
    if rl.rlim_cur < want {
        var raised = rl
        raised.rlim_cur = min(want, rl.rlim_max)
        if setrlimit(resource, &raised) == 0 { rl = raised }
    }
    return rl.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(rl.rlim_cur)
}

/// The process's environment (`NAME=value` strings, nil-terminated). Darwin does not declare
/// `environ` to Swift; `_NSGetEnviron` returns the same array.
public var processEnvironment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
    #if canImport(Darwin)
    return _NSGetEnviron().pointee
    #else
    return environ
    #endif
}

/// The absolute path of the running executable (Linux, macOS), or nil when the system cannot say.
public func executablePath() -> String? {
    #if os(Linux)
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    #elseif canImport(Darwin)
    var buf = [CChar](repeating: 0, count: 4096)
    var size = UInt32(buf.count)
    guard _NSGetExecutablePath(&buf, &size) == 0 else { return nil }
    return cString(buf)
    #else
    // FreeBSD has sysctl(KERN_PROC_PATHNAME), which its C module may not declare to Swift:
    // callers fall back to argv[0].
    return nil
    #endif
}

/// posix_spawn's file actions and attributes are structs in glibc and opaque pointers
/// (`void *`) on Darwin and FreeBSD. Declare them from these initial values, then call
/// posix_spawn_file_actions_init / posix_spawnattr_init as usual.
#if os(Linux)
public typealias SpawnFileActions = posix_spawn_file_actions_t
public typealias SpawnAttributes = posix_spawnattr_t
#else
public typealias SpawnFileActions = posix_spawn_file_actions_t?
public typealias SpawnAttributes = posix_spawnattr_t?
#endif

public func emptySpawnFileActions() -> SpawnFileActions {
    #if os(Linux)
    return posix_spawn_file_actions_t()
    #else
    return nil
    #endif
}

public func emptySpawnAttributes() -> SpawnAttributes {
    #if os(Linux)
    return posix_spawnattr_t()
    #else
    return nil
    #endif
}

// MARK: - Threads

/// A number naming the calling thread while it runs (pthread_t is an integer in glibc, a
/// pointer on Darwin and the BSDs).
public func currentThreadID() -> UInt {
    #if os(Linux)
    return UInt(pthread_self())
    #else
    return UInt(bitPattern: pthread_self())
    #endif
}

/// The width in columns of the terminal `fd` is, or nil when it is not a terminal (or does not
/// say). glibc exports TIOCGWINSZ; Darwin's and FreeBSD's headers build it with a macro Swift
/// cannot import, `_IOR('t', 104, struct winsize)`, whose value is the same on both.
public func terminalColumns(_ fd: Int32) -> Int? {
    guard isatty(fd) == 1 else { return nil }
    var size = winsize()
    #if os(Linux)
    let request = UInt(TIOCGWINSZ)
    #else
    let request: UInt = 0x4008_7468
    #endif
    guard ioctl(fd, request, &size) == 0, size.ws_col > 0 else { return nil }
    return Int(size.ws_col)
}

/// The processors online, as the system counts them (1 when it cannot tell).
public func onlineCores() -> Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
}
