import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running `rtdb serve` for one test, stopped (SIGKILL of its group) when released.
final class ServeProcess {
    let child: Child
    let url: String
    let line: [String: Any]

    init?(_ sandbox: Sandbox, _ args: [String] = [], name: String = "serve", env: [String: String?] = [:], port: Int = 0) {
        guard let c = sandbox.background([Binary.rtdb, "serve", "--port", String(port)] + args, name: name, env: env) else { return nil }
        child = c
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let first = c.stdout.split(separator: "\n").first, let obj = object(String(first)), let u = obj["url"] as? String {
                url = u
                line = obj
                return
            }
            if !c.isRunning { return nil }
            usleep(5_000)
        }
        return nil
    }

    deinit { if child.isRunning { child.killGroup() } }
}

/// `curl -s` with the given arguments; stdout, then the status code on its own last line.
func curl(_ sandbox: Sandbox, _ args: [String]) -> (body: String, code: String) {
    let r = sandbox.program(["curl", "-s", "-w", "\n%{http_code}"] + args, timeout: 20)
    var lines = r.stdout.components(separatedBy: "\n")
    let code = lines.popLast() ?? ""
    return (lines.joined(separator: "\n"), code)
}

@Suite struct ServeTests {
    @Test func printsOneListeningLineAndServesTheFile() throws {
        let s = Sandbox()
        s.seed("/users/ada", #"{"name":"Ada"}"#)
        let server = try #require(ServeProcess(s))
        #expect(server.line["event"] as? String == "listening")
        #expect(server.line["db"] as? String == s.db)
        #expect(server.url.hasPrefix("http://127.0.0.1:"))
        let r = curl(s, [server.url + "/users/ada.json"])
        #expect(r.body == #"{"name":"Ada"}"#)
        #expect(r.code == "200")
        // The stdout holds the listening line only.
        #expect(server.child.stdout.split(separator: "\n").count == 1)
    }

    @Test func sigintExits130AndSigtermExits143() throws {
        let s = Sandbox()
        for (sig, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let server = try #require(ServeProcess(s))
            kill(server.child.pid, sig)
            #expect(server.child.wait(timeout: 10) == status)
        }
    }

    @Test func aNonLoopbackAddressNeedsASecretOrInsecure() throws {
        let s = Sandbox()
        let r = s.rtdb("serve", "--host", "0.0.0.0", "--port", "0")
        expectError(r, status: 2, code: "usage")
        #expect(r.stderr.contains("--secret"))
        let insecure = try #require(ServeProcess(s, ["--host", "0.0.0.0", "--insecure"], name: "insecure"))
        #expect(insecure.url.hasPrefix("http://0.0.0.0:"))
        let secret = try #require(ServeProcess(s, ["--host", "0.0.0.0"], name: "secret", env: ["RTDB_SECRET": "s3cret"]))
        #expect(secret.url.hasPrefix("http://0.0.0.0:"))
    }

    @Test func badOptionsAreUsageErrors() {
        let s = Sandbox()
        expectError(s.rtdb("serve", "--port", "70000"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--port", "x"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--max-connections", "0"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--loops", "0"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--loops", "17"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--idle-timeout", "-1"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "extra"), status: 2, code: "usage")
        expectError(s.rtdb("serve", "--secret", ""), status: 2, code: "usage")
        #expect(!s.exists(s.db))
    }

    @Test func aPortInUseIsUnavailable() throws {
        let s = Sandbox()
        let first = try #require(ServeProcess(s))
        let port = String(first.url.split(separator: ":").last ?? "")
        let r = s.rtdb("serve", "--port", port)
        expectError(r, status: 6, code: "unavailable")
        #expect(r.stderr.contains("in use"))
    }

    @Test func localWritesReachStreamsAsOnePutOrOnePatch() throws {
        let s = Sandbox()
        s.seed("/room", #"{"name":"lobby"}"#)
        let server = try #require(ServeProcess(s))
        let stream = try #require(s.background(["curl", "-sN", "-H", "Accept: text/event-stream", server.url + "/room.json"], name: "stream"))
        defer { stream.killGroup() }
        func waitFor(_ text: String) -> Bool { eventually(10) { stream.stdout.contains(text) } }
        #expect(waitFor(#"data: {"path":"/","data":{"name":"lobby"}}"#))
        s.seed("/room/count", "1")
        #expect(s.rtdb("update", "/room", #"{"count":2,"topic/title":"hi"}"#, "-q").status == 0)
        #expect(s.rtdb("remove", "/room/name", "-q").status == 0)
        s.seed("/elsewhere", "1")
        s.seed("/room/count", "2")   // unchanged: no event
        #expect(waitFor(#"data: {"path":"/name","data":null}"#), "stream: \(stream.stdout)")
        let events = stream.stdout.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        #expect(events == [
            "event: put\ndata: {\"path\":\"/\",\"data\":{\"name\":\"lobby\"}}",
            "event: put\ndata: {\"path\":\"/count\",\"data\":1}",
            "event: patch\ndata: {\"path\":\"/\",\"data\":{\"count\":2,\"topic/title\":\"hi\"}}",
            "event: put\ndata: {\"path\":\"/name\",\"data\":null}",
        ])
    }

    @Test func writesOverRESTReachLocalWatch() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let watch = try #require(s.background([Binary.rtdb, "watch", "/w", "--count", "2"], name: "watch"))
        _ = eventually(10) { watch.stdout.contains("\n") }
        #expect(curl(s, ["-X", "PUT", "-d", #"{"n":1}"#, server.url + "/w.json"]).code == "200")
        #expect(watch.wait(timeout: 10) == 0)
        #expect(watch.stdout == #"{"event":"value","path":"/w","value":null}"# + "\n" + #"{"event":"value","path":"/w","value":{"n":1}}"# + "\n")
    }

    @Test func logPrintsOneLinePerRequestWithoutQueryStrings() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, ["--log"], env: ["RTDB_SECRET": "tok3n"]))
        _ = curl(s, [server.url + "/a.json?auth=tok3n"])
        _ = curl(s, [server.url + "/a.json?auth=wrong"])
        kill(server.child.pid, SIGTERM)
        _ = server.child.wait(timeout: 10)
        let lines = server.child.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.compactMap { object($0)?["path"] as? String } == ["/a.json", "/a.json"])
        #expect(lines.compactMap { object($0)?["status"] as? Int } == [200, 401])
        #expect(!server.child.stderr.contains("tok3n"))
    }
}
