import Foundation
import Testing
import RTDBCore

/// `push --key-only`: a push ID made as `push` makes its keys, without writing (Firebase's
/// `push().key`), and the fan-out recipe built on it; with --url, made with the server's clock.
@Suite struct PushKeyTests {
    func key(_ r: RunResult, under path: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r)", sourceLocation: sourceLocation)
        guard let obj = object(r.stdout.trimmingCharacters(in: .newlines)), let k = obj["key"] as? String else {
            Issue.record("not a key line: \(r)", sourceLocation: sourceLocation)
            return ""
        }
        #expect(isPushID(k) && obj.count == 2 && obj["path"] as? String == path + "/" + k, "\(r)", sourceLocation: sourceLocation)
        return k
    }

    /// Keys from --key-only and from push, made in turn, sort in the order they were made.
    func chronological(_ sb: Sandbox, _ target: [String]) throws {
        let a = key(sb.rtdb(target + ["push", "/posts", "--key-only"]), under: "/posts")
        let pushed = sb.rtdb(target + ["push", "/posts", "1"])
        let b = try #require(object(pushed.stdout.trimmingCharacters(in: .newlines))?["key"] as? String, "\(pushed)")
        let c = sb.rtdb(target + ["push", "/posts", "--key-only", "-r"])
        #expect(c.status == 0 && c.stderr.isEmpty, "\(c)")
        let k = c.stdout.trimmingCharacters(in: .newlines)
        #expect(isPushID(k) && c.stdout == k + "\n", "\(c)")
        #expect(a < b && b < k, "not chronological: \(a), \(b), \(k)")
        // Only the push wrote anything.
        expectOK(sb.rtdb(target + ["get", "/posts", "--shallow"]), #"{"\#(b)":true}"# + "\n")
    }

    @Test func onTheEmbeddedFile() throws {
        let sb = Sandbox()
        try chronological(sb, [])
        expectOK(sb.rtdb("push", "/posts", "--key-only", "-q"), "")
        // The fan-out: one key, two copies, one atomic update.
        let k = key(sb.rtdb("push", "/posts", "--key-only"), under: "/posts")
        let post = #"{"author":"ada","title":"Hi"}"#
        expectLines(sb.rtdb("update", "/", #"{"posts/\#(k)":\#(post),"user-posts/ada/\#(k)":\#(post)}"#),
                    [#"{"path":"/","value":{"posts/\#(k)":\#(post),"user-posts/ada/\#(k)":\#(post)}}"#])
        expectOK(sb.rtdb("get", "/user-posts/ada/\(k)"), post + "\n")
        expectOK(sb.rtdb("get", "/posts/\(k)"), post + "\n")
    }

    @Test func refusals() {
        let sb = Sandbox()
        expectError(sb.rtdb("push", "/posts", "1", "--key-only"), status: 2, code: "usage")
        expectError(sb.rtdb("push", "/posts", "--lines", "--key-only"), status: 2, code: "usage")
        expectError(sb.rtdb("push", "/posts", "1", "-r"), status: 2, code: "usage")
        expectError(sb.rtdb("push", "/.info/x", "--key-only"), status: 3, code: "invalid_path")
        expectError(sb.rtdb("push", "/" + Array(repeating: "a", count: 32).joined(separator: "/"), "--key-only"), status: 3, code: "too_deep")
        #expect(!sb.exists(sb.db))
    }

    @Test func throughServe() throws {
        let sb = Sandbox()
        let server = try #require(ServeProcess(sb))
        try chronological(sb, ["--url", remoteURL(server)])
        let v = sb.rtdb("--url", remoteURL(server), "-v", "push", "/x", "--key-only")
        #expect(v.status == 0 && v.stderr.contains(#"{"verbose":"push key made with the server's clock: the local clock "#), "\(v)")
    }

    /// A server whose clock is far ahead (its hello says the year 2100): the key carries the
    /// server's time, as an SDK's would; through a cache, the offset the cache measured, also
    /// offline.
    @Test func withTheServersClock() throws {
        let sb = Sandbox()
        let server = try #require(ScriptedRealtimeServer(sb, mode: "echo"))
        let url = "http://127.0.0.1:\(server.port)?ns=db"
        let serverNow: Int64 = 4_102_444_800_000
        let k = key(sb.rtdb("--url", url, "push", "/posts", "--key-only"), under: "/posts")
        let t = try #require(PushIDGenerator.time(of: k))
        #expect(t >= serverNow && t < serverNow + 60_000, "the key's time \(t) is not the server's")
        // The cache keeps the offset /.info/serverTimeOffset measures; offline keys use it.
        let cache = ["--url", url, "--cache", sb.dir + "/c.db"]
        #expect(sb.rtdb(cache + ["get", "/.info/serverTimeOffset"]).status == 0)
        let offline = key(sb.rtdb(cache + ["--offline", "push", "/posts", "--key-only"]), under: "/posts")
        let o = try #require(PushIDGenerator.time(of: offline))
        #expect(o >= serverNow && o < serverNow + 60_000, "the offline key's time \(o) is not the server's")
        // Unreachable without a cache: the local clock, as an SDK before its first connection.
        let local = key(sb.rtdb("--url", "http://127.0.0.1:1?ns=db", "push", "/p", "--key-only"), under: "/p")
        let l = try #require(PushIDGenerator.time(of: local))
        #expect(abs(l - nowMillis()) < 60_000)
    }
}
