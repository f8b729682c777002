#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// OpenSSL 3, loaded with dlopen the first time TLS or signing is used, never at start-up: the
// binary has no link-time dependency on libssl or libcrypto, so a local command does not pay
// for them (about a millisecond per process start on Linux). The few functions rtdb calls are
// declared here as C function types and resolved with dlsym; OpenSSL macros (SNI, minimum
// version, modes) are spelled as the `*_ctrl` calls they expand to. A call that takes or
// returns one of OpenSSL's numbered values is private behind a method that takes or returns
// its type (OpenSSLValues). Where the libraries are looked for: OpenSSLLocations.

/// A TLS, certificate or signing failure, with a sentence fit for the user.
public enum TLSError: Error, CustomStringConvertible, Equatable, Sendable {
    /// OpenSSL 3 could not be loaded (or lacks a function rtdb needs).
    case unavailable(String)
    /// The peer's certificate chain or name did not verify.
    case verification(String)
    /// The handshake or a TLS record failed for another reason.
    case protocolFailure(String)
    /// A certificate, key or CA file cannot be used.
    case configuration(String)
    /// A private key cannot be used for signing.
    case badKey(String)

    public var message: String {
        switch self {
        case .unavailable(let m), .verification(let m), .protocolFailure(let m),
             .configuration(let m), .badKey(let m):
            return m
        }
    }

    public var description: String { message }
}

// MARK: - C function types

typealias VoidFn = @convention(c) () -> Void
typealias PointerFn = @convention(c) () -> OpaquePointer?
typealias PointerArgFn = @convention(c) (OpaquePointer?) -> OpaquePointer?
typealias FreeFn = @convention(c) (OpaquePointer?) -> Void
typealias IntArgFn = @convention(c) (OpaquePointer?) -> Int32
typealias CtrlFn = @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
typealias PathFn = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32

typealias BIOReadFn = @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int32) -> Int32
typealias BIOWriteFn = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32
typealias BIOCtrlFn = @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
typealias PasswordFn = @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32

// MARK: - Loading

/// A dlopen'ed library; symbols are looked up by name and cast to their declared C type.
struct DynamicLibrary {
    let handle: UnsafeMutableRawPointer
    let name: String

    /// Tries each file name in turn; the error is the first one's dlerror.
    static func open(_ names: [String]) throws -> DynamicLibrary {
        try open(OpenSSLLocations(names: names, override: nil), hint: nil)
    }

    /// Tries each of `locations` in turn. The error names the variable that gave them, if one
    /// did, then the first dlerror, then `hint` (how to install the library).
    static func open(_ locations: OpenSSLLocations, hint: String?) throws -> DynamicLibrary {
        var firstError: String? = nil
        for name in locations.names {
            if let h = dlopen(name, RTLD_NOW | RTLD_LOCAL) { return DynamicLibrary(handle: h, name: name) }
            if firstError == nil { firstError = dlerror().map { String(cString: $0) } ?? "\(name) not found" }
        }
        var message = OpenSSLLocations.requirement() + ": "
        if let variable = locations.override { message += "\(variable) names a library that cannot be loaded: " }
        message += firstError ?? "not found"
        if let hint { message += "; " + hint }
        throw TLSError.unavailable(message)
    }

    func symbol<T>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let p = dlsym(handle, name) else {
            throw TLSError.unavailable("\(OpenSSLLocations.requirement()): \(self.name) has no \(name)")
        }
        return unsafeBitCast(p, to: T.self)
    }
}

