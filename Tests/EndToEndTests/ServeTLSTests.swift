import Foundation
import Testing
import RTDBNet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `rtdb serve --tls-cert/--tls-key`: https with a private CA the test makes with the openssl
/// CLI (scripts/make-test-certificates) in the sandbox, never committed.
@Suite struct ServeTLSTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/make-test-certificates").path

    /// The certificates folder inside the sandbox.
    func pki(_ s: Sandbox, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let dir = s.dir + "/pki"
        let r = s.program(["/bin/sh", ServeTLSTests.script, dir])
        #expect(r.status == 0, "making certificates: \(r)", sourceLocation: sourceLocation)
        return dir
    }

    func serve(_ s: Sandbox, _ pki: String, _ extra: [String] = [], name: String = "serve") -> ServeProcess? {
        ServeProcess(s, ["--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key"] + extra, name: name)
    }

    /// The https URL with the host name the certificate names.
    func localhost(_ url: String) -> String { url.replacingOccurrences(of: "127.0.0.1", with: "localhost") }

    func port(_ url: String) -> Int { Int(url.split(separator: ":").last ?? "") ?? 0 }

    @Test func curlWithTheCAReadsAndWritesOverHTTPS() throws {
        let s = Sandbox()
        let dir = pki(s)
        s.seed("/users/ada", #"{"name":"Ada"}"#)
        let server = try #require(serve(s, dir))
        #expect(server.url.hasPrefix("https://127.0.0.1:"))
        let url = localhost(server.url)
        let get = curl(s, ["--cacert", dir + "/ca.pem", url + "/users/ada.json"])
        #expect(get.body == #"{"name":"Ada"}"# && get.code == "200", "\(get)")
        let put = curl(s, ["--cacert", dir + "/ca.pem", "-X", "PUT", "-d", #"{"name":"Grace"}"#, url + "/users/grace.json"])
        #expect(put.code == "200", "\(put)")
        #expect(s.get("/users/grace") == #"{"name":"Grace"}"#)
        // The certificate also names 127.0.0.1.
        #expect(curl(s, ["--cacert", dir + "/ca.pem", server.url + "/users/ada.json"]).code == "200")
    }

    /// Bodies much larger than a TLS record (16 KiB) and than the socket buffers: the server
    /// reads many records per request and writes its answer in many partial writes.
    @Test func largeBodiesTravelWholeBothWays() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir))
        let items = (0..<40_000).map { "\"k\($0)\":\"value number \($0) with some padding text\"" }
        let json = "{" + items.joined(separator: ",") + "}"
        #expect(json.utf8.count > 1_500_000)
        let file = s.write("big.json", json)
        let put = curl(s, ["--cacert", dir + "/ca.pem", "-X", "PUT", "--data-binary", "@" + file, "-o", "/dev/null",
                           localhost(server.url) + "/big.json"])
        #expect(put.code == "200", "\(put)")
        let out = s.dir + "/big.out"
        let get = curl(s, ["--cacert", dir + "/ca.pem", "-o", out, localhost(server.url) + "/big.json"])
        #expect(get.code == "200", "\(get)")
        let back = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        #expect(back.utf8.count == s.get("/big").utf8.count && back == s.get("/big"))
        #expect(back.utf8.count > 1_500_000)
    }

    @Test func curlWithoutTheCAFailsVerification() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir))
        let r = s.program(["curl", "-s", "-S", localhost(server.url) + "/x.json"], timeout: 20)
        #expect(r.status == 60, "\(r)")   // curl: peer certificate cannot be authenticated
        #expect(r.stdout.isEmpty)
        // The server goes on serving the clients that can verify it.
        #expect(curl(s, ["--cacert", dir + "/ca.pem", localhost(server.url) + "/x.json"]).code == "200")
    }

    /// A realtime session (wss) whose server certificate does not verify ends at once with the
    /// reason, instead of retrying in silence; with the CA it holds as usual.
    @Test func aSessionToAnUnverifiedServerEndsWithTheReason() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir))
        let url = localhost(server.url) + "?ns=demo"
        let refused = s.rtdb(["session", "--presence", "/online", "--url", url], timeout: 30)
        #expect(refused.status == 6, "\(refused)")
        #expect(refused.stderr.contains("certificate verify failed: unable to get local issuer certificate"), "\(refused)")
        let held = s.rtdb(["session", "--presence", "/online", "--url", url, "--cacert", dir + "/ca.pem", "--", "/bin/true"], timeout: 30)
        #expect(held.status == 0, "\(held)")
    }

    @Test func localWritesReachAStreamOverHTTPS() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir))
        let stream = try #require(s.background(["curl", "-sN", "--cacert", dir + "/ca.pem", "-H", "Accept: text/event-stream",
                                                localhost(server.url) + "/room.json"], name: "stream"))
        defer { stream.killGroup() }
        func waitFor(_ text: String) -> Bool { eventually(10) { stream.stdout.contains(text) } }
        #expect(waitFor(#"data: {"path":"/","data":null}"#), "stream: \(stream.stdout)")
        s.seed("/room/name", #""lobby""#)
        #expect(waitFor(#"data: {"path":"/name","data":"lobby"}"#), "stream: \(stream.stdout)")
    }

    /// One HTTP/1.1 request over TLSClientStream; the whole answer (the server closes).
    func request(_ port: Int, host: String, caFile: String?, path: String) throws -> String {
        let tcp = try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 5_000)
        let tls = try TLSClientStream.connect(over: tcp, host: host, caFile: caFile, timeoutMillis: 5_000)
        defer { tls.close() }
        let text = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n"
        try Array(text.utf8).withUnsafeBytes { try tls.write($0, timeoutMillis: 5_000) }
        var answer: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try buf.withUnsafeMutableBytes { try tls.read(into: $0, timeoutMillis: 5_000) }
            if n == 0 { break }
            answer += buf[0..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test func theTLSClientVerifiesRtdbServe() throws {
        let s = Sandbox()
        let dir = pki(s)
        s.seed("/a", #"{"b":1}"#)
        let server = try #require(serve(s, dir))
        let answer = try request(port(server.url), host: "localhost", caFile: dir + "/ca.pem", path: "/a.json")
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
        #expect(answer.hasSuffix("\r\n\r\n{\"b\":1}"), "\(answer)")

        func refusal(host: String, caFile: String?) -> String? {
            do {
                _ = try request(port(server.url), host: host, caFile: caFile, path: "/a.json")
                return nil
            } catch TLSError.verification(let m) {
                return m
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal(host: "other.invalid", caFile: dir + "/ca.pem")
                == "certificate verify failed: hostname mismatch (the certificate is not for other.invalid)")
        #expect(refusal(host: "localhost", caFile: dir + "/other-ca.pem")
                == "certificate verify failed: unable to get local issuer certificate")
        #expect(refusal(host: "localhost", caFile: nil)
                == "certificate verify failed: unable to get local issuer certificate")
    }

    /// A raw TCP connection to the server (plain bytes, no TLS).
    func rawConnect(_ port: Int) throws -> TCPStream {
        try TCPStream.connect(host: "127.0.0.1", port: port, timeoutMillis: 5_000)
    }

    /// Reads until the server closes; nil when it stays open past `timeout` ms.
    func readToClose(_ c: TCPStream, timeout: Int) -> [UInt8]? {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = monotonicMillis() + Int64(timeout)
        while monotonicMillis() < deadline {
            do {
                let n = try buf.withUnsafeMutableBytes { try c.read(into: $0, timeoutMillis: 200) }
                if n == 0 { return got }
                got += buf[0..<n]
            } catch NetError.timeout {
                continue
            } catch {
                return got   // a reset is a close too
            }
        }
        return nil
    }

    @Test func aPlainHTTPClientOnTheTLSPortIsDroppedAndOthersGoOn() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir, ["--log"]))
        let plain = try rawConnect(port(server.url))
        defer { plain.close() }
        try Array("GET /x.json HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8).withUnsafeBytes { try plain.write($0, timeoutMillis: 2_000) }
        let got = readToClose(plain, timeout: 5_000)
        #expect(got != nil, "the plain connection stayed open")
        #expect(!(String(decoding: got ?? [], as: UTF8.self).hasPrefix("HTTP/")), "a plain HTTP answer on the TLS port")
        #expect(server.child.isRunning)
        #expect(curl(s, ["--cacert", dir + "/ca.pem", localhost(server.url) + "/x.json"]).code == "200")
        kill(server.child.pid, SIGTERM)
        #expect(server.child.wait(timeout: 10) == 143)
        #expect(server.child.stderr.contains(#"{"event":"tls_error","message":"http request"}"#), "\(server.child.stderr)")
    }

    /// A client that starts a handshake and stalls neither blocks the others nor stays forever:
    /// the idle timeout covers handshakes.
    @Test func aStalledHandshakeBlocksNobodyAndTimesOut() throws {
        let s = Sandbox()
        let dir = pki(s)
        let server = try #require(serve(s, dir, ["--idle-timeout", "1"]))
        let stalled = try rawConnect(port(server.url))
        defer { stalled.close() }
        // The first bytes of a TLS record header (a handshake record), then nothing.
        try [UInt8]([0x16, 0x03, 0x01]).withUnsafeBytes { try stalled.write($0, timeoutMillis: 2_000) }
        let silent = try rawConnect(port(server.url))   // connects, sends nothing
        defer { silent.close() }
        let started = Date()
        #expect(curl(s, ["--cacert", dir + "/ca.pem", localhost(server.url) + "/x.json"]).code == "200")
        #expect(Date().timeIntervalSince(started) < 1.0)
        #expect(readToClose(stalled, timeout: 5_000) != nil, "a stalled handshake was never dropped")
        #expect(readToClose(silent, timeout: 5_000) != nil, "a silent connection was never dropped")
        #expect(server.child.isRunning)
    }

    @Test func badCertificatesAndKeysAreRefusedAtStart() {
        let s = Sandbox()
        let dir = pki(s)
        _ = s.write("pki/garbage.pem", "not a certificate\n")
        let encrypted = s.program(["openssl", "pkey", "-in", dir + "/server.key", "-aes256", "-passout", "pass:x",
                                   "-out", dir + "/encrypted.key"])
        #expect(encrypted.status == 0, "\(encrypted)")
        let cases: [([String], String)] = [
            (["--tls-cert", dir + "/server.pem"], "--tls-cert needs --tls-key FILE as well"),
            (["--tls-key", dir + "/server.key"], "--tls-key needs --tls-cert FILE as well"),
            (["--tls-cert", "", "--tls-key", dir + "/server.key"], "--tls-cert needs a file name"),
            (["--tls-cert", dir + "/missing.pem", "--tls-key", dir + "/server.key"],
             "serve: cannot read certificate file \(dir)/missing.pem: No such file or directory"),
            (["--tls-cert", dir + "/garbage.pem", "--tls-key", dir + "/server.key"],
             "serve: certificate file \(dir)/garbage.pem holds no usable PEM certificate: no start line"),
            (["--tls-cert", dir + "/server.pem", "--tls-key", dir + "/ca.pem"],
             "serve: key file \(dir)/ca.pem holds no PEM private key (no \"-----BEGIN PRIVATE KEY-----\" block)"),
            (["--tls-cert", dir + "/server.pem", "--tls-key", dir + "/wronghost.key"],
             "serve: key file \(dir)/wronghost.key does not match the certificate in \(dir)/server.pem"),
            (["--tls-cert", dir + "/server.pem", "--tls-key", dir + "/encrypted.key"],
             "serve: key file \(dir)/encrypted.key is encrypted (a server key must be unencrypted)"),
        ]
        for (args, message) in cases {
            let r = s.rtdb(["serve", "--port", "0"] + args, timeout: 20)
            expectError(r, status: 2, code: "usage")
            #expect(r.error?.message == message, "\(args): \(r)")
        }
        #expect(!s.exists(s.db), "a refused start created the database")
    }

    /// TLS is privacy, not authentication: a non-loopback address still needs --secret.
    @Test func aNonLoopbackAddressStillNeedsASecret() throws {
        let s = Sandbox()
        let dir = pki(s)
        let tls = ["--tls-cert", dir + "/server.pem", "--tls-key", dir + "/server.key"]
        let r = s.rtdb(["serve", "--port", "0", "--host", "0.0.0.0"] + tls, timeout: 20)
        expectError(r, status: 2, code: "usage")
        #expect(r.stderr.contains("--secret"), "\(r)")
        let server = try #require(ServeProcess(s, ["--host", "0.0.0.0"] + tls, env: ["RTDB_SECRET": "s3cret"]))
        #expect(server.url.hasPrefix("https://0.0.0.0:"))
        let url = "https://localhost:\(port(server.url))"
        #expect(curl(s, ["--cacert", dir + "/ca.pem", url + "/x.json"]).code == "401")
        #expect(curl(s, ["--cacert", dir + "/ca.pem", url + "/x.json?auth=s3cret"]).code == "200")
    }

    #if os(Linux)
    /// What a process has mapped, from /proc/PID/maps.
    func mapped(_ pid: pid_t) -> String {
        (try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? ""
    }

    /// Start-up cost: local commands (and plain-http serve) never load OpenSSL; https loads it.
    @Test func onlyTLSLoadsOpenSSL() throws {
        let s = Sandbox()
        let dir = pki(s)
        s.seed("/x", "1")
        let watch = try #require(s.background([Binary.rtdb, "watch", "/x"], name: "watch"))
        defer { watch.killGroup() }
        _ = eventually(10) { watch.stdout.contains("\n") }
        let watchMaps = mapped(watch.pid)
        #expect(watchMaps.contains("rtdb"), "cannot read the maps of rtdb watch")
        #expect(!watchMaps.contains("libssl") && !watchMaps.contains("libcrypto"))

        let plain = try #require(ServeProcess(s, [], name: "plain"))
        let plainMaps = mapped(plain.child.pid)
        #expect(plainMaps.contains("rtdb") && !plainMaps.contains("libssl") && !plainMaps.contains("libcrypto"))

        let https = try #require(serve(s, dir, name: "https"))
        let httpsMaps = mapped(https.child.pid)
        #expect(httpsMaps.contains("libssl.so.3") && httpsMaps.contains("libcrypto.so.3"))

        // The dynamic loader's own account of one local get.
        let get = s.rtdb(["get", "/x"], env: ["LD_DEBUG": "libs"])
        #expect(get.status == 0 && get.stdout == "1\n")
        #expect(get.stderr.contains("calling init"), "LD_DEBUG gave no account: \(get.stderr.prefix(300))")
        #expect(!get.stderr.contains("libssl") && !get.stderr.contains("libcrypto"))
    }
    #endif
}
