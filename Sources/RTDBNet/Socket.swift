#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listening TCP socket, non-blocking, bound to one address.
public final class TCPListener {
    public let fd: Int32
    /// The bound port (the kernel's choice when asked for port 0).
    public let port: Int
    /// The numeric address it is bound to, e.g. "127.0.0.1" or "::1".
    public let address: String
    public let isIPv6: Bool

    /// Resolves `host` (numeric address or name) and binds the first address that works.
    public init(host: String, port: Int, backlog: Int32 = 4096) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 || list == nil {
            throw NetError.address("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        let bound: (fd: Int32, port: Int, address: String, isIPv6: Bool) = try firstWorkingAddress(in: list, host: host) { s, ai in
            var one: Int32 = 1
            setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if ai.ai_family == AF_INET6 {
                setsockopt(s, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if bind(s, ai.ai_addr, ai.ai_addrlen) != 0 { return .failed(.system("bind \(host):\(port)", errno)) }
            if listen(s, backlog) != 0 { return .failed(.system("listen", errno)) }
            var storage = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
            }
            if named != 0 { return .failed(.system("getsockname", errno)) }
            let (addr, p) = TCPListener.describe(&storage)
            return .made((fd: s, port: p, address: addr, isIPv6: ai.ai_family == AF_INET6))
        }
        self.fd = bound.fd
        self.port = bound.port
        self.address = bound.address
        self.isIPv6 = bound.isIPv6
    }

    deinit { close(fd) }

    /// A new connection (non-blocking), or nil when none is waiting.
    public func accept() throws -> Int32? {
        while true {
            let c = systemAccept(fd)
            if c >= 0 {
                configureSocket(c)
                var one: Int32 = 1
                setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return c
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            // A connection that died in the queue, or a passing shortage: try again later.
            case ECONNABORTED, EPROTO, EPERM: return nil
            default: throw NetError.system("accept", errno)
            }
        }
    }

    static func describe(_ storage: inout sockaddr_storage) -> (String, Int) {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var serv = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let len = socklen_t(storage.ss_family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, len, &host, socklen_t(host.count), &serv, socklen_t(serv.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        return (cString(host), Int(cString(serv)) ?? 0)
    }

    /// True when every address `host` resolves to is a loopback address.
    public static func isLoopback(host: String) -> Bool {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, list != nil else { return false }
        defer { freeaddrinfo(list) }
        var cur = list
        var any = false
        while let ai = cur {
            defer { cur = ai.pointee.ai_next }
            any = true
            if ai.pointee.ai_family == AF_INET {
                let ok = ai.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127
                }
                if !ok { return false }
            } else if ai.pointee.ai_family == AF_INET6 {
                let ok = ai.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p -> Bool in
                    var a = p.pointee.sin6_addr
                    return withUnsafeBytes(of: &a) { b in
                        // ::1, or an IPv4-mapped 127.x.y.z
                        (b[0..<15].allSatisfy { $0 == 0 } && b[15] == 1)
                            || (b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xff && b[11] == 0xff && b[12] == 127)
                    }
                }
                if !ok { return false }
            } else {
                return false
            }
        }
        return any
    }
}

/// Results of one non-blocking read or write.
public enum IOResult {
    case done(Int)
    case wouldBlock
    case closed
    case failed(Int32)
}

public enum SocketIO {
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let n = systemRead(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .done(n) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE: return .closed
            default: return .failed(errno)
            }
        }
    }

    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let n = send(fd, bytes.baseAddress, bytes.count, sendFlags)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE: return .closed
            default: return .failed(errno)
            }
        }
    }
}

/// Makes `fd` non-blocking and close-on-exec.
public func setNonBlocking(_ fd: Int32) {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    setCloseOnExec(fd)
}

/// Makes `fd` close-on-exec: a process started meanwhile (by any thread) does not keep it open,
/// so closing it here really closes it.
public func setCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
}

func cString(_ buffer: [CChar]) -> String {
    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
}
