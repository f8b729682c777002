import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Secrets never show: not in the process's arguments (neither the secret nor its length: the
/// arguments are the same whatever secret was given), not in the errors about a `--url` that
/// carries one, however it is spelt (percent-encoded names, a fragment).
@Suite struct SecretsStaySecretTests {
    #if os(Linux) || canImport(Darwin)
    /// The arguments of `pid` as anyone on the machine can see them: /proc/PID/cmdline on
    /// Linux (bytes and length exactly), `ps` on macOS (the kernel's copy of the arguments).
    func arguments(_ pid: pid_t) -> [String] {
        #if os(Linux)
        let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { [UInt8]($0) } ?? []
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        #else
        let ps = Process()
        ps.executableURL = URL(fileURLWithPath: "/bin/ps")
        ps.arguments = ["-ww", "-o", "args=", "-p", String(pid)]
        let out = Pipe()
        ps.standardOutput = out
        guard (try? ps.run()) != nil else { return [] }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        ps.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        #endif
    }

    @Test func serveHasTheSameArgumentsWhateverTheSecretsLength() throws {
        let s = Sandbox()
        let short = "k"
        let long = String(repeating: "s3cret-", count: 40)
        let a = try #require(ServeProcess(s, ["--secret", short], name: "short"))
        let b = try #require(ServeProcess(s, ["--secret", long], name: "long"))
        let (ca, cb) = (arguments(a.child.pid), arguments(b.child.pid))
        #expect(!ca.isEmpty)
        #expect(ca == cb, "\(ca) vs \(cb)")
        #expect(ca.suffix(2) == ["--secret", "***"])
        #expect(!cb.joined(separator: " ").contains("s3cret"))
        // The secret itself is in force, as given.
        #expect(curl(s, [b.url + "/a.json?auth=" + long]).code == "200")
        #expect(curl(s, [b.url + "/a.json?auth=" + short]).code == "401")
        #expect(curl(s, [a.url + "/a.json?auth=" + short]).code == "200")
    }

    @Test func clientsHaveTheSameArgumentsWhateverTheTokensLength() throws {
        let s = Sandbox()
        // Without a secret, on loopback, any token is let in: every watch below keeps running.
        let server = try #require(ServeProcess(s))
        for form in [{ (t: String) in ["--access-token", t] }, { (t: String) in ["--auth=" + t] }] {
            var seen: [[String]] = []
            for (i, token) in ["x", String(repeating: "t0ken-", count: 50)].enumerated() {
                let watch = try #require(s.background([Binary.rtdb, "--url", remoteURL(server)] + form(token) + ["watch", "/w"],
                                                      name: "watch\(i)"))
                defer { watch.killGroup() }
                #expect(waitFor(watch, "value"), "\(watch.stderr)")
                seen.append(arguments(watch.pid))
            }
            #expect(seen[0] == seen[1], "\(seen)")
            #expect(!seen[1].joined(separator: " ").contains("t0ken"))
            let args = seen[0]
            #expect(args.suffix(2) == ["watch", "/w"])
            #expect(args.contains("***") || args.contains("--auth=***"), "\(args)")
        }
    }
    #endif

    @Test func errorsAboutAURLNeverShowItsCredentialsHoweverSpelt() throws {
        let s = Sandbox()
        let token = "TOKEN-4242"
        for url in ["http://127.0.0.1:1/?ns=a&au%74h=\(token)",
                    "http://127.0.0.1:1/?ns=a&%41UTH=\(token)",
                    "http://127.0.0.1:1/?ns=a&acce%73s_token=\(token)",
                    "http://127.0.0.1:1/?ns=a&au%2574h=\(token)",
                    "http://127.0.0.1:1/#auth=\(token)",
                    "http://127.0.0.1:1/?ns=a#auth=\(token)",
                    "http://127.0.0.1:1/?ns=a%26auth=\(token)",
                    "http://127.0.0.1:1/?auth%3D\(token)",
                    "http://127.0.0.1:1/?ns=a;auth=\(token)"] {
            let viaOption = s.rtdb("--url", url, "get", "/")
            #expect(viaOption.status != 0, "\(url)")
            #expect(!(viaOption.stderr + viaOption.stdout).contains(token), "\(url): \(viaOption.stderr)")
            #expect(viaOption.stderr.contains("***"), "\(url): \(viaOption.stderr)")
            let viaEnvironment = s.rtdb(["get", "/"], env: ["RTDB_URL": url])
            #expect(viaEnvironment.status != 0, "\(url)")
            #expect(!(viaEnvironment.stderr + viaEnvironment.stdout).contains(token), "\(url): \(viaEnvironment.stderr)")
        }
        // A URL that parses and reaches nothing: the error names no credential either.
        let refused = s.rtdb(["--url", "http://127.0.0.1:1/?ns=a", "--auth", token, "get", "/"])
        #expect(refused.status != 0)
        #expect(!(refused.stderr + refused.stdout).contains(token), "\(refused.stderr)")
    }
}
