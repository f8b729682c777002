#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TLS over an open TCP stream, for a command-line client: blocking calls with timeouts.
///
/// The server's certificate chain is verified against the system's CA store (OpenSSL's default
/// locations, which honour SSL_CERT_FILE and SSL_CERT_DIR; on macOS the system keychain's
/// roots; see SystemTrust) plus an optional
/// private CA file, and
/// its name against `host` (a DNS name, or an IP address checked against the certificate's IP
/// entries). SNI carries the name; TLS 1.2 is the oldest version offered. OpenSSL reads and
/// writes through a small BIO that calls the TCP stream, so every wait is bounded by the
/// timeout of the call in progress, and a network failure or timeout is rethrown as the
/// stream's own NetError. The stream owns `tcp` from the call on: it is closed on failure
/// and by `close()`. After a timeout or failure the stream is no longer usable; close it.
public final class TLSClientStream: ByteStream {
    private let context: SSLContext
    private var lib: LibSSL { context.lib }
    private let ssl: OpaquePointer
    private let io: StreamBIOContext
    private var isClosed = false
    /// A call failed or timed out: no close_notify is attempted on close.
    private var broken = false

    /// The negotiated protocol, e.g. "TLSv1.3".
    public let protocolVersion: String

    private init(context: SSLContext, ssl: OpaquePointer, io: StreamBIOContext) {
        self.context = context
        self.ssl = ssl
        self.io = io
        protocolVersion = context.lib.SSL_get_version(ssl).map { String(cString: $0) } ?? "TLS"
    }

    deinit { close() }

    /// Runs the handshake over `tcp` within `timeoutMillis`. Throws TLSError (verification
    /// with the reason, e.g. "certificate verify failed: self-signed certificate"; protocol
    /// failures; an unusable CA file; OpenSSL missing) or the stream's NetError.
    public static func connect(over tcp: TCPStream, host: String, caFile: String?,
                               timeoutMillis: Int) throws -> TLSClientStream {
        try connect(over: tcp, host: host, caFile: caFile, timeoutMillis: timeoutMillis, trust: nil)
    }

