#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's certificate chain and key, checked once at start-up, for serving https on a
/// non-blocking event loop. One context serves every connection; once made it is only read
/// (OpenSSL allows sharing a configured context between threads).
public final class TLSServerContext: Sendable {
    let context: SSLContext
    var lib: LibSSL { context.lib }

    /// Loads `certificateFile` (PEM: the server's certificate, then any intermediates) and
    /// `keyFile` (PEM, unencrypted), and checks that they belong together. Throws
    /// TLSError.configuration naming the file and the reason, or .unavailable.
    public init(certificateFile: String, keyFile: String) throws {
        let lib = try OpenSSL.ssl.get()
        try checkReadable(certificateFile, what: "certificate file")
        try checkReadable(keyFile, what: "key file")
        let context = try SSLContext(lib, server: true)
        let ctx = context.pointer
        let crypto = lib.crypto
        crypto.ERR_clear_error()
        if lib.SSL_CTX_use_certificate_chain_file(ctx, certificateFile) != 1 {
            throw TLSError.configuration("certificate file \(certificateFile) holds no usable PEM certificate: \(crypto.reason(or: "unreadable"))")
        }
        // Refuse encrypted keys at once rather than prompt for a password on the terminal.
        // (SSL_CTX_use_PrivateKey_file asks through the context's callback, which defaults
        // to a prompt; the key is read here first through one that supplies no password.)
        if let problem = TLSServerContext.keyProblem(crypto, keyFile) {
            throw TLSError.configuration("key file \(keyFile) \(problem)")
        }
        if !lib.usePrivateKeyFile(ctx, keyFile, .pem) || lib.SSL_CTX_check_private_key(ctx) != 1 {
            crypto.ERR_clear_error()
            throw TLSError.configuration("key file \(keyFile) does not match the certificate in \(certificateFile)")
        }
        // The event loop retries a write with a buffer that may have moved and grown.
        lib.setMode(ctx, [.enablePartialWrite, .acceptMovingWriteBuffer])
        self.context = context
    }

    /// Reads the key file through a password callback that supplies none; nil when it parses.
    private static func keyProblem(_ crypto: LibCrypto, _ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return "cannot be read: \(String(cString: strerror(errno)))" }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        close(fd)
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("ENCRYPTED") { return "is encrypted (a server key must be unencrypted)" }
        if !text.contains("PRIVATE KEY-----") { return "holds no PEM private key (no \"-----BEGIN PRIVATE KEY-----\" block)" }
        return bytes.withUnsafeBytes { b -> String? in
            guard let bio = crypto.BIO_new_mem_buf(b.baseAddress, Int32(clamping: b.count)) else { return "cannot be read" }
            defer { _ = crypto.BIO_free(bio) }
            guard let key = crypto.PEM_read_bio_PrivateKey(bio, nil, noServerKeyPassword, nil) else {
                return "holds no usable PEM private key: \(crypto.reason(or: "unreadable"))"
            }
            crypto.EVP_PKEY_free(key)
            return nil
        }
    }

    /// A TLS session for an accepted, non-blocking socket. The session does not own `fd`.
    public func session(fd: Int32) -> TLSServerSession? {
        lib.crypto.ERR_clear_error()
        guard let ssl = lib.SSL_new(context.pointer) else { return nil }
        if lib.SSL_set_fd(ssl, fd) != 1 {
            lib.SSL_free(ssl)
            lib.crypto.ERR_clear_error()
            return nil
        }
        return TLSServerSession(lib: lib, ssl: ssl)
    }
}

private let noServerKeyPassword: PasswordFn = { _, _, _, _ in 0 }

/// One server-side TLS connection over a non-blocking socket. Reads and writes never block:
/// OpenSSL's WANT_READ / WANT_WRITE become `.wouldBlock`, with `wantsWritable` telling the
/// loop to wait for the socket to drain (a handshake or record that could not be sent in
/// full). The handshake runs inside the first reads; until it completes no data is returned,
/// so the loop's idle timeout covers handshakes too. A client that does not speak TLS (plain
/// HTTP on the https port) fails the handshake and reads as `.failed`.
public final class TLSServerSession {
    let lib: LibSSL
    private var ssl: OpaquePointer?
    public private(set) var handshakeDone = false
    /// The last call stopped because the socket could not take more bytes.
    public private(set) var wantsWritable = false
    /// Why the session failed (for the server's log), when it did.
    public private(set) var failure: String? = nil

    init(lib: LibSSL, ssl: OpaquePointer) {
        self.lib = lib
        self.ssl = ssl
    }

