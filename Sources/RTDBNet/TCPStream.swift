#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking byte stream with a timeout on every call: what a command-line client needs to
/// make one connection and reuse it, without an event loop. TCP and TLS streams share it.
public protocol ByteStream: AnyObject {
    /// Reads at most buffer.count bytes; returns 0 at end of stream. Throws NetError on a
    /// timeout (`.timeout`) or a failure.
    func read(into buffer: UnsafeMutableRawBufferPointer, timeoutMillis: Int) throws -> Int
    /// Writes all of `bytes` or throws.
    func write(_ bytes: UnsafeRawBufferPointer, timeoutMillis: Int) throws
    func close()
}

/// A client TCP connection. The socket is non-blocking underneath; every read and write waits
/// with `poll` for at most its timeout (a negative timeout waits without limit), so a silent
/// peer can never hang the caller. The stream owns its descriptor and closes it once.
public final class TCPStream: ByteStream {
    public private(set) var fd: Int32
    public let host: String
    public let port: Int

    init(fd: Int32, host: String, port: Int) {
        self.fd = fd
        self.host = host
        self.port = port
    }

    deinit { close() }

    /// Resolves `host` and connects to the first address that answers within the time left.
    /// Failures name the host and port: "cannot connect to 127.0.0.1:9: Connection refused".
    public static func connect(host: String, port: Int, timeoutMillis: Int) throws -> TCPStream {
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamSocketType
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        // Square brackets around an IPv6 literal belong to the URL, not to the address.
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        let rc = getaddrinfo(name, String(port), &hints, &list)
        if rc != 0 || list == nil {
            let why = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            throw NetError.address("cannot resolve \(host): \(why)")
        }
        defer { freeaddrinfo(list) }
        let fd: Int32 = try firstWorkingAddress(in: list, host: host) { s, ai in
            if systemConnect(s, ai.ai_addr, ai.ai_addrlen) != 0 && errno != EINPROGRESS {
                return .failed(.address("cannot connect to \(host):\(port): \(String(cString: strerror(errno)))"))
            }
            let left = deadline == Int64.max ? -1 : Int(max(0, deadline - monotonicMillis()))
            do {
                try wait(s, events: Int16(POLLOUT), timeoutMillis: left, what: "connecting to \(host):\(port)")
            } catch let e as NetError {
                // Out of time: no other address may take more.
                if case .timeout = e { throw e }
                return .failed(e)
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
            if err != 0 {
                return .failed(.address("cannot connect to \(host):\(port): \(String(cString: strerror(err)))"))
            }
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return .made(s)
        }
        return TCPStream(fd: fd, host: host, port: port)
    }

    /// Waits until `fd` is ready for `events`, or throws `.timeout` once `timeoutMillis` passed.
    static func wait(_ fd: Int32, events: Int16, timeoutMillis: Int, what: String) throws {
        let deadline = timeoutMillis < 0 ? Int64.max : monotonicMillis() + Int64(timeoutMillis)
        while true {
            var p = pollfd(fd: fd, events: events, revents: 0)
            let left = deadline == Int64.max ? -1 : Int32(clamping: max(0, deadline - monotonicMillis()))
            let n = poll(&p, 1, left)
            if n > 0 { return }
            if n == 0 { throw NetError.timeout("timed out \(what)") }
            if errno != EINTR { throw NetError.system("poll", errno) }
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, timeoutMillis: Int) throws -> Int {
        guard fd >= 0 else { throw NetError.address("connection to \(host):\(port) is closed") }
        while true {
            switch SocketIO.read(fd, into: buffer) {
            case .done(let n): return n
            case .closed: return 0
            case .failed(let e): throw NetError.address("reading from \(host):\(port): \(String(cString: strerror(e)))")
            case .wouldBlock:
                try TCPStream.wait(fd, events: Int16(POLLIN), timeoutMillis: timeoutMillis, what: "waiting for \(host):\(port) to answer")
            }
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, timeoutMillis: Int) throws {
        guard fd >= 0 else { throw NetError.address("connection to \(host):\(port) is closed") }
        var sent = 0
        while sent < bytes.count {
            switch SocketIO.write(fd, UnsafeRawBufferPointer(rebasing: bytes[sent...])) {
            case .done(let n): sent += n
            case .closed: throw NetError.address("connection to \(host):\(port) closed while sending")
            case .failed(let e): throw NetError.address("sending to \(host):\(port): \(String(cString: strerror(e)))")
            case .wouldBlock:
                try TCPStream.wait(fd, events: Int16(POLLOUT), timeoutMillis: timeoutMillis, what: "sending to \(host):\(port)")
            }
        }
    }

    /// True when the peer has closed the connection or sent bytes nobody asked for: a kept-alive
    /// connection in that state must not carry the next request.
    public var isStale: Bool {
        guard fd >= 0 else { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    public func close() {
        if fd >= 0 {
            _ = systemClose(fd)
            fd = -1
        }
    }
}
