// The values rtdb passes to and reads from OpenSSL 3, as types: each C call that takes or
// returns one of them is reached through a method of LibSSL or LibCrypto that takes or returns
// the type, so a mode cannot be sent as a ctrl command, nor an option as a mode. The numbers
// are those of OpenSSL 3's public headers (a stable ABI); each case names its C macro.

/// What `SSL_get_error` says about a call that returned 0 or less (ssl.h, `SSL_ERROR_*`).
enum SSLErrorCode: Int32 {
    case none = 0                       // SSL_ERROR_NONE
    case ssl = 1                        // SSL_ERROR_SSL
    case wantRead = 2                   // SSL_ERROR_WANT_READ
    case wantWrite = 3                  // SSL_ERROR_WANT_WRITE
    case wantX509Lookup = 4             // SSL_ERROR_WANT_X509_LOOKUP
    case syscall = 5                    // SSL_ERROR_SYSCALL
    case zeroReturn = 6                 // SSL_ERROR_ZERO_RETURN
    case wantConnect = 7                // SSL_ERROR_WANT_CONNECT
    case wantAccept = 8                 // SSL_ERROR_WANT_ACCEPT
    case wantAsync = 9                  // SSL_ERROR_WANT_ASYNC
    case wantAsyncJob = 10              // SSL_ERROR_WANT_ASYNC_JOB
    case wantClientHelloCallback = 11   // SSL_ERROR_WANT_CLIENT_HELLO_CB
    case wantRetryVerify = 12           // SSL_ERROR_WANT_RETRY_VERIFY
}

/// The `SSL_ctrl` / `SSL_CTX_ctrl` commands behind the ssl.h macros rtdb uses; only LibSSL's
/// methods for those macros send them, each with the argument its command expects.
enum SSLCtrl: Int32 {
    case mode = 33                      // SSL_CTRL_MODE (SSL_CTX_set_mode)
    case setTLSExtHostname = 55         // SSL_CTRL_SET_TLSEXT_HOSTNAME (SSL_set_tlsext_host_name)
    case setMinProtoVersion = 123       // SSL_CTRL_SET_MIN_PROTO_VERSION (SSL_CTX_set_min_proto_version)
}

/// Behaviours of a context's connections, set with `SSL_CTX_set_mode` (ssl.h, `SSL_MODE_*`).
struct SSLMode: OptionSet {
    let rawValue: Int
    static let enablePartialWrite = SSLMode(rawValue: 0x1)          // SSL_MODE_ENABLE_PARTIAL_WRITE
    static let acceptMovingWriteBuffer = SSLMode(rawValue: 0x2)     // SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
}

/// Protocol options of a context, set with `SSL_CTX_set_options` (ssl.h, `SSL_OP_*`).
struct SSLOptions: OptionSet {
    let rawValue: UInt64
    static let ignoreUnexpectedEOF = SSLOptions(rawValue: 1 << 7)   // SSL_OP_IGNORE_UNEXPECTED_EOF
    static let noRenegotiation = SSLOptions(rawValue: 1 << 30)      // SSL_OP_NO_RENEGOTIATION
}

/// How a context checks its peer, set with `SSL_CTX_set_verify` (ssl.h, `SSL_VERIFY_*`).
struct SSLVerifyMode: OptionSet {
    let rawValue: Int32
    static let peer = SSLVerifyMode(rawValue: 0x1)                  // SSL_VERIFY_PEER
}

/// Protocol versions, for the oldest one a context accepts (prov_ssl.h).
enum TLSProtocolVersion: Int {
    case tls12 = 0x0303                 // TLS1_2_VERSION
}

/// The encoding of a certificate or key file (ssl.h, `SSL_FILETYPE_*`).
enum SSLFileType: Int32 {
    case pem = 1                        // SSL_FILETYPE_PEM (X509_FILETYPE_PEM)
}

/// The commands OpenSSL sends to rtdb's stream BIO that it answers (bio.h, `BIO_CTRL_*`);
/// any other command is answered 0 (not supported).
enum BIOCtrl: Int32 {
    case eof = 2                        // BIO_CTRL_EOF
    case flush = 11                     // BIO_CTRL_FLUSH
}

/// The kind of a new BIO method, or'ed with the index `BIO_get_new_index` gives (bio.h).
enum BIOType: Int32 {
    case sourceSink = 0x0400            // BIO_TYPE_SOURCE_SINK
}

/// The outcome of certificate verification, from `SSL_get_verify_result` (x509_vfy.h,
/// `X509_V_*`). OpenSSL defines some ninety reasons and rtdb tells apart only these; any
/// other is carried as its number and described by OpenSSL's own text.
struct X509VerifyResult: RawRepresentable, Equatable {
    let rawValue: Int
    static let ok = X509VerifyResult(rawValue: 0)                   // X509_V_OK
    static let hostnameMismatch = X509VerifyResult(rawValue: 62)    // X509_V_ERR_HOSTNAME_MISMATCH
    static let ipAddressMismatch = X509VerifyResult(rawValue: 64)   // X509_V_ERR_IP_ADDRESS_MISMATCH

    /// The chain verified but names another host or address than the one asked for.
    var isNameMismatch: Bool { self == .hostnameMismatch || self == .ipAddressMismatch }
}

/// The algorithm of a key (evp.h, `EVP_PKEY_*`).
enum EVPKeyType: Int32 {
    case rsa = 6                        // EVP_PKEY_RSA (NID_rsaEncryption)
}
