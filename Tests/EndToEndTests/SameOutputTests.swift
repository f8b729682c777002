import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The same script, the same output: one scripted session of every command (bad input and a
/// windowed `watch --child-events` included) runs against the embedded file and against
/// `rtdb serve` over http; stdout, the error codes on stderr and the exit statuses must be
/// identical, push IDs and timestamps masked.
@Suite struct SameOutputTests {
    struct Step {
        var args: [String]
        var stdin: String? = nil
    }

    static let script: [Step] = [
        Step(args: ["set", "/scores", #"{"a":1,"b":5,"c":3}"#]),
        Step(args: ["get", "/scores"]),
        Step(args: ["get", "/scores", "--shallow"]),
        Step(args: ["update", "/scores", #"{"d":7,"a":null}"#]),
        Step(args: ["push", "/log", #"{"m":"hi"}"#]),
        Step(args: ["push", "/log", "--lines"], stdin: "{\"m\":\"b\"}\n{\"m\":\"a\"}\n"),
        Step(args: ["query", "/scores", "--order-by-value", "--limit-to-last", "2"]),
        Step(args: ["query", "/scores", "--order-by-key", "--start-at", "c"]),
        Step(args: ["query", "/log", "--order-by-child", "m"]),
        Step(args: ["increment", "/scores/b", "10"]),
        Step(args: ["increment", "/counter", "0.5"]),
        Step(args: ["tx", "/scores/c", "--", "sh", "-c", "read v; echo $((v + 1))"]),
        Step(args: ["tx", "/scores/c", "--", "false"]),
        Step(args: ["set", "/scores/e", "2"]),
        Step(args: ["remove", "/scores/d"]),
        Step(args: ["set", "/ts", "--server-timestamp"]),
        Step(args: ["get", "/"]),
        Step(args: ["get", "/missing"]),
        Step(args: ["set", "/bad", #"{"a.b":1}"#]),
        Step(args: ["set", "/bad", "{nope"]),
        Step(args: ["set", "/.info/x", "1"]),
        Step(args: ["update", "/scores", #"{"a":1,"a/b":2}"#]),
        Step(args: ["query", "/scores", "--limit-to-first", "1", "--limit-to-last", "1"]),
        Step(args: ["increment", "/scores/b", "ten"]),
        Step(args: ["get"]),
        Step(args: ["remove", "/scores"]),
    ]

    static let watchArgs = ["watch", "/scores", "--child-events", "--order-by-value", "--limit-to-last", "2"]

    /// Push IDs and millisecond timestamps vary from run to run.
    static func mask(_ text: String) -> String {
        var t = text.replacingOccurrences(of: #"-[0-9A-Za-z_-]{19}"#, with: "<push-id>", options: .regularExpression)
        t = t.replacingOccurrences(of: #"\b1[0-9]{12}\b"#, with: "<time>", options: .regularExpression)
        return t
    }

    struct Transcript: Equatable {
        var steps: [String]
        var watch: String
    }

    /// Runs the script with `target` arguments prepended; a watch runs alongside.
    func session(_ s: Sandbox, _ target: [String]) throws -> Transcript {
        let watch = try #require(s.background([Binary.rtdb] + target + SameOutputTests.watchArgs, name: "watch-\(target.count)"))
        defer { watch.killGroup() }
        var ready = false
        for _ in 0..<500 where !ready {
            usleep(10_000)
            ready = watch.isRunning && FileManager.default.fileExists(atPath: s.dir + "/watch-\(target.count).out")
        }
        usleep(300_000)   // the watch has connected and printed its (empty) start
        var lines: [String] = []
        for step in SameOutputTests.script {
            let r = s.rtdb(target + step.args, stdin: step.stdin.map { .text($0) } ?? .none)
            lines.append("\(step.args.joined(separator: " ")) => status \(r.status) stdout \(SameOutputTests.mask(r.stdout))"
                         + " error \(r.error?.code ?? "-")")
            usleep(150_000)   // one write, one batch of events, on both targets
        }
        usleep(500_000)
        return Transcript(steps: lines, watch: SameOutputTests.mask(watch.stdout))
    }

    @Test func embeddedAndServeOverHTTPPrintTheSame() throws {
        let local = Sandbox()
        let embedded = try session(local, [])

        let remote = Sandbox()
        let server = try #require(ServeProcess(remote, [], name: "serve"))
        // A different file behind the server, so nothing leaks between the two runs.
        let overHTTP = try session(remote, ["--url", remoteURL(server)])

        #expect(embedded.steps.count == SameOutputTests.script.count)
        for (a, b) in zip(embedded.steps, overHTTP.steps) { #expect(a == b) }
        #expect(embedded.watch == overHTTP.watch)
        #expect(embedded.watch.split(separator: "\n").count >= 6, "\(embedded.watch)")
        // The script exercises failures too.
        #expect(embedded.steps.filter { !$0.contains("status 0 ") }.count == 8, "\(embedded.steps)")
    }

    /// The third leg: rtdb serve --tls-cert/--tls-key over https, trusting the test CA with
    /// --cacert; the same transcript as on the embedded file.
    @Test func embeddedAndServeOverHTTPSPrintTheSame() throws {
        let local = Sandbox()
        let embedded = try session(local, [])

        let remote = Sandbox()
        let pki = remote.dir + "/pki"
        let made = remote.program(["/bin/sh", ServeTLSTests.script, pki])
        try #require(made.status == 0, "making certificates: \(made)")
        let server = try #require(ServeProcess(remote, ["--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key"], name: "serve"))
        #expect(server.url.hasPrefix("https://"))
        let url = remoteURL(server).replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let overHTTPS = try session(remote, ["--url", url, "--cacert", pki + "/ca.pem"])

        #expect(overHTTPS.steps.count == SameOutputTests.script.count)
        for (a, b) in zip(embedded.steps, overHTTPS.steps) { #expect(a == b) }
        #expect(embedded.watch == overHTTPS.watch)
    }
}
