#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking byte stream with per-call timeouts: what a command-line client reads and writes
/// (plain TCP, or TLS over it). One connection per process, reused; no event loop.
public protocol ByteStream: AnyObject {
    /// Reads at most buffer.count bytes; returns 0 at end of stream. Throws NetError on a
    /// timeout (`.timeout`) or a failure.
    func read(into buffer: UnsafeMutableRawBufferPointer, timeoutMillis: Int) throws -> Int
    /// Writes all of `bytes` or throws.
    func write(_ bytes: UnsafeRawBufferPointer, timeoutMillis: Int) throws
    func close()
}

/// A client TCP connection. The socket is non-blocking; each call waits with poll() for at
/// most its timeout, so a silent server never hangs the process.
public final class TCPStream: ByteStream {
    let fd: Int32
    private var isClosed = false

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// Connects to the first address of `host` that accepts within the time left.
    public static func connect(host: String, port: Int, timeoutMillis: Int) throws -> TCPStream {
        let deadline = monotonicMillis() + Int64(timeoutMillis)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        if rc != 0 || list == nil {
            throw NetError.address("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: NetError = .address("no address for \(host)")
        var cur = list
        while let ai = cur {
            defer { cur = ai.pointee.ai_next }
            let s = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            if s < 0 { lastError = .system("socket", errno); continue }
            setNonBlocking(s)
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(s, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return TCPStream(fd: s) }
            if errno != EINPROGRESS { lastError = .system("connect \(host):\(port)", errno); Glibc.close(s); continue }
            let left = Int(deadline - monotonicMillis())
            if left <= 0 || !wait(s, Int16(POLLOUT), left) {
                Glibc.close(s)
                throw NetError.timeout("connecting to \(host):\(port) timed out")
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
            if err == 0 { return TCPStream(fd: s) }
            lastError = .system("connect \(host):\(port)", err)
            Glibc.close(s)
        }
        throw lastError
    }

    /// Waits until `fd` is ready for `events`; false on timeout.
    static func wait(_ fd: Int32, _ events: Int16, _ timeoutMillis: Int) -> Bool {
        let deadline = monotonicMillis() + Int64(timeoutMillis)
        while true {
            var p = pollfd(fd: fd, events: events, revents: 0)
            let left = max(0, Int(deadline - monotonicMillis()))
            let n = poll(&p, 1, Int32(clamping: left))
            if n > 0 { return true }
            if n == 0 || (n < 0 && errno != EINTR) { return n < 0 }
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, timeoutMillis: Int) throws -> Int {
        let deadline = monotonicMillis() + Int64(timeoutMillis)
        while true {
            switch SocketIO.read(fd, into: buffer) {
            case .done(let n): return n
            case .closed: return 0
            case .failed(let e): throw NetError.system("read", e)
            case .wouldBlock:
                let left = Int(deadline - monotonicMillis())
                if left <= 0 || !TCPStream.wait(fd, Int16(POLLIN), left) {
                    throw NetError.timeout("no answer within \(timeoutMillis) ms")
                }
            }
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, timeoutMillis: Int) throws {
        let deadline = monotonicMillis() + Int64(timeoutMillis)
        var off = 0
        while off < bytes.count {
            switch SocketIO.write(fd, UnsafeRawBufferPointer(rebasing: bytes[off...])) {
            case .done(let n): off += n
            case .closed: throw NetError.system("write", EPIPE)
            case .failed(let e): throw NetError.system("write", e)
            case .wouldBlock:
                let left = Int(deadline - monotonicMillis())
                if left <= 0 || !TCPStream.wait(fd, Int16(POLLOUT), left) {
                    throw NetError.timeout("could not send within \(timeoutMillis) ms")
                }
            }
        }
    }

    public func close() {
        if isClosed { return }
        isClosed = true
        Glibc.close(fd)
    }
}