    deinit { free() }

    /// Decrypted bytes already read from the socket but not yet returned: the loop must read
    /// again, since the socket itself will not signal readiness for them.
    public var hasBufferedInput: Bool {
        guard let ssl, handshakeDone else { return false }
        return lib.SSL_pending(ssl) > 0
    }

    private func step(_ rc: Int32) -> IOResult {
        guard let ssl else { return .closed }
        let code = lib.errorCode(ssl, rc)
        switch code {
        case .wantRead:
            return .wouldBlock
        case .wantWrite:
            wantsWritable = true
            return .wouldBlock
        case .zeroReturn:
            return .closed
        case .syscall:
            let e = errno
            let reasons = lib.crypto.drainErrors()
            if let r = reasons.last { failure = r; return .failed(EPROTO) }
            // End of stream without close_notify, or a reset: the peer is gone.
            return (rc == 0 || e == ECONNRESET || e == EPIPE || e == 0) ? .closed : .failed(e)
        case .none, .ssl, .wantX509Lookup, .wantConnect, .wantAccept, .wantAsync, .wantAsyncJob,
             .wantClientHelloCallback, .wantRetryVerify:
            // None of these callbacks or asynchronous modes is in use: only a failure gets here.
            failure = lib.crypto.reason(or: "TLS error \(code.rawValue)")
            return .failed(EPROTO)
        }
    }

    /// Continues the handshake; `.done(0)` once it is complete.
    private func handshake() -> IOResult {
        guard let ssl else { return .closed }
        lib.crypto.ERR_clear_error()
        let rc = lib.SSL_accept(ssl)
        if rc == 1 { handshakeDone = true; return .done(0) }
        return step(rc)
    }

    /// Like SocketIO.read: `.done(n)` with n > 0, `.wouldBlock`, `.closed` or `.failed`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        wantsWritable = false
        guard let ssl else { return .closed }
        if !handshakeDone {
            let r = handshake()
            guard case .done = r else { return r }
        }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .wouldBlock }
        lib.crypto.ERR_clear_error()
        let n = lib.SSL_read(ssl, base, Int32(clamping: buffer.count))
        if n > 0 { return .done(Int(n)) }
        return step(n)
    }

    /// Like SocketIO.write: `.done(n)` for the n bytes taken (maybe fewer than offered). A
    /// write after `.wouldBlock` must offer the same bytes again (more may follow them).
    public func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        wantsWritable = false
        guard let ssl else { return .closed }
        if !handshakeDone {
            let r = handshake()
            guard case .done = r else { return r }
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .done(0) }
        lib.crypto.ERR_clear_error()
        let n = lib.SSL_write(ssl, base, Int32(clamping: bytes.count))
        if n > 0 { return .done(Int(n)) }
        return step(n)
    }

    /// Sends close_notify when the handshake completed (one attempt, never waiting), then
    /// frees the session. The caller closes the socket.
    public func shutdown() {
        if let ssl, handshakeDone, failure == nil {
            lib.crypto.ERR_clear_error()
            _ = lib.SSL_shutdown(ssl)
        }
        free()
    }

    private func free() {
        if let ssl {
            lib.SSL_free(ssl)
            lib.crypto.ERR_clear_error()
        }
        ssl = nil
    }
}

/// How a server connection's bytes travel: straight over the socket, or through TLS. The
/// event loop calls these in place of SocketIO, with the same results.
public enum ConnectionIO {
    case plain(Int32)
    case tls(Int32, TLSServerSession)

    public var fd: Int32 {
        switch self {
        case .plain(let fd), .tls(let fd, _): return fd
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        switch self {
        case .plain(let fd): return SocketIO.read(fd, into: buffer)
        case .tls(_, let s): return s.read(into: buffer)
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        switch self {
        case .plain(let fd): return SocketIO.write(fd, bytes)
        case .tls(_, let s): return s.write(bytes)
        }
    }

    /// More input is waiting inside TLS, beyond what the socket would signal.
    public var hasBufferedInput: Bool {
        if case .tls(_, let s) = self { return s.hasBufferedInput }
        return false
    }

    /// The last call needs the socket to become writable before it can go on.
    public var wantsWritable: Bool {
        if case .tls(_, let s) = self { return s.wantsWritable }
        return false
    }

    /// Ends TLS (close_notify) and closes the socket.
    public func close() {
        if case .tls(_, let s) = self { s.shutdown() }
        _ = systemClose(fd)
    }
}
