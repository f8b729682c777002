import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import RTDBNet

/// The TLS client against `openssl s_server` with certificates from a private test CA.
@Suite struct TLSClientStreamTests {
    /// Connects, sends a GET, reads the whole answer.
    func fetch(port: Int, host: String = "localhost", caFile: String?, timeout: Int = 5_000) throws -> String {
        let tcp = try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: timeout)
        let tls = try TLSClientStream.connect(over: tcp, host: host, caFile: caFile, timeoutMillis: timeout)
        defer { tls.close() }
        #expect(tls.protocolVersion == "TLSv1.3")
        let request = Array("GET / HTTP/1.0\r\n\r\n".utf8)
        try request.withUnsafeBytes { try tls.write($0, timeoutMillis: timeout) }
        var answer: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try buf.withUnsafeMutableBytes { try tls.read(into: $0, timeoutMillis: timeout) }
            if n == 0 { break }
            answer += buf[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// The verification error `fetch` throws, or nil when it did not throw one.
    func verificationError(port: Int, host: String = "localhost", caFile: String?) -> String? {
        do {
            _ = try fetch(port: port, host: host, caFile: caFile)
            return nil
        } catch TLSError.verification(let m) {
            return m
        } catch {
            return "other error: \(error)"
        }
    }

    @Test func theServerVerifiesWithItsCA() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        let answer = try fetch(port: server.port, caFile: TestPKI.file("ca.pem"))
        #expect(answer.hasPrefix("HTTP/1.0 200 ok\r\n"), "\(answer.prefix(200))")
    }

    @Test func anIPAddressIsCheckedAgainstTheCertificatesAddresses() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        let answer = try fetch(port: server.port, host: "127.0.0.1", caFile: TestPKI.file("ca.pem"))
        #expect(answer.hasPrefix("HTTP/1.0 200 ok\r\n"))
        let wrong = verificationError(port: server.port, host: "127.0.0.2", caFile: TestPKI.file("ca.pem"))
        #expect(wrong == "certificate verify failed: IP address mismatch (the certificate is not for 127.0.0.2)")
    }

    @Test func aWrongHostNameIsRefusedWithTheReason() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("wronghost.pem"), key: TestPKI.file("wronghost.key")))
        #expect(verificationError(port: server.port, caFile: TestPKI.file("ca.pem"))
                == "certificate verify failed: hostname mismatch (the certificate is not for localhost)")
        // The same certificate is fine under its own name.
        let answer = try fetch(port: server.port, host: "other.invalid", caFile: TestPKI.file("ca.pem"))
        #expect(answer.hasPrefix("HTTP/1.0 200 ok\r\n"))
    }

    @Test func anUnknownCAIsRefusedWithTheReason() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        let expected = "certificate verify failed: unable to get local issuer certificate"
        #expect(verificationError(port: server.port, caFile: TestPKI.file("other-ca.pem")) == expected)
        // The system store alone does not know the test CA either.
        #expect(verificationError(port: server.port, caFile: nil) == expected)
    }

    @Test func aSelfSignedCertificateIsRefusedWithTheReason() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("selfsigned.pem"), key: TestPKI.file("selfsigned.key")))
        #expect(verificationError(port: server.port, caFile: nil) == "certificate verify failed: self-signed certificate")
    }

    @Test func anUnreadableCAFileIsAConfigurationError() throws {
        let server = try #require(OpenSSLServer(cert: TestPKI.file("server.pem"), key: TestPKI.file("server.key")))
        #expect(throws: TLSError.configuration("cannot read CA file /nonexistent/ca.pem: No such file or directory")) {
            _ = try fetch(port: server.port, caFile: "/nonexistent/ca.pem")
        }
        do {
            _ = try fetch(port: server.port, caFile: TestPKI.file("rsa.pub"))
            Issue.record("a public key was accepted as a CA file")
        } catch TLSError.configuration(let m) {
            #expect(m.hasPrefix("CA file \(TestPKI.file("rsa.pub")) holds no usable PEM certificate"), "\(m)")
        }
    }

    /// A listener that never answers: the handshake ends at the timeout, as a NetError.timeout.
    @Test func aSilentServerTimesOut() throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let tcp = try TCPStream.connect(host: "127.0.0.1", port: listener.port, timeoutMillis: 2_000)
        let started = monotonicMillis()
        do {
            _ = try TLSClientStream.connect(over: tcp, host: "localhost", caFile: nil, timeoutMillis: 300)
            Issue.record("handshake succeeded against a silent server")
        } catch NetError.timeout(let m) {
            #expect(m == "TLS handshake with localhost timed out after 300 ms")
        }
        let elapsed = monotonicMillis() - started
        #expect(elapsed >= 280 && elapsed < 2_000, "took \(elapsed) ms")
    }

    /// A server that closes at once, or answers in plain text, fails the handshake clearly.
    @Test func aServerThatIsNotTLSFailsTheHandshake() throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)

        let tcp1 = try TCPStream.connect(host: "127.0.0.1", port: listener.port, timeoutMillis: 2_000)
        let fd1 = try #require(try acceptWaiting(listener))
        close(fd1)
        #expect(throws: TLSError.protocolFailure("TLS handshake with localhost failed: the server closed the connection")) {
            _ = try TLSClientStream.connect(over: tcp1, host: "localhost", caFile: nil, timeoutMillis: 2_000)
        }

        let tcp2 = try TCPStream.connect(host: "127.0.0.1", port: listener.port, timeoutMillis: 2_000)
        let fd2 = try #require(try acceptWaiting(listener))
        let text = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
        _ = text.withUnsafeBytes { SocketIO.write(fd2, $0) }
        defer { close(fd2) }
        do {
            _ = try TLSClientStream.connect(over: tcp2, host: "localhost", caFile: nil, timeoutMillis: 2_000)
            Issue.record("handshake succeeded against plain HTTP")
        } catch TLSError.protocolFailure(let m) {
            #expect(m.hasPrefix("TLS handshake with localhost failed: "), "\(m)")
        }
    }

    func acceptWaiting(_ l: TCPListener) throws -> Int32? {
        for _ in 0..<200 {
            if let fd = try l.accept() { return fd }
            usleep(5_000)
        }
        return nil
    }
}