/// The libcrypto functions rtdb uses (errors, memory BIOs, keys, digests, signatures): C
/// function pointers, resolved once and never changed, so the table is Sendable as it stands.
final class LibCrypto: Sendable {
    let ERR_get_error: @convention(c) () -> UInt
    let ERR_error_string_n: @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void
    let ERR_clear_error: VoidFn
    let BIO_new_mem_buf: @convention(c) (UnsafeRawPointer?, Int32) -> OpaquePointer?
    let BIO_new: PointerArgFn
    let BIO_free: IntArgFn
    let BIO_get_new_index: @convention(c) () -> Int32
    private let BIO_meth_new: @convention(c) (Int32, UnsafePointer<CChar>?) -> OpaquePointer?
    let BIO_meth_set_write: @convention(c) (OpaquePointer?, BIOWriteFn?) -> Int32
    let BIO_meth_set_read: @convention(c) (OpaquePointer?, BIOReadFn?) -> Int32
    let BIO_meth_set_ctrl: @convention(c) (OpaquePointer?, BIOCtrlFn?) -> Int32
    let BIO_set_data: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
    let BIO_get_data: @convention(c) (OpaquePointer?) -> UnsafeMutableRawPointer?
    let BIO_set_init: @convention(c) (OpaquePointer?, Int32) -> Void
    let PEM_read_bio_PrivateKey: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, PasswordFn?, UnsafeMutableRawPointer?) -> OpaquePointer?
    let EVP_PKEY_free: FreeFn
    private let EVP_PKEY_get_base_id: IntArgFn
    let EVP_MD_CTX_new: PointerFn
    let EVP_MD_CTX_free: FreeFn
    let EVP_sha256: PointerFn
    let EVP_DigestSignInit: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    let EVP_DigestSign: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?, UnsafePointer<UInt8>?, Int) -> Int32
    private let X509_verify_cert_error_string: @convention(c) (Int) -> UnsafePointer<CChar>?
    let X509_VERIFY_PARAM_set1_ip_asc: PathFn
    let X509_get_default_cert_file: @convention(c) () -> UnsafePointer<CChar>?
    let X509_get_default_cert_dir: @convention(c) () -> UnsafePointer<CChar>?
    let X509_get_default_cert_file_env: @convention(c) () -> UnsafePointer<CChar>?
    let X509_get_default_cert_dir_env: @convention(c) () -> UnsafePointer<CChar>?
    // Certificates given in memory (macOS's keychain roots): read from a BIO, added to a store.
    let PEM_read_bio_X509: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, PasswordFn?, UnsafeMutableRawPointer?) -> OpaquePointer?
    let X509_free: FreeFn
    let X509_STORE_add_cert: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    // RS256 verification with a public key given as modulus and exponent (JWKS).
    let BN_bin2bn: @convention(c) (UnsafePointer<UInt8>?, Int32, OpaquePointer?) -> OpaquePointer?
    let BN_free: FreeFn
    let RSA_new: PointerFn
    let RSA_free: FreeFn
    let RSA_set0_key: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    let EVP_PKEY_new: PointerFn
    private let EVP_PKEY_assign: @convention(c) (OpaquePointer?, Int32, UnsafeMutableRawPointer?) -> Int32
    let EVP_DigestVerifyInit: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    let EVP_DigestVerify: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32

    init(_ lib: DynamicLibrary) throws {
        BN_bin2bn = try lib.symbol("BN_bin2bn")
        BN_free = try lib.symbol("BN_free")
        RSA_new = try lib.symbol("RSA_new")
        RSA_free = try lib.symbol("RSA_free")
        RSA_set0_key = try lib.symbol("RSA_set0_key")
        EVP_PKEY_new = try lib.symbol("EVP_PKEY_new")
        EVP_PKEY_assign = try lib.symbol("EVP_PKEY_assign")
        EVP_DigestVerifyInit = try lib.symbol("EVP_DigestVerifyInit")
        EVP_DigestVerify = try lib.symbol("EVP_DigestVerify")
        ERR_get_error = try lib.symbol("ERR_get_error")
        ERR_error_string_n = try lib.symbol("ERR_error_string_n")
        ERR_clear_error = try lib.symbol("ERR_clear_error")
        BIO_new_mem_buf = try lib.symbol("BIO_new_mem_buf")
        BIO_new = try lib.symbol("BIO_new")
        BIO_free = try lib.symbol("BIO_free")
        BIO_get_new_index = try lib.symbol("BIO_get_new_index")
        BIO_meth_new = try lib.symbol("BIO_meth_new")
        BIO_meth_set_write = try lib.symbol("BIO_meth_set_write")
        BIO_meth_set_read = try lib.symbol("BIO_meth_set_read")
        BIO_meth_set_ctrl = try lib.symbol("BIO_meth_set_ctrl")
        BIO_set_data = try lib.symbol("BIO_set_data")
        BIO_get_data = try lib.symbol("BIO_get_data")
        BIO_set_init = try lib.symbol("BIO_set_init")
        PEM_read_bio_PrivateKey = try lib.symbol("PEM_read_bio_PrivateKey")
        EVP_PKEY_free = try lib.symbol("EVP_PKEY_free")
        EVP_PKEY_get_base_id = try lib.symbol("EVP_PKEY_get_base_id")
        EVP_MD_CTX_new = try lib.symbol("EVP_MD_CTX_new")
        EVP_MD_CTX_free = try lib.symbol("EVP_MD_CTX_free")
        EVP_sha256 = try lib.symbol("EVP_sha256")
        EVP_DigestSignInit = try lib.symbol("EVP_DigestSignInit")
        EVP_DigestSign = try lib.symbol("EVP_DigestSign")
        X509_verify_cert_error_string = try lib.symbol("X509_verify_cert_error_string")
        X509_VERIFY_PARAM_set1_ip_asc = try lib.symbol("X509_VERIFY_PARAM_set1_ip_asc")
        X509_get_default_cert_file = try lib.symbol("X509_get_default_cert_file")
        X509_get_default_cert_dir = try lib.symbol("X509_get_default_cert_dir")
        X509_get_default_cert_file_env = try lib.symbol("X509_get_default_cert_file_env")
        X509_get_default_cert_dir_env = try lib.symbol("X509_get_default_cert_dir_env")
        PEM_read_bio_X509 = try lib.symbol("PEM_read_bio_X509")
        X509_free = try lib.symbol("X509_free")
        X509_STORE_add_cert = try lib.symbol("X509_STORE_add_cert")
    }

    /// A new BIO method of kind `type`, under an index of its own.
    func newBIOMethod(_ type: BIOType, name: String) -> OpaquePointer? {
        BIO_meth_new(BIO_get_new_index() | type.rawValue, name)
    }

    /// The algorithm of `key`; nil for one rtdb has no name for.
    func keyType(of key: OpaquePointer) -> EVPKeyType? {
        EVPKeyType(rawValue: EVP_PKEY_get_base_id(key))
    }

    /// Makes `key` a key of `type` holding `material` (an RSA for `.rsa`), which it then owns;
    /// false when it did not take it.
    func assign(_ key: OpaquePointer, _ type: EVPKeyType, _ material: OpaquePointer) -> Bool {
        EVP_PKEY_assign(key, type.rawValue, UnsafeMutableRawPointer(material)) == 1
    }

    /// OpenSSL's sentence for a verification result, e.g. "self-signed certificate".
    func describe(_ result: X509VerifyResult) -> String? {
        X509_verify_cert_error_string(result.rawValue).map { String(cString: $0) }
    }

    /// The reasons OpenSSL queued for the last failure (oldest first), emptying the queue;
    /// e.g. "no start line" rather than the full "error:0480006C:PEM routines::no start line".
    func drainErrors() -> [String] {
        var out: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            let full = cString(buf)
            let reason = full.split(separator: ":", omittingEmptySubsequences: false).last.map(String.init) ?? full
            out.append(reason.isEmpty ? full : reason)
        }
        return out
    }

    /// The first queued reason (the root cause; later ones say where it surfaced), or
    /// `fallback` when OpenSSL queued none.
    func reason(or fallback: String) -> String {
        drainErrors().first ?? fallback
    }
}

