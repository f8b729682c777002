#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the system's trusted CA certificates are, found the way OpenSSL's default verify
/// paths find them (SSL_CERT_FILE and SSL_CERT_DIR, else the built-in file and folder, on
/// Debian /usr/lib/ssl/cert.pem and /usr/lib/ssl/certs), but loaded lazily when possible.
/// On macOS, unless one of those variables is set, they are the roots of the system keychain
/// instead (`KeychainRoots`), which is what the system itself trusts: an OpenSSL from Homebrew
/// or MacPorts has a bundle of its own that need not agree with it.
///
/// Parsing the whole CA bundle (about 140 certificates) costs OpenSSL 3 some 20 ms, more than
/// the rest of a request. A folder of certificates named by subject hash (what
/// update-ca-certificates and `openssl rehash` make) holds the same trust and is read one
/// certificate at a time, only for the issuers a chain names. So the folder is used alone when
/// it has hash links; the bundle is loaded when it has none, or when SSL_CERT_FILE names one.
struct SystemTrust: Equatable {
    /// A PEM bundle to load whole, or nil.
    var file: String?
    /// Folders (joined with ":") to look certificates up in by subject hash, or nil.
    var directories: String?
    /// PEM certificates to trust, given in memory (macOS: the keychain's roots), or nil.
    var certificates: [UInt8]? = nil

    /// The locations for this process's environment and OpenSSL's built-in defaults.
    static func locate(_ crypto: LibCrypto) -> SystemTrust {
        func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        let fileVar = text(crypto.X509_get_default_cert_file_env())
        let dirVar = text(crypto.X509_get_default_cert_dir_env())
        #if os(macOS)
        if (fileVar.isEmpty || getenv(fileVar) == nil) && (dirVar.isEmpty || getenv(dirVar) == nil),
           let roots = KeychainRoots.system {
            return SystemTrust(file: nil, directories: nil, certificates: roots)
        }
        #endif
        return locate(fileVariable: fileVar.isEmpty ? nil : getenv(fileVar).map { String(cString: $0) },
                      dirVariable: dirVar.isEmpty ? nil : getenv(dirVar).map { String(cString: $0) },
                      defaultFile: text(crypto.X509_get_default_cert_file()),
                      defaultDir: text(crypto.X509_get_default_cert_dir()),
                      hasHashLinks: SystemTrust.hasHashLinks)
    }

    /// The choice itself, given the environment's values and a folder test.
    static func locate(fileVariable: String?, dirVariable: String?, defaultFile: String, defaultDir: String,
                       hasHashLinks: (String) -> Bool) -> SystemTrust {
        let dirs = (dirVariable?.isEmpty == false ? dirVariable : nil) ?? defaultDir
        let hashed = dirs.split(separator: ":").map(String.init).filter { !$0.isEmpty && hasHashLinks($0) }
        let directories = hashed.isEmpty ? nil : hashed.joined(separator: ":")
        if let f = fileVariable, !f.isEmpty { return SystemTrust(file: f, directories: directories) }
        if directories != nil { return SystemTrust(file: nil, directories: directories) }
        return SystemTrust(file: defaultFile.isEmpty ? nil : defaultFile, directories: nil)
    }

    /// True when `folder` holds at least one entry named like "5ad8a5d6.0" (8 hex digits, a
    /// dot, a number): OpenSSL's subject-hash names.
    static func hasHashLinks(_ folder: String) -> Bool {
        guard let d = opendir(folder) else { return false }
        defer { closedir(d) }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if isHashName(name) { return true }
        }
        return false
    }

    static func isHashName(_ name: [UInt8]) -> Bool {
        guard name.count >= 10, name[8] == UInt8(ascii: ".") else { return false }
        let hex = name[0..<8].allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        let number = name[9...].allSatisfy { (48...57).contains($0) }
        return hex && number
    }

    /// Adds every PEM certificate in `pem` to the verification store of `context`.
    func add(_ pem: [UInt8], to context: OpaquePointer, _ lib: LibSSL) {
        let crypto = lib.crypto
        guard let store = lib.SSL_CTX_get_cert_store(context) else { return }
        pem.withUnsafeBytes { raw in
            guard let bio = crypto.BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return }
            defer { _ = crypto.BIO_free(bio) }
            while let certificate = crypto.PEM_read_bio_X509(bio, nil, nil, nil) {
                _ = crypto.X509_STORE_add_cert(store, certificate)   // the store takes its own reference
                crypto.X509_free(certificate)
            }
        }
        crypto.ERR_clear_error()   // the end of the input queues "no start line"
    }
}

/// The roots of the macOS system keychain, as PEM: what `security find-certificate -a -p`
/// prints for the system's root store and the System keychain (where an administrator adds
/// a company's CA). Read once per process, when the first TLS connection is made.
enum KeychainRoots {
    static let command = ["/usr/bin/security", "find-certificate", "-a", "-p",
                          "/System/Library/Keychains/SystemRootCertificates.keychain",
                          "/Library/Keychains/System.keychain"]

    #if os(macOS)
    static let system: [UInt8]? = export(command)
    #endif

    /// The standard output of the program `argv` (run directly, stdin and stderr on /dev/null)
    /// when it holds a PEM certificate, whatever its exit status (one keychain that cannot be
    /// read leaves the other's), else nil. posix_spawn, because Darwin keeps popen from Swift.
    static func export(_ argv: [String]) -> [UInt8]? {
        guard let program = argv.first else { return nil }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        let rc = withStdoutOnPipe(fds) { actions in
            posix_spawn(&pid, program, &actions, nil, &cargs, processEnvironment)
        }
        _ = close(fds[1])
        defer { _ = close(fds[0]) }
        guard rc == 0 else { return nil }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = read(fds[0], &chunk, chunk.count)
            if n > 0 { out.append(contentsOf: chunk[0..<n]); continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard out.count >= marker.count,
              (0...(out.count - marker.count)).contains(where: { out[$0..<($0 + marker.count)].elementsEqual(marker) })
        else { return nil }
        return out
    }
}
