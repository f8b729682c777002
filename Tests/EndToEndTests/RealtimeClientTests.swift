import Foundation
import Testing
import RTDBCore
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The realtime (WebSocket) client against a real `rtdb serve`, over ws and wss.
@Suite struct RealtimeClientTests {
    func target(_ server: ServeProcess, ns: String = "demo") throws -> RemoteTarget {
        try RemoteTarget.parse(server.url + "?ns=" + ns)
    }

    func client(_ server: ServeProcess, credential: Credential = .none, timeout: Double = 5) throws -> RealtimeClient {
        RealtimeClient(target: try target(server), credential: credential, timeoutSeconds: timeout, caFile: nil)
    }

    func node(_ json: String) -> Node { (try? JSONReader.parse(json)) ?? .null }
    func text(_ n: Node) -> String { JSONWriter.string(n) }

    /// Events until one matches, within `seconds`.
    func event(_ c: RealtimeClient, within seconds: Double = 5, _ match: (RealtimeEvent) -> Bool) throws -> RealtimeEvent? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let e = try c.nextEvent(timeoutMillis: 100), match(e) { return e }
        }
        return nil
    }

    func isPut(_ e: RealtimeEvent, at path: String) -> (Node)? {
        if case .put(let p, let v, _) = e, p.description == path { return v }
        return nil
    }

    /// Waits until `child`'s stdout contains `needle`; the seconds it took, or nil.
    func waitFor(_ child: Child, _ needle: String, seconds: Double) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if child.stdout.contains(needle) { return Date().timeIntervalSince(start) }
            usleep(5_000)
        }
        return nil
    }

    @Test func connectsAndReportsConnectionState() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        #expect(!c.connected)
        #expect(c.serverTimeOffset == nil)
        #expect(text(c.info) == #"{"connected":false}"#)
        try c.connect()
        #expect(c.connected)
        #expect(c.connectionCount == 1)
        #expect(!(c.sessionID ?? "").isEmpty)
        let offset = try #require(c.serverTimeOffset)
        #expect(abs(offset) < 5_000)
        #expect(c.lastUpgradeTarget == "/.ws?v=5&ns=demo")
        if case .connected = try #require(try c.nextEvent(timeoutMillis: 0)) {} else { Issue.record("first event is not connected") }
        c.close()
        #expect(!c.connected)
    }

    /// A zero timeout never waits: `nextEvent(timeoutMillis: 0)` and `pump(timeoutMillis: 1)`
    /// return at once, also when a millisecond boundary passes inside the call (that once read
    /// as "no limit" and waited for the next keep-alive, 45 s). Thousands of calls cross many
    /// boundaries.
    @Test func aZeroTimeoutNeverWaits() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        try c.connect()
        _ = try c.nextEvent(timeoutMillis: 0)   // the connected event
        let start = Date()
        for i in 0..<20_000 {
            #expect(try c.nextEvent(timeoutMillis: 0) == nil)
            if i % 20 == 0 { _ = try c.pump(timeoutMillis: 1) }
            if Date().timeIntervalSince(start) > 20 { break }
        }
        #expect(Date().timeIntervalSince(start) < 20, "a call with a zero timeout waited")
        c.close()
    }

    @Test func getInfoAnswersFromTheHandshake() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let url = server.url + "?ns=demo"
        expectOK(s.rtdb("get", "/.info/connected", "--url", url), "true\n")
        let offset = s.rtdb("get", "/.info/serverTimeOffset", "--url", url)
        #expect(offset.status == 0)
        let value = try #require(Int(offset.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(value) < 5_000)
        let info = try #require(object(s.rtdb("get", "/.info", "--url", url).stdout))
        #expect(info["connected"] as? Bool == true)
        #expect(info["serverTimeOffset"] is NSNumber)
        // Unreachable: not connected, no offset, status 0.
        let closed = "http://127.0.0.1:1?ns=demo"
        expectOK(s.rtdb("get", "/.info/connected", "--url", closed), "false\n")
        expectOK(s.rtdb("get", "/.info/serverTimeOffset", "--url", closed), "null\n")
        expectOK(s.rtdb("get", "/.info", "--url", closed), #"{"connected":false}"# + "\n")
        // The embedded file is always connected, its clock is the server's.
        expectOK(s.rtdb("get", "/.info/connected"), "true\n")
        expectOK(s.rtdb("get", "/.info/serverTimeOffset"), "0\n")
        expectOK(s.rtdb("get", "/.info", "--shallow"), #"{"connected":true,"serverTimeOffset":true}"# + "\n")
        expectOK(s.rtdb("get", "/.info/other"), "null\n")
        // Writes under /.info stay refused.
        expectError(s.rtdb("set", "/.info/connected", "false"), status: 3, code: "invalid_path")
    }

    @Test func listenSeesTheCurrentValueThenWritesFromOtherProcesses() throws {
        let s = Sandbox()
        s.seed("/chat", #"{"m1":{"text":"hi"}}"#)
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        try c.listen(try Path("/chat"))
        let first = try #require(try event(c) { isPut($0, at: "/chat") != nil })
        #expect(isPut(first, at: "/chat").map(text) == #"{"m1":{"text":"hi"}}"#)
        // A push through REST by another process reaches the listen.
        let pushed = s.rtdb("push", "/chat", #"{"text":"yo"}"#, "--url", server.url + "?ns=demo")
        #expect(pushed.status == 0, "\(pushed)")
        let key = try #require(object(pushed.stdout)?["key"] as? String)
        let change = try #require(try event(c) { e in
            if case .put(let p, _, _) = e { return p.description.hasPrefix("/chat") }
            if case .merge(let p, _, _) = e { return p.description.hasPrefix("/chat") }
            return false
        })
        switch change {
        case .put(let p, let v, _):
            if p.description == "/chat/" + key { #expect(text(v) == #"{"text":"yo"}"#) }
            else { #expect(text(v.child(key)) == #"{"text":"yo"}"#) }
        case .merge(_, let children, _):
            #expect(children.contains { $0.path.description.hasSuffix(key) })
        default: Issue.record("unexpected \(change)")
        }
        // A write on the embedded file by a local command reaches it too.
        #expect(s.rtdb("set", "/chat/m1/text", #""bye""#).status == 0)
        let local = try #require(try event(c) { e in
            if case .put(let p, _, _) = e { return p.description.hasPrefix("/chat") }
            return false
        })
        if case .put(let p, let v, _) = local {
            let rest = Path(validatedKeys: Array(try Path("/chat/m1/text").keys.dropFirst(p.keys.count)))
            #expect(text(v.child(at: rest)) == #""bye""#)
        }
        try c.unlisten(try Path("/chat"))
    }

    @Test func aQueryListenGetsItsWindowWithItsTag() throws {
        let s = Sandbox()
        s.seed("/q", #"{"k1":{"x":1},"k2":{"x":2},"k3":{"x":3}}"#)
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        let tag = try #require(try c.listen(try Path("/q"), Query(order: .child(try Path("x")), limit: .last(2))))
        let first = try #require(try event(c) { if case .put(_, _, let t) = $0 { return t == tag }; return false })
        if case .put(let p, let v, _) = first {
            #expect(p.description == "/q")
            #expect(text(v) == #"{"k2":{"x":2},"k3":{"x":3}}"#)
        }
        try c.put(try Path("/q/k4"), node(#"{"x":4}"#))
        // The window moves: k2 leaves, k4 enters (as a whole window or as a merge).
        let moved = try #require(try event(c) { e in
            if case .put(_, _, let t) = e { return t == tag }
            if case .merge(_, _, let t) = e { return t == tag }
            return false
        })
        switch moved {
        case .put(_, let v, _): #expect(text(v) == #"{"k3":{"x":3},"k4":{"x":4}}"#)
        case .merge(_, let children, _):
            #expect(children.contains { $0.path.description == "/k2" && $0.value.isNull })
            #expect(children.contains { $0.path.description == "/k4" })
        default: Issue.record("unexpected \(moved)")
        }
        try c.unlisten(try Path("/q"), tag: tag)
    }

    @Test func putAndMergeWriteAtomicallyWithServerValues() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        try c.put(try Path("/a"), node(#"{"x":1,"t":{".sv":"timestamp"}}"#))
        try c.merge(try Path("/a"), [(try Path("y"), .int(2)), (try Path("z/w"), .string("deep")), (try Path("x"), .null)])
        let got = try #require(object(s.get("/a")))
        #expect(got["x"] == nil)
        #expect(got["y"] as? Int == 2)
        #expect((got["z"] as? [String: Any])?["w"] as? String == "deep")
        let t = try #require(got["t"] as? Int64)
        #expect(abs(t - nowMillis()) < 10_000)
        #expect(text(try c.get(try Path("/a/z"))) == #"{"w":"deep"}"#)
        // Bad data is refused by the server and changes nothing.
        #expect(throws: RTDBError.self) { try c.put(try Path("/a"), node(#"{"t":{".sv":"nonsense"}}"#)) }
        #expect(object(s.get("/a"))?["y"] as? Int == 2)
    }

    @Test func onDisconnectWritesRunWhenTheClientDies() throws {
        let s = Sandbox()
        s.seed("/presence/u2", #""online""#)
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        try c.put(try Path("/presence/u1"), .string("online"))
        try c.onDisconnectPut(try Path("/presence/u1"), .string("offline"))
        try c.onDisconnectMerge(try Path("/presence"), [(try Path("last/u1"), node(#"{".sv":"timestamp"}"#))])
        try c.onDisconnectPut(try Path("/presence/u2"), .null)
        try c.onDisconnectCancel(try Path("/presence/u2"))
        let watch = try #require(s.background([Binary.rtdb, "watch", "/presence"], name: "watch"))
        #expect(waitFor(watch, "online", seconds: 10) != nil)
        usleep(200_000)
        // The socket goes away without a close frame, as when the process is killed with -9.
        c.abandon()
        let took = try #require(waitFor(watch, "offline", seconds: 5), "watch saw: \(watch.stdout)")
        #expect(took < 1.0)
        watch.killGroup()
        let final = try #require(object(s.get("/presence")))
        #expect(final["u1"] as? String == "offline")
        #expect(final["u2"] as? String == "online", "the cancelled removal did not run")
        let last = try #require((final["last"] as? [String: Any])?["u1"] as? Int64)
        #expect(abs(last - nowMillis()) < 10_000)
    }

    /// Runs only inside the process that `aKilledClientProcessLeavesItsOnDisconnectWrites`
    /// starts (this test binary again, with RTDB_TEST_HOLD_URL): registers onDisconnect writes,
    /// says so on stdout, then waits to be killed.
    @Test func holdRegistrationsUntilKilled() throws {
        guard let url = ProcessInfo.processInfo.environment["RTDB_TEST_HOLD_URL"] else { return }
        let c = RealtimeClient(target: try RemoteTarget.parse(url), credential: .none, timeoutSeconds: 5, caFile: nil)
        try c.put(try Path("/presence/u1"), .string("online"))
        try c.onDisconnectPut(try Path("/presence/u1"), .string("offline"))
        try c.onDisconnectMerge(try Path("/presence"), [(try Path("last/u1"), node(#"{".sv":"timestamp"}"#))])
        _ = "registered\n".withCString { write(1, $0, strlen($0)) }
        _ = try c.nextEvent(timeoutMillis: 60_000)
        sleep(60)
    }

    /// A client process killed with -9 after registering onDisconnect writes: a watch sees
    /// them within a second (the kernel closes the socket, the server runs them).
    @Test func aKilledClientProcessLeavesItsOnDisconnectWrites() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let watch = try #require(s.background([Binary.rtdb, "watch", "/presence"], name: "watch"))
        defer { watch.killGroup() }
        #expect(waitFor(watch, "null", seconds: 10) != nil)
        let binary = CommandLine.arguments[0]
        let holder = try #require(s.background([binary, "--testing-library", "swift-testing", "--filter", "holdRegistrationsUntilKilled"],
                                               name: "holder", env: ["RTDB_TEST_HOLD_URL": server.url + "?ns=demo"]))
        defer { holder.killGroup() }
        try #require(waitFor(holder, "registered", seconds: 20) != nil, "holder: \(holder.stdout) \(holder.stderr)")
        #expect(waitFor(watch, "online", seconds: 5) != nil)
        kill(holder.pid, SIGKILL)
        let took = try #require(waitFor(watch, "offline", seconds: 5), "watch saw: \(watch.stdout)")
        #expect(took < 1.0)
        let final = try #require(object(s.get("/presence")))
        #expect(final["u1"] as? String == "offline")
        let last = try #require((final["last"] as? [String: Any])?["u1"] as? Int64)
        #expect(abs(last - nowMillis()) < 10_000)
    }

    @Test func reconnectsAfterARestartWithLsAndRestoresItsState() throws {
        let s = Sandbox()
        let first = try #require(ServeProcess(s, name: "serve1"))
        let port = try #require(Int(first.url.split(separator: ":").last ?? ""))
        let c = try client(first)
        try c.listen(try Path("/x"))
        try c.onDisconnectPut(try Path("/gone"), .bool(true))
        let session = try #require(c.sessionID)
        first.child.killGroup()
        _ = first.child.wait(timeout: 10)
        let lost = try event(c) { if case .disconnected = $0 { return true }; return false }
        #expect(lost != nil)
        #expect(!c.connected)
        // The same port again (ServeProcess always asks for a free one).
        let second = try #require(s.background([Binary.rtdb, "serve", "--port", String(port)], name: "serve2"))
        defer { second.killGroup() }
        let started = Date().addingTimeInterval(10)
        while Date() < started && !second.stdout.contains("listening") && second.isRunning { usleep(10_000) }
        try #require(second.stdout.contains("listening"), "serve did not start again on port \(port): \(second.stderr)")
        try c.reconnect()
        #expect(c.connected)
        #expect(c.connectionCount == 2)
        #expect(c.lastUpgradeTarget == "/.ws?v=5&ns=demo&ls=" + session)
        #expect(c.sessionID != session)
        // The listen came back: a local write reaches it.
        #expect(s.rtdb("set", "/x", "5").status == 0)
        let put = try event(c) { isPut($0, at: "/x").map(text) == "5" }
        #expect(put != nil)
        // The onDisconnect registration came back: dropping the socket runs it.
        c.abandon()
        let end = Date().addingTimeInterval(5)
        while Date() < end && s.get("/gone") != "true" { usleep(10_000) }
        #expect(s.get("/gone") == "true")
    }

    @Test func longMessagesAreSplitAndJoinedBetweenScalars() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s))
        let c = try client(server)
        // 16383 ASCII units then a pair of surrogates: a cut by code units would split the pair.
        let big = String(repeating: "a", count: 16_370) + "😀é" + String(repeating: "ß😀", count: 12_000)
        try c.listen(try Path("/big"))
        _ = try event(c) { isPut($0, at: "/big") != nil }
        try c.put(try Path("/big"), .string(big))
        let pushed = try #require(try event(c) { isPut($0, at: "/big") != nil })
        #expect(isPut(pushed, at: "/big").map(text) == text(.string(big)))
        #expect(text(try c.get(try Path("/big"))) == text(.string(big)))
        let r = s.rtdb("get", "/big", "--raw")
        #expect(r.stdout == big + "\n")
    }

    @Test func aRefusedCredentialIsAnErrorAndTheRightOneWorks() throws {
        let s = Sandbox()
        let server = try #require(ServeProcess(s, env: ["RTDB_SECRET": "s3cret"]))
        let bad = try client(server, credential: .auth("wrong"))
        do {
            try bad.connect()
            Issue.record("a wrong secret was accepted")
        } catch let e as RTDBError {
            #expect(e.code == .permissionDenied)
            #expect(!e.message.contains("wrong"), "the message leaks the credential")
        }
        #expect(!bad.connected)
        let good = try client(server, credential: .auth("s3cret"))
        try good.put(try Path("/ok"), .bool(true))
        #expect(s.get("/ok") == "true")
        let url = server.url + "?ns=demo"
        expectError(s.rtdb("get", "/.info/connected", "--url", url, "--auth", "wrong"), status: 4, code: "permission_denied")
        expectOK(s.rtdb("get", "/.info/connected", "--url", url, "--auth", "s3cret"), "true\n")
    }

    @Test func speaksOverWSSWithThePrivateCA() throws {
        let s = Sandbox()
        let dir = s.dir + "/pki"
        let made = s.program(["/bin/sh", ServeTLSTests.script, dir])
        try #require(made.status == 0, "\(made)")
        let server = try #require(ServeProcess(s, ["--tls-cert", dir + "/server.pem", "--tls-key", dir + "/server.key"]))
        let url = server.url.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "?ns=demo"
        let t = try RemoteTarget.parse(url)
        let c = RealtimeClient(target: t, credential: .accessToken("any"), timeoutSeconds: 5, caFile: dir + "/ca.pem")
        try c.listen(try Path("/w"))
        try c.put(try Path("/w"), node(#"{"n":1}"#))
        let put = try event(c) { isPut($0, at: "/w").map(text) == #"{"n":1}"# }
        #expect(put != nil)
        #expect(s.get("/w") == #"{"n":1}"#)
        // Without the CA the server's certificate is refused.
        let untrusted = RealtimeClient(target: t, credential: .none, timeoutSeconds: 5, caFile: nil)
        #expect(throws: RTDBError.self) { try untrusted.connect() }
        expectOK(s.rtdb("get", "/.info/connected", "--url", url, "--cacert", dir + "/ca.pem"), "true\n")
        expectOK(s.rtdb("get", "/.info/connected", "--url", url), "false\n")
    }
}