/// The libssl functions rtdb uses (contexts, connections, verification); Sendable as
/// `LibCrypto` is.
final class LibSSL: Sendable {
    let crypto: LibCrypto
    let TLS_client_method: PointerFn
    let TLS_server_method: PointerFn
    let SSL_CTX_new: PointerArgFn
    let SSL_CTX_free: FreeFn
    private let SSL_CTX_ctrl: CtrlFn
    private let SSL_CTX_set_options: @convention(c) (OpaquePointer?, UInt64) -> UInt64
    private let SSL_CTX_set_verify: @convention(c) (OpaquePointer?, Int32, UnsafeRawPointer?) -> Void
    let SSL_CTX_set_default_verify_paths: IntArgFn
    let SSL_CTX_load_verify_locations: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    let SSL_CTX_use_certificate_chain_file: PathFn
    private let SSL_CTX_use_PrivateKey_file: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32
    let SSL_CTX_check_private_key: IntArgFn
    let SSL_new: PointerArgFn
    let SSL_free: FreeFn
    let SSL_set_fd: @convention(c) (OpaquePointer?, Int32) -> Int32
    let SSL_set_bio: @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Void
    private let SSL_ctrl: CtrlFn
    let SSL_set1_host: PathFn
    let SSL_get0_param: PointerArgFn
    let SSL_connect: IntArgFn
    let SSL_accept: IntArgFn
    let SSL_shutdown: IntArgFn
    let SSL_read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    let SSL_write: @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
    private let SSL_get_error: @convention(c) (OpaquePointer?, Int32) -> Int32
    private let SSL_get_verify_result: @convention(c) (OpaquePointer?) -> Int
    let SSL_pending: IntArgFn
    let SSL_get_version: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    let SSL_CTX_get_cert_store: PointerArgFn

