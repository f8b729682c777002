#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Unix-domain stream sockets named by a file, for talking to another process of this machine
/// (a session's control channel). Descriptors are close-on-exec; the listening one is
/// non-blocking, connected ones block only within the deadlines given.
public enum LocalSocket {
    /// `connect` found no one: `errno` ENOENT (no such socket) or ECONNREFUSED (nobody listens).
    public struct Refused: Error {
        public let errno: Int32
    }

    /// A listening socket at `path` (a file left there before is replaced).
    public static func listen(_ path: String) throws -> Int32 {
        var addr = try address(path)
        let fd = try stream()
        unlink(path)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, systemListen(fd, 16) == 0 else {
            let e = errno
            close(fd)
            throw NetError.system("listen on \(path)", e)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// A connection waiting on the listening `fd` (blocking, close-on-exec), or nil.
    public static func accept(_ fd: Int32) -> Int32? {
        while true {
            let c = systemAccept(fd)
            if c >= 0 {
                _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK)
                return c
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    /// A connection to the socket at `path`; throws `Refused` when there is none to make.
    public static func connect(_ path: String) throws -> Int32 {
        var addr = try address(path)
        let fd = try stream()
        while true {
            let r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if r == 0 { return fd }
            let e = errno
            if e == EINTR { continue }
            close(fd)
            if e == ENOENT || e == ECONNREFUSED || e == ENOTDIR { throw Refused(errno: e == ECONNREFUSED ? ECONNREFUSED : ENOENT) }
            throw NetError.system("connect to \(path)", e)
        }
    }

    /// Reads up to a newline (not included) within the deadline (monotonic ms); nil at end of
    /// input before one, past `limit` bytes, on an error or when the deadline passes.
    public static func readLine(_ fd: Int32, limit: Int, deadline: Int64) -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            guard wait(fd, events: Int16(POLLIN), deadline: deadline) else { return nil }
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            if byte == 0x0A { return line }
            if line.count >= limit { return nil }
            line.append(byte)
        }
    }

    /// Writes all of `bytes` within the deadline; false when the reader went away or time ran out.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], deadline: Int64) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard wait(fd, events: Int16(POLLOUT), deadline: deadline) else { return false }
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, sendFlags) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            offset += n
        }
        return true
    }

    // MARK: -

    /// A blocking, close-on-exec local stream socket (waits are bounded with poll instead).
    private static func stream() throws -> Int32 {
        let fd = openStreamSocket(family: AF_UNIX)
        if fd < 0 { throw NetError.system("socket", errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    private static func address(_ path: String) throws -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else {
            throw NetError.address("the socket path \(path) is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return addr
    }

    /// Waits until `fd` is ready for `events`; false at the deadline or on an error.
    private static func wait(_ fd: Int32, events: Int16, deadline: Int64) -> Bool {
        while true {
            let left = deadline == Int64.max ? -1 : deadline - monotonicMillis()
            if deadline != Int64.max && left <= 0 { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, Int32(min(left < 0 ? 60_000 : left, 60_000)))
            if r < 0 { if errno == EINTR { continue }; return false }
            if r == 0 { continue }
            return true
        }
    }
}