    /// `trust` replaces the system store's locations (nil: SystemTrust.locate).
    static func connect(over tcp: TCPStream, host: String, caFile: String?, timeoutMillis: Int,
                        trust: SystemTrust?) throws -> TLSClientStream {
        let lib: LibSSL
        let method: OpaquePointer
        do {
            lib = try OpenSSL.ssl.get()
            method = try StreamBIOContext.method.get().pointer
        } catch {
            tcp.close()
            throw error
        }
        let crypto = lib.crypto
        var ssl: OpaquePointer? = nil
        var handedOver = false
        defer {
            if !handedOver {
                if let ssl { lib.SSL_free(ssl) }
                tcp.close()
            }
        }
        let context = try SSLContext(lib, server: false)
        let ctx = context.pointer
        // HTTP frames its own bodies, so a server that closes without close_notify is an end
        // of stream, not an error (as most clients treat it).
        lib.setOptions(ctx, .ignoreUnexpectedEOF)
        lib.setVerify(ctx, .peer)
        let system = trust ?? SystemTrust.locate(crypto)
        if system.file != nil || system.directories != nil {
            // A system store that cannot be read leaves only --cacert; verification then says so.
            _ = lib.SSL_CTX_load_verify_locations(ctx, system.file, system.directories)
        }
        if let pem = system.certificates { system.add(pem, to: ctx, lib) }
        crypto.ERR_clear_error()
        if let caFile {
            try checkReadable(caFile, what: "CA file")
            if lib.SSL_CTX_load_verify_locations(ctx, caFile, nil) != 1 {
                throw TLSError.configuration("CA file \(caFile) holds no usable PEM certificate: \(crypto.reason(or: "unreadable"))")
            }
        }
        guard let s = lib.SSL_new(ctx) else {
            throw TLSError.unavailable("cannot create a TLS connection: \(crypto.reason(or: "out of memory"))")
        }
        ssl = s

        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if isIPAddress(name) {
            // No SNI for addresses (RFC 6066); the certificate must list the address itself.
            if crypto.X509_VERIFY_PARAM_set1_ip_asc(lib.SSL_get0_param(s), name) != 1 {
                throw TLSError.configuration("cannot check the certificate against address \(name)")
            }
        } else {
            if name.isEmpty || lib.SSL_set1_host(s, name) != 1 {
                throw TLSError.configuration("cannot check the certificate against host name \(name)")
            }
            lib.setServerName(s, name)
        }

        let io = StreamBIOContext(stream: tcp)
        guard let bio = crypto.BIO_new(method) else {
            throw TLSError.unavailable("cannot create a TLS connection: \(crypto.reason(or: "out of memory"))")
        }
        crypto.BIO_set_data(bio, Unmanaged.passUnretained(io).toOpaque())
        crypto.BIO_set_init(bio, 1)
        lib.SSL_set_bio(s, bio, bio)   // the connection owns the BIO from here

        io.deadline = monotonicMillis() + Int64(timeoutMillis)
        crypto.ERR_clear_error()
        let rc = lib.SSL_connect(s)
        if rc != 1 {
            if let f = io.takeFailure() {
                crypto.ERR_clear_error()
                throw rewordTimeout(f, "TLS handshake with \(name) timed out after \(timeoutMillis) ms")
            }
            let verify = lib.verifyResult(s)
            let reasons = crypto.drainErrors()
            if verify != .ok {
                let why = crypto.describe(verify) ?? "error \(verify.rawValue)"
                var message = "certificate verify failed: \(why)"
                if verify.isNameMismatch {
                    message += " (the certificate is not for \(name))"
                }
                throw TLSError.verification(message)
            }
            if io.sawEOF && reasons.isEmpty {
                throw TLSError.protocolFailure("TLS handshake with \(name) failed: the server closed the connection")
            }
            throw TLSError.protocolFailure("TLS handshake with \(name) failed: \(reasons.last ?? "error \(lib.errorCode(s, rc).rawValue)")")
        }
        handedOver = true
        return TLSClientStream(context: context, ssl: s, io: io)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, timeoutMillis: Int) throws -> Int {
        if isClosed { throw NetError.system("read", EBADF) }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        io.deadline = monotonicMillis() + Int64(timeoutMillis)
        lib.crypto.ERR_clear_error()
        let n = lib.SSL_read(ssl, base, Int32(clamping: buffer.count))
        if n > 0 { return Int(n) }
        let code = lib.errorCode(ssl, n)
        if code == .zeroReturn { return 0 }
        if let f = io.takeFailure() {
            lib.crypto.ERR_clear_error()
            broken = true
            throw TLSClientStream.rewordTimeout(f, "no answer within \(timeoutMillis) ms")
        }
        if code == .syscall && io.sawEOF { return 0 }
        broken = true
        throw TLSError.protocolFailure("TLS read failed: \(lib.crypto.reason(or: "error \(code.rawValue)"))")
    }

    public func write(_ bytes: UnsafeRawBufferPointer, timeoutMillis: Int) throws {
        if isClosed { throw NetError.system("write", EBADF) }
        guard let base = bytes.baseAddress else { return }
        io.deadline = monotonicMillis() + Int64(timeoutMillis)
        var off = 0
        while off < bytes.count {
            lib.crypto.ERR_clear_error()
            let n = lib.SSL_write(ssl, base + off, Int32(clamping: bytes.count - off))
            if n > 0 { off += Int(n); continue }
            let code = lib.errorCode(ssl, n)
            broken = true
            if let f = io.takeFailure() {
                lib.crypto.ERR_clear_error()
                throw TLSClientStream.rewordTimeout(f, "could not send within \(timeoutMillis) ms")
            }
            throw TLSError.protocolFailure("TLS write failed: \(lib.crypto.reason(or: "error \(code.rawValue)"))")
        }
    }

    /// Sends close_notify (without waiting for the server's), then closes the TCP stream.
    public func close() {
        if isClosed { return }
        isClosed = true
        io.deadline = monotonicMillis() + 500
        if !broken && io.failure == nil { _ = lib.SSL_shutdown(ssl) }
        lib.crypto.ERR_clear_error()
        lib.SSL_free(ssl)
        io.stream.close()
    }