    init(_ lib: DynamicLibrary, crypto: LibCrypto) throws {
        self.crypto = crypto
        TLS_client_method = try lib.symbol("TLS_client_method")
        TLS_server_method = try lib.symbol("TLS_server_method")
        SSL_CTX_new = try lib.symbol("SSL_CTX_new")
        SSL_CTX_free = try lib.symbol("SSL_CTX_free")
        SSL_CTX_ctrl = try lib.symbol("SSL_CTX_ctrl")
        SSL_CTX_set_options = try lib.symbol("SSL_CTX_set_options")
        SSL_CTX_set_verify = try lib.symbol("SSL_CTX_set_verify")
        SSL_CTX_set_default_verify_paths = try lib.symbol("SSL_CTX_set_default_verify_paths")
        SSL_CTX_load_verify_locations = try lib.symbol("SSL_CTX_load_verify_locations")
        SSL_CTX_use_certificate_chain_file = try lib.symbol("SSL_CTX_use_certificate_chain_file")
        SSL_CTX_use_PrivateKey_file = try lib.symbol("SSL_CTX_use_PrivateKey_file")
        SSL_CTX_check_private_key = try lib.symbol("SSL_CTX_check_private_key")
        SSL_new = try lib.symbol("SSL_new")
        SSL_free = try lib.symbol("SSL_free")
        SSL_set_fd = try lib.symbol("SSL_set_fd")
        SSL_set_bio = try lib.symbol("SSL_set_bio")
        SSL_ctrl = try lib.symbol("SSL_ctrl")
        SSL_set1_host = try lib.symbol("SSL_set1_host")
        SSL_get0_param = try lib.symbol("SSL_get0_param")
        SSL_connect = try lib.symbol("SSL_connect")
        SSL_accept = try lib.symbol("SSL_accept")
        SSL_shutdown = try lib.symbol("SSL_shutdown")
        SSL_read = try lib.symbol("SSL_read")
        SSL_write = try lib.symbol("SSL_write")
        SSL_get_error = try lib.symbol("SSL_get_error")
        SSL_get_verify_result = try lib.symbol("SSL_get_verify_result")
        SSL_pending = try lib.symbol("SSL_pending")
        SSL_get_version = try lib.symbol("SSL_get_version")
        SSL_CTX_get_cert_store = try lib.symbol("SSL_CTX_get_cert_store")
    }

