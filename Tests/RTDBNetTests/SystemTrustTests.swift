import Foundation
import Testing
@testable import RTDBNet

/// Where the system's CA certificates are taken from, and that a hashed folder verifies lazily.
@Suite struct SystemTrustTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var fileVariable: String?
        var dirVariable: String?
        var hashed: [String]
        var expected: SystemTrust
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a hashed default folder is used alone", fileVariable: nil, dirVariable: nil,
             hashed: ["/ssl/certs"], expected: SystemTrust(file: nil, directories: "/ssl/certs")),
        Case(name: "a folder without hash links falls back to the bundle", fileVariable: nil, dirVariable: nil,
             hashed: [], expected: SystemTrust(file: "/ssl/cert.pem", directories: nil)),
        Case(name: "SSL_CERT_FILE is loaded, beside a hashed folder", fileVariable: "/mine.pem", dirVariable: nil,
             hashed: ["/ssl/certs"], expected: SystemTrust(file: "/mine.pem", directories: "/ssl/certs")),
        Case(name: "SSL_CERT_FILE alone", fileVariable: "/mine.pem", dirVariable: nil,
             hashed: [], expected: SystemTrust(file: "/mine.pem", directories: nil)),
        Case(name: "SSL_CERT_DIR replaces the default folder", fileVariable: nil, dirVariable: "/a:/b",
             hashed: ["/b", "/ssl/certs"], expected: SystemTrust(file: nil, directories: "/b")),
        Case(name: "an SSL_CERT_DIR without hash links falls back to the bundle", fileVariable: nil, dirVariable: "/a",
             hashed: ["/ssl/certs"], expected: SystemTrust(file: "/ssl/cert.pem", directories: nil)),
        Case(name: "empty variables count as unset", fileVariable: "", dirVariable: "",
             hashed: ["/ssl/certs"], expected: SystemTrust(file: nil, directories: "/ssl/certs")),
    ]

    @Test(arguments: cases)
    func locations(_ c: Case) {
        let got = SystemTrust.locate(fileVariable: c.fileVariable, dirVariable: c.dirVariable,
                                     defaultFile: "/ssl/cert.pem", defaultDir: "/ssl/certs",
                                     hasHashLinks: { c.hashed.contains($0) })
        #expect(got == c.expected)
    }

    @Test(arguments: [("5ad8a5d6.0", true), ("5ad8a5d6.12", true), ("5AD8A5D6.0", false), ("5ad8a5d6.", false),
                      ("5ad8a5d.0", false), ("5ad8a5d6.r0", false), ("ca-certificates.crt", false), ("5ad8a5dg.0", false)])
    func hashNames(_ name: String, _ expected: Bool) {
        #expect(SystemTrust.isHashName(Array(name.utf8)) == expected)
    }

    /// A folder `openssl rehash` made for one CA certificate.
    func hashedFolder(with certificate: String) throws -> String {
        let dir = NSTemporaryDirectory() + "rtdb-trust-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPKI.file(certificate), toPath: dir + "/" + certificate)
        let r = TestPKI.run(["openssl", "rehash", dir])
        #expect(r.status == 0, "\(r.output)")
        return dir
    }

    @Test func aHashedFolderIsFoundAndVerifiesAChain() throws {
        let good = try hashedFolder(with: "ca.pem")
        let other = try hashedFolder(with: "other-ca.pem")
        let empty = NSTemporaryDirectory() + "rtdb-trust-empty-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { for d in [good, other, empty] { try? FileManager.default.removeItem(atPath: d) } }
        #expect(SystemTrust.hasHashLinks(good))
        #expect(!SystemTrust.hasHashLinks(empty))
        #expect(!SystemTrust.hasHashLinks(empty + "/missing"))

        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        func connect(_ trust: SystemTrust) throws {
            let tcp = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
            let tls = try TLSClientStream.connect(over: tcp, host: "localhost", caFile: nil, timeoutMillis: 5_000, trust: trust)
            tls.close()
        }
        try connect(SystemTrust(file: nil, directories: good))
        try connect(SystemTrust(file: nil, directories: other + ":" + good))
        #expect(throws: TLSError.verification("certificate verify failed: unable to get local issuer certificate")) {
            try connect(SystemTrust(file: nil, directories: other))
        }
        // --cacert adds to the system store rather than replacing it.
        let tcp = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
        let tls = try TLSClientStream.connect(over: tcp, host: "localhost", caFile: TestPKI.file("other-ca.pem"),
                                              timeoutMillis: 5_000, trust: SystemTrust(file: nil, directories: good))
        tls.close()
    }

    /// On a system with a hashed CA folder (Debian's /usr/lib/ssl/certs), the bundle is not parsed.
    @Test func thisSystemUsesItsHashedFolderWhenItHasOne() throws {
        let crypto = try OpenSSL.crypto.get()
        let defaultDir = String(cString: try #require(crypto.X509_get_default_cert_dir()))
        let found = SystemTrust.locate(crypto)
        if getenv("SSL_CERT_FILE") == nil && getenv("SSL_CERT_DIR") == nil && SystemTrust.hasHashLinks(defaultDir) {
            #expect(found == SystemTrust(file: nil, directories: defaultDir))
        } else {
            #expect(found.file != nil || found.directories != nil)
        }
    }
}

/// macOS trusts the roots of its keychain, exported by `security find-certificate -a -p` and
/// added to the store from memory. The export's reading and the loading are checked here with
/// the test CA in place of the keychain.
@Suite struct KeychainRootsTests {
    @Test func theExportIsTheProgramsOutputWhenItHoldsACertificate() throws {
        let ca = TestPKI.file("ca.pem")
        let pem = try #require(KeychainRoots.export(["/bin/cat", ca, TestPKI.file("other-ca.pem")]))
        #expect(pem == Array((TestPKI.read("ca.pem") + TestPKI.read("other-ca.pem")).utf8))
        #expect(KeychainRoots.export(["/bin/echo", "no certificates here"]) == nil)
        #expect(KeychainRoots.export(["/bin/sh", "-c", "exit 3"]) == nil)
        #expect(KeychainRoots.export(["/nonexistent/security"]) == nil)
        // A keychain that cannot be read fails the command but leaves the other's roots.
        #expect(KeychainRoots.export(["/bin/sh", "-c", "cat \"$0\"; exit 1", ca]) != nil)
        #expect(KeychainRoots.command.prefix(4) == ["/usr/bin/security", "find-certificate", "-a", "-p"])
    }

    @Test func certificatesGivenInMemoryVerifyAChainAndOthersDoNot() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        func connect(_ pem: String) throws {
            let tcp = try TCPStream.connect(host: "127.0.0.1", port: server.port, timeoutMillis: 5_000)
            let trust = SystemTrust(file: nil, directories: nil, certificates: Array(pem.utf8))
            let tls = try TLSClientStream.connect(over: tcp, host: "localhost", caFile: nil, timeoutMillis: 5_000, trust: trust)
            tls.close()
        }
        // The right root among others, as a keychain export lists them.
        try connect(TestPKI.read("other-ca.pem") + TestPKI.read("ca.pem"))
        #expect(throws: TLSError.verification("certificate verify failed: unable to get local issuer certificate")) {
            try connect(TestPKI.read("other-ca.pem"))
        }
    }
}
