import Foundation
import Testing
@testable import RTDBNet

/// RS256 signatures checked by the openssl CLI with the key's public half.
@Suite struct RSASignerTests {
    static let message = Array(#"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJ0ZXN0In0"#.utf8)

    func temp(_ name: String, _ bytes: [UInt8]) -> String {
        let p = NSTemporaryDirectory() + "rtdb-sig-\(getpid())-\(UUID().uuidString)-\(name)"
        _ = FileManager.default.createFile(atPath: p, contents: Data(bytes))
        return p
    }

    /// `openssl dgst -sha256 -verify rsa.pub` over `data` with `signature`.
    func opensslVerifies(_ data: [UInt8], _ signature: [UInt8]) -> Bool {
        let d = temp("data", data), s = temp("sig", signature)
        defer { try? FileManager.default.removeItem(atPath: d); try? FileManager.default.removeItem(atPath: s) }
        let r = TestPKI.run(["openssl", "dgst", "-sha256", "-verify", TestPKI.file("rsa.pub"), "-signature", s, d])
        return r.status == 0 && r.output.contains("Verified OK")
    }

    @Test func aSignatureVerifiesWithThePublicKey() throws {
        let sig = try RSASigner.signRS256(pemPrivateKey: TestPKI.read("rsa.key"), data: Self.message)
        #expect(sig.count == 256)
        #expect(opensslVerifies(Self.message, sig))
    }

    @Test func theSignatureDoesNotVerifyOtherData() throws {
        let sig = try RSASigner.signRS256(pemPrivateKey: TestPKI.read("rsa.key"), data: Self.message)
        var other = Self.message
        other[0] ^= 1
        #expect(!opensslVerifies(other, sig))
        var bent = sig
        bent[10] ^= 0x40
        #expect(!opensslVerifies(Self.message, bent))
    }

    /// PKCS#1 v1.5 is deterministic: the same bytes as `openssl dgst -sha256 -sign`.
    @Test func theSignatureIsTheOneOpenSSLMakes() throws {
        let d = temp("data", Self.message)
        defer { try? FileManager.default.removeItem(atPath: d) }
        let out = NSTemporaryDirectory() + "rtdb-sig-\(getpid())-\(UUID().uuidString).bin"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let r = TestPKI.run(["openssl", "dgst", "-sha256", "-sign", TestPKI.file("rsa.key"), "-out", out, d])
        #expect(r.status == 0, "\(r.output)")
        let expected = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data())
        let sig = try RSASigner.signRS256(pemPrivateKey: TestPKI.read("rsa.key"), data: Self.message)
        #expect(!expected.isEmpty && sig == expected)
    }

    @Test func anEmptyMessageCanBeSigned() throws {
        let sig = try RSASigner.signRS256(pemPrivateKey: TestPKI.read("rsa.key"), data: [])
        #expect(opensslVerifies([], sig))
    }

    @Test func aPKCS1KeySignsTheSame() throws {
        let r = TestPKI.run(["openssl", "rsa", "-in", TestPKI.file("rsa.key"), "-traditional"])
        #expect(r.status == 0 && r.output.contains("BEGIN RSA PRIVATE KEY"), "\(r.output)")
        let pkcs1 = try RSASigner.signRS256(pemPrivateKey: r.output, data: Self.message)
        let pkcs8 = try RSASigner.signRS256(pemPrivateKey: TestPKI.read("rsa.key"), data: Self.message)
        #expect(pkcs1 == pkcs8)
    }

    /// A service-account key file carries the key in JSON with "\n" escapes; once decoded it
    /// is the same PEM text.
    @Test func keyTextWithCRLFLineEndingsIsAccepted() throws {
        let crlf = TestPKI.read("rsa.key").replacingOccurrences(of: "\n", with: "\r\n")
        let sig = try RSASigner.signRS256(pemPrivateKey: crlf, data: Self.message)
        #expect(opensslVerifies(Self.message, sig))
    }

    @Test(arguments: [
        ("", "empty"),
        ("not a key", "not a PEM private key"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a PEM private key"),
    ])
    func textThatIsNoKeyIsRefused(_ text: String, _ expected: String) {
        do {
            _ = try RSASigner.signRS256(pemPrivateKey: text, data: Self.message)
            Issue.record("signed with \(text.debugDescription)")
        } catch let e as TLSError {
            guard case .badKey(let m) = e else { Issue.record("wrong error \(e)"); return }
            #expect(m.contains(expected), "\(m)")
            #expect(!m.contains("AAAA"), "the key text leaked into the message: \(m)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func anECKeyIsRefusedForRS256() {
        #expect(throws: TLSError.badKey("the private key is not an RSA key (RS256 needs one)")) {
            try RSASigner.signRS256(pemPrivateKey: TestPKI.read("server.key"), data: Self.message)
        }
    }

    /// An encrypted key fails at once (no password prompt on the terminal).
    @Test func anEncryptedKeyIsRefusedWithoutPrompting() {
        let r = TestPKI.run(["openssl", "pkey", "-in", TestPKI.file("rsa.key"), "-aes256", "-passout", "pass:secret"])
        #expect(r.status == 0 && r.output.contains("ENCRYPTED PRIVATE KEY"), "\(r.output)")
        do {
            _ = try RSASigner.signRS256(pemPrivateKey: r.output, data: Self.message)
            Issue.record("signed with an encrypted key")
        } catch let e as TLSError {
            guard case .badKey = e else { Issue.record("wrong error \(e)"); return }
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