    /// A new context (SSLContext owns it) with TLS 1.2 as the oldest version and renegotiation off.
    fileprivate func newContext(server: Bool) throws -> OpaquePointer {
        crypto.ERR_clear_error()
        guard let ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.unavailable("cannot create a TLS context: \(crypto.reason(or: "out of memory"))")
        }
        _ = contextCtrl(ctx, .setMinProtoVersion, TLSProtocolVersion.tls12.rawValue, nil)
        setOptions(ctx, .noRenegotiation)
        return ctx
    }

    /// SSL_CTX_set_mode: adds `mode` to the context's modes.
    func setMode(_ ctx: OpaquePointer, _ mode: SSLMode) {
        _ = contextCtrl(ctx, .mode, mode.rawValue, nil)
    }

    /// SSL_CTX_set_options: adds `options` to the context's options.
    func setOptions(_ ctx: OpaquePointer, _ options: SSLOptions) {
        _ = SSL_CTX_set_options(ctx, options.rawValue)
    }

    /// SSL_CTX_set_verify, with OpenSSL's own verification (no callback).
    func setVerify(_ ctx: OpaquePointer, _ mode: SSLVerifyMode) {
        SSL_CTX_set_verify(ctx, mode.rawValue, nil)
    }

    /// SSL_CTX_use_PrivateKey_file; false when the file holds no usable key of `type`.
    func usePrivateKeyFile(_ ctx: OpaquePointer, _ path: String, _ type: SSLFileType) -> Bool {
        SSL_CTX_use_PrivateKey_file(ctx, path, type.rawValue) == 1
    }

    /// SSL_set_tlsext_host_name: the name the client sends in SNI.
    func setServerName(_ ssl: OpaquePointer, _ name: String) {
        var cname = Array(name.utf8CString)
        _ = cname.withUnsafeMutableBytes {
            connectionCtrl(ssl, .setTLSExtHostname, 0 /* TLSEXT_NAMETYPE_host_name */, $0.baseAddress)
        }
    }

    /// SSL_get_error for a call on `ssl` that returned `rc`. OpenSSL 3 returns only the values
    /// SSLErrorCode lists; were another to appear it reads as `.ssl`, a failure of the library.
    func errorCode(_ ssl: OpaquePointer, _ rc: Int32) -> SSLErrorCode {
        SSLErrorCode(rawValue: SSL_get_error(ssl, rc)) ?? .ssl
    }

    /// SSL_get_verify_result: how verification of the peer's certificate ended.
    func verifyResult(_ ssl: OpaquePointer) -> X509VerifyResult {
        X509VerifyResult(rawValue: SSL_get_verify_result(ssl))
    }

    private func contextCtrl(_ ctx: OpaquePointer, _ command: SSLCtrl, _ larg: Int, _ parg: UnsafeMutableRawPointer?) -> Int {
        SSL_CTX_ctrl(ctx, command.rawValue, larg, parg)
    }

    private func connectionCtrl(_ ssl: OpaquePointer, _ command: SSLCtrl, _ larg: Int, _ parg: UnsafeMutableRawPointer?) -> Int {
        SSL_ctrl(ssl, command.rawValue, larg, parg)
    }
}

/// An OpenSSL object that is set up by the one thread that makes it and only read once it is
/// shared: an SSL_CTX whose settings are final (OpenSSL lets threads make connections from it
/// at once), a BIO_METHOD whose callbacks are set. Holding one says nothing about who frees it.
// Unchecked: OpaquePointer is not Sendable, but OpenSSL allows sharing these objects once only read.
struct SharedOpenSSLObject: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// An SSL_CTX: the settings a client's or server's connections are made from, freed when its
/// owner lets it go. A connection made from it holds a reference of its own (OpenSSL counts
/// them), so it may outlive the context. Its settings are all made before it is shared
/// (TLSServerContext's init; a client's connect, whose context is its own).
final class SSLContext: Sendable {
    let lib: LibSSL
    private let handle: SharedOpenSSLObject
    var pointer: OpaquePointer { handle.pointer }

    /// A client's or server's context, TLS 1.2 the oldest version it accepts, renegotiation off.
    init(_ lib: LibSSL, server: Bool) throws {
        self.lib = lib
        handle = SharedOpenSSLObject(pointer: try lib.newContext(server: server))
    }

    deinit { lib.SSL_CTX_free(pointer) }
}

/// Loads OpenSSL on first use. `crypto` alone is enough for signing; `ssl` loads both.
enum OpenSSL {
    static let crypto: Result<LibCrypto, TLSError> = load {
        try LibCrypto(DynamicLibrary.open(.of(.crypto), hint: OpenSSLLocations.installHint()))
    }

    static let ssl: Result<LibSSL, TLSError> = load {
        let c = try crypto.get()
        return try LibSSL(DynamicLibrary.open(.of(.ssl), hint: OpenSSLLocations.installHint()), crypto: c)
    }

    private static func load<T>(_ body: () throws -> T) -> Result<T, TLSError> {
        do { return .success(try body()) } catch let e as TLSError { return .failure(e) } catch {
            return .failure(.unavailable("\(OpenSSLLocations.requirement()): \(error)"))
        }
    }

    /// True once libssl or libcrypto is mapped into this process (for start-up tests).
    static func isLoaded(_ file: String) -> Bool {
        dlopen(file, RTLD_NOW | RTLD_NOLOAD).map { dlclose($0); return true } ?? false
    }
}