    private static func rewordTimeout(_ e: Error, _ message: String) -> Error {
        if case NetError.timeout = e { return NetError.timeout(message) }
        return e
    }
}

/// True for a numeric IPv4 or IPv6 address.
func isIPAddress(_ s: String) -> Bool {
    var buf = [UInt8](repeating: 0, count: 16)
    return inet_pton(AF_INET, s, &buf) == 1 || inet_pton(AF_INET6, s, &buf) == 1
}

/// Throws a configuration error naming the file when it cannot be opened for reading.
func checkReadable(_ path: String, what: String) throws {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 {
        throw TLSError.configuration("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
    }
    var st = stat()
    let isDir = fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    close(fd)
    if isDir { throw TLSError.configuration("cannot read \(what) \(path): it is a folder") }
}

// MARK: - The BIO between OpenSSL and a ByteStream

/// What the custom BIO reads from and writes to: the stream, the deadline of the TLS call in
/// progress, and the stream's failure (kept here, since a C callback cannot throw).
final class StreamBIOContext {
    let stream: ByteStream
    var deadline: Int64 = 0
    var failure: Error? = nil
    var sawEOF = false

    init(stream: ByteStream) { self.stream = stream }

    func takeFailure() -> Error? {
        defer { failure = nil }
        return failure
    }

    /// The BIO method, made once per process, its callbacks set before anyone can use it.
    static let method: Result<SharedOpenSSLObject, TLSError> = {
        do {
            let crypto = try OpenSSL.crypto.get()
            guard let m = crypto.newBIOMethod(.sourceSink, name: "rtdb stream") else {
                return .failure(.unavailable("cannot create a TLS connection: \(crypto.reason(or: "out of memory"))"))
            }
            _ = crypto.BIO_meth_set_read(m, bioRead)
            _ = crypto.BIO_meth_set_write(m, bioWrite)
            _ = crypto.BIO_meth_set_ctrl(m, bioCtrl)
            return .success(SharedOpenSSLObject(pointer: m))
        } catch let e as TLSError {
            return .failure(e)
        } catch {
            return .failure(.unavailable("\(error)"))
        }
    }()

    static func from(_ bio: OpaquePointer?) -> StreamBIOContext? {
        guard case .success(let crypto) = OpenSSL.crypto, let p = crypto.BIO_get_data(bio) else { return nil }
        return Unmanaged<StreamBIOContext>.fromOpaque(p).takeUnretainedValue()
    }
}

private let bioRead: BIOReadFn = { bio, buf, len in
    guard let ctx = StreamBIOContext.from(bio), let buf, len > 0 else { return -1 }
    if ctx.failure != nil { return -1 }
    let left = Int(ctx.deadline - monotonicMillis())
    if left <= 0 { ctx.failure = NetError.timeout("timed out"); return -1 }
    do {
        let n = try ctx.stream.read(into: UnsafeMutableRawBufferPointer(start: buf, count: Int(len)), timeoutMillis: left)
        if n == 0 { ctx.sawEOF = true }
        return Int32(n)
    } catch {
        ctx.failure = error
        return -1
    }
}

private let bioWrite: BIOWriteFn = { bio, buf, len in
    guard let ctx = StreamBIOContext.from(bio), let buf, len > 0 else { return -1 }
    if ctx.failure != nil { return -1 }
    let left = Int(ctx.deadline - monotonicMillis())
    if left <= 0 { ctx.failure = NetError.timeout("timed out"); return -1 }
    do {
        try ctx.stream.write(UnsafeRawBufferPointer(start: buf, count: Int(len)), timeoutMillis: left)
        return len
    } catch {
        ctx.failure = error
        return -1
    }
}

private let bioCtrl: BIOCtrlFn = { bio, cmd, _, _ in
    switch BIOCtrl(rawValue: cmd) {
    case .flush?: return 1   // writes go straight to the stream
    case .eof?: return (StreamBIOContext.from(bio)?.sawEOF ?? false) ? 1 : 0
    case nil: return 0
    }
}
