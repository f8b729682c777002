/// RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256), as a JWT for Google's OAuth token
/// endpoint needs, made by libcrypto (loaded on first use, like TLS).
public enum RSASigner {
    /// The signature of `data` with a PEM RSA private key: PKCS#8 ("BEGIN PRIVATE KEY", as in
    /// Google service-account key files) or PKCS#1 ("BEGIN RSA PRIVATE KEY"). An encrypted key,
    /// a key of another type or text that is no key is refused with TLSError.badKey; OpenSSL
    /// missing is TLSError.unavailable. The key text never appears in an error.
    public static func signRS256(pemPrivateKey: String, data: [UInt8]) throws -> [UInt8] {
        let crypto = try OpenSSL.crypto.get()
        crypto.ERR_clear_error()
        defer { crypto.ERR_clear_error() }
        let pem = Array(pemPrivateKey.utf8)
        guard !pem.isEmpty, pem.count < Int(Int32.max) else { throw TLSError.badKey("the private key is empty") }
        // The memory BIO reads `pem` in place, so it lives and dies inside this closure.
        // The callback supplies no password: an encrypted key fails instead of prompting.
        let key: OpaquePointer? = try pem.withUnsafeBytes { bytes in
            guard let bio = crypto.BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else {
                throw TLSError.badKey("cannot read the private key: \(crypto.reason(or: "out of memory"))")
            }
            defer { _ = crypto.BIO_free(bio) }
            return crypto.PEM_read_bio_PrivateKey(bio, nil, noPassword, nil)
        }
        guard let key else {
            throw TLSError.badKey("the private key is not a PEM private key (\(crypto.reason(or: "unreadable")))")
        }
        defer { crypto.EVP_PKEY_free(key) }
        guard crypto.keyType(of: key) == .rsa else {
            throw TLSError.badKey("the private key is not an RSA key (RS256 needs one)")
        }
        guard let md = crypto.EVP_MD_CTX_new() else { throw TLSError.badKey("cannot sign: out of memory") }
        defer { crypto.EVP_MD_CTX_free(md) }
        guard crypto.EVP_DigestSignInit(md, nil, crypto.EVP_sha256(), nil, key) == 1 else {
            throw TLSError.badKey("cannot sign with the private key: \(crypto.reason(or: "refused"))")
        }
        var length = 0
        let ok = data.withUnsafeBufferPointer { d in
            crypto.EVP_DigestSign(md, nil, &length, d.baseAddress, d.count) == 1
        }
        guard ok, length > 0 else {
            throw TLSError.badKey("cannot sign with the private key: \(crypto.reason(or: "refused"))")
        }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = signature.withUnsafeMutableBufferPointer { s in
            data.withUnsafeBufferPointer { d in
                crypto.EVP_DigestSign(md, s.baseAddress, &length, d.baseAddress, d.count) == 1
            }
        }
        guard signed else {
            throw TLSError.badKey("cannot sign with the private key: \(crypto.reason(or: "refused"))")
        }
        return Array(signature.prefix(length))
    }
}

private let noPassword: PasswordFn = { _, _, _, _ in 0 }

/// RS256 verification (RSASSA-PKCS1-v1_5 with SHA-256) with an RSA public key given as its
/// modulus and exponent (big-endian bytes, as a JWKS publishes them), by libcrypto loaded on
/// first use. Checks Firebase ID tokens against Google's keys.
public enum RSAVerifier {
    public static func verifyRS256(input: [UInt8], signature: [UInt8], modulus: [UInt8], exponent: [UInt8]) throws -> Bool {
        let crypto = try OpenSSL.crypto.get()
        crypto.ERR_clear_error()
        defer { crypto.ERR_clear_error() }
        guard !modulus.isEmpty, !exponent.isEmpty, modulus.count <= 1024, exponent.count <= 16 else {
            throw TLSError.badKey("the public key's modulus or exponent is out of range")
        }
        guard let n = modulus.withUnsafeBufferPointer({ crypto.BN_bin2bn($0.baseAddress, Int32($0.count), nil) }),
              let e = exponent.withUnsafeBufferPointer({ crypto.BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw TLSError.badKey("cannot read the public key")
        }
        guard let rsa = crypto.RSA_new() else { crypto.BN_free(n); crypto.BN_free(e); throw TLSError.badKey("out of memory") }
        // RSA_set0_key takes the numbers; EVP_PKEY_assign then takes the key.
        guard crypto.RSA_set0_key(rsa, n, e, nil) == 1 else {
            crypto.BN_free(n); crypto.BN_free(e); crypto.RSA_free(rsa)
            throw TLSError.badKey("cannot build the public key")
        }
        guard let key = crypto.EVP_PKEY_new() else { crypto.RSA_free(rsa); throw TLSError.badKey("out of memory") }
        defer { crypto.EVP_PKEY_free(key) }
        guard crypto.assign(key, .rsa, rsa) else {
            crypto.RSA_free(rsa)
            throw TLSError.badKey("cannot build the public key")
        }
        guard let md = crypto.EVP_MD_CTX_new() else { throw TLSError.badKey("out of memory") }
        defer { crypto.EVP_MD_CTX_free(md) }
        guard crypto.EVP_DigestVerifyInit(md, nil, crypto.EVP_sha256(), nil, key) == 1 else {
            throw TLSError.badKey("cannot verify with the public key")
        }
        let rc = signature.withUnsafeBufferPointer { sig in
            input.withUnsafeBufferPointer { data in
                crypto.EVP_DigestVerify(md, sig.baseAddress, sig.count, data.baseAddress, data.count)
            }
        }
        return rc == 1
    }
}
