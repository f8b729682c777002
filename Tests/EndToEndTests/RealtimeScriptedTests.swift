import Foundation
import Testing
import RTDBCore
import RTDBRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A scripted realtime server (python3, standard library only) for what `rtdb serve` never
/// does: resets, shutdowns, a wrong upgrade answer, WebSocket pings, split answers. It logs
/// every upgrade and every client frame as a JSON line.
final class ScriptedRealtimeServer {
    let child: Child
    let port: Int
    let log: String

    init?(_ s: Sandbox, mode: String) {
        let script = s.write("ws.py", ScriptedRealtimeServer.source)
        log = s.dir + "/ws-\(mode).log"
        guard let c = s.background(["python3", script, mode, log], name: "ws-\(mode)") else { return nil }
        child = c
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let line = c.stdout.split(separator: "\n").first, let p = Int(line) {
                port = p
                return
            }
            usleep(10_000)
        }
        c.killGroup()
        return nil
    }

    deinit { child.killGroup() }

    var entries: [[String: Any]] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { object(String($0)) }
    }
    var upgrades: [[String: Any]] { entries.filter { $0["upgrade"] != nil } }
    var frames: [[String: Any]] { entries.filter { $0["frame"] != nil } }

    /// A production-style target (not emulator addressing) at this server.
    var production: RemoteTarget { RemoteTarget(secure: false, host: "127.0.0.1", port: port, namespace: "db", emulator: false) }

    static let source = #"""
import socket, sys, json, hashlib, base64, threading, struct

MODE, LOG = sys.argv[1], sys.argv[2]
lock = threading.Lock()
conns = [0]

def log(obj):
    with lock:
        with open(LOG, "a") as f:
            f.write(json.dumps(obj) + "\n")

def send(c, text, opcode=1):
    data = text.encode() if isinstance(text, str) else text
    head = bytes([0x80 | opcode])
    n = len(data)
    if n < 126: head += bytes([n])
    elif n < 65536: head += bytes([126]) + struct.pack(">H", n)
    else: head += bytes([127]) + struct.pack(">Q", n)
    c.sendall(head + data)

def recv_exact(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x: raise EOFError
        b += x
    return b

def frame(c):
    b0, b1 = recv_exact(c, 2)
    n = b1 & 0x7f
    if n == 126: n = struct.unpack(">H", recv_exact(c, 2))[0]
    elif n == 127: n = struct.unpack(">Q", recv_exact(c, 8))[0]
    masked = bool(b1 & 0x80)
    key = recv_exact(c, 4) if masked else b"\0\0\0\0"
    data = bytes(x ^ key[i % 4] for i, x in enumerate(recv_exact(c, n)))
    return b0 & 0x0f, masked, data

def serve(c, port):
    head = b""
    while b"\r\n\r\n" not in head:
        x = c.recv(4096)
        if not x: return
        head += x
    lines = head.decode().split("\r\n")
    fields = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    with lock:
        conns[0] += 1
        n = conns[0]
    log({"upgrade": lines[0].split(" ")[1], "host": fields.get("host")})
    accept = base64.b64encode(hashlib.sha1((fields["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if MODE == "badaccept": accept = "AAAA" + accept[4:]
    c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
    if MODE == "reset" and n == 1:
        send(c, json.dumps({"t": "c", "d": {"t": "r", "d": "localhost:%d" % port}}))
        c.close(); return
    if MODE == "shutdown":
        send(c, json.dumps({"t": "c", "d": {"t": "s", "d": "Database lives in a different region"}}))
        c.close(); return
    send(c, json.dumps({"t": "c", "d": {"t": "h", "d": {"ts": 4102444800000, "v": "5", "h": "localhost:%d" % port, "s": "sess%d" % n}}}))
    send(c, b"ping!", 9)
    while True:
        try: op, masked, data = frame(c)
        except EOFError: return
        if op == 8:
            log({"op": op, "masked": masked, "frame": ""})
            c.close(); return
        text = data.decode("utf-8")
        log({"op": op, "masked": masked, "frame": text if len(text) < 200 else "<%d>" % len(text)})
        if op != 1: continue
        if text.isdigit() and int(text) > 0:
            parts = []
            for _ in range(int(text)):
                _, m, piece = frame(c)
                log({"op": 1, "masked": m, "frame": "<piece %d>" % len(piece)})
                parts.append(piece)
            text = b"".join(parts).decode("utf-8")
        try: msg = json.loads(text)
        except Exception: continue
        if not isinstance(msg, dict): continue
        d = msg["d"]
        if "r" in d:
            body = d.get("b", {})
            if MODE == "dropput" and n == 1 and d.get("a") == "p":
                c.close(); return
            if d.get("a") == "g" and body.get("p") == "/big":
                big = json.dumps({"t": "d", "d": {"r": d["r"], "b": {"s": "ok", "d": "x" * 20000 + "\u00e9" * 10}}})
                pieces = [big[i:i + 16384] for i in range(0, len(big), 16384)]
                send(c, str(len(pieces)))
                for p in pieces: send(c, p)
            else:
                send(c, json.dumps({"t": "d", "d": {"r": d["r"], "b": {"s": "ok", "d": ""}}}))
            if MODE == "lateshutdown" and d.get("a") == "gauth":
                send(c, json.dumps({"t": "c", "d": {"t": "s", "d": "Database disabled"}}))
            if MODE == "revoke" and n == 1 and d.get("a") == "gauth":
                send(c, json.dumps({"t": "d", "d": {"a": "ac", "b": {"s": "expired_token", "d": "Auth token is expired."}}}))

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
port = s.getsockname()[1]
print(port, flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c, port), daemon=True).start()
"""#
}

@Suite struct RealtimeScriptedTests {
    func waitUntil(_ seconds: Double = 5, _ done: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { if done() { return true }; usleep(10_000) }
        return done()
    }

    @Test func followsAResetAndUsesTheHelloHostLater() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "reset"))
        let c = RealtimeClient(target: server.production, credential: .none, timeoutSeconds: 5, caFile: nil)
        try c.connect()
        #expect(c.connected)
        #expect(c.connectionCount == 1)
        #expect(c.sessionID == "sess2")
        let ups = server.upgrades
        try #require(ups.count == 2)
        #expect(ups[0]["upgrade"] as? String == "/.ws?v=5&ns=db")
        #expect(ups[0]["host"] as? String == "127.0.0.1:\(server.port)")
        #expect(ups[1]["upgrade"] as? String == "/.ws?v=5&ns=db")
        #expect(ups[1]["host"] as? String == "localhost:\(server.port)", "the reset's host is used")
        // No credential on a production target: nothing is sent for auth.
        #expect(!server.frames.contains { ($0["frame"] as? String ?? "").contains("auth") })
        c.close()
        try c.connect()
        let later = server.upgrades
        try #require(later.count == 3)
        #expect(later[2]["host"] as? String == "localhost:\(server.port)", "the hello's host is used")
        #expect(later[2]["upgrade"] as? String == "/.ws?v=5&ns=db&ls=sess2")
    }

    @Test func aShutdownStopsTheClientWithItsReason() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "shutdown"))
        let c = RealtimeClient(target: server.production, credential: .none, timeoutSeconds: 5, caFile: nil)
        do {
            try c.connect()
            Issue.record("connected despite a shutdown")
        } catch let e as RTDBError {
            #expect(e.code == .unavailable)
            #expect(e.message.contains("Database lives in a different region"))
        }
        #expect(c.shutdownReason == "Database lives in a different region")
        #expect(throws: RTDBError.self) { try c.reconnect() }
        #expect(server.upgrades.count == 1, "no connection after a shutdown")
    }

    @Test func aWrongAcceptValueIsRefused() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "badaccept"))
        let c = RealtimeClient(target: server.production, credential: .none, timeoutSeconds: 5, caFile: nil)
        do {
            try c.connect()
            Issue.record("a wrong Sec-WebSocket-Accept was accepted")
        } catch let e as RTDBError {
            #expect(e.code == .unavailable)
            #expect(e.message.contains("Sec-WebSocket-Accept"))
        }
        #expect(!c.connected)
    }

    @Test func framesAreMaskedPingsAnsweredKeepAlivesSentAndSplitsJoined() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "echo"))
        let c = RealtimeClient(target: server.production, credential: .auth("id-token"), timeoutSeconds: 5, caFile: nil)
        c.keepAliveMillis = 300
        try c.connect()
        #expect(c.serverTimeOffset.map { $0 > 100_000_000_000 } == true, "the offset comes from the hello's ts")
        // auth with the ID token, waited for before anything else.
        let auth = try #require(server.frames.first)
        #expect(auth["frame"] as? String == #"{"t":"d","d":{"r":1,"a":"auth","b":{"cred":"id-token"}}}"#)
        // Idle: the ping is answered with a pong, then keep-alives go out.
        _ = try c.nextEvent(timeoutMillis: 0)
        _ = try c.nextEvent(timeoutMillis: 1_000)
        #expect(waitUntil { server.frames.contains { $0["op"] as? Int == 10 && $0["frame"] as? String == "ping!" } })
        #expect(waitUntil { server.frames.contains { $0["op"] as? Int == 1 && $0["frame"] as? String == "0" } })
        #expect(server.frames.allSatisfy { $0["masked"] as? Bool == true })
        // An answer split by the server is joined.
        let big = try c.get(try Path("/big"))
        if case .string = big {} else { Issue.record("not a string: \(big)") }
        #expect(JSONWriter.string(big) == "\"" + String(repeating: "x", count: 20_000) + String(repeating: "é", count: 10) + "\"")
        // A long request goes as a count and pieces.
        try c.put(try Path("/long"), .string(String(repeating: "y", count: 40_000)))
        #expect(waitUntil { server.frames.contains { $0["frame"] as? String == "3" } })
        c.close()
        #expect(waitUntil { server.frames.contains { $0["op"] as? Int == 8 } }, "a clean close frame")
        // An access token goes as gauth.
        let g = RealtimeClient(target: server.production, credential: .accessToken("ya29.x"), timeoutSeconds: 5, caFile: nil)
        try g.connect()
        #expect(waitUntil { server.frames.contains { ($0["frame"] as? String ?? "").contains(#""a":"gauth","b":{"cred":"ya29.x"}"#) } })
    }

    @Test func aRevokedCredentialReconnectsAndAuthenticatesAgain() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "revoke"))
        let c = RealtimeClient(target: server.production, credential: .accessToken("tok"), timeoutSeconds: 5, caFile: nil)
        try c.connect()
        var sawRevoked = false, sawLost = false
        while let e = try c.nextEvent(timeoutMillis: 2_000) {
            if case .authRevoked(let why) = e { sawRevoked = why == "Auth token is expired." }
            if case .disconnected = e { sawLost = true; break }
        }
        #expect(sawRevoked)
        #expect(sawLost)
        #expect(!c.connected)
        try c.put(try Path("/after"), .int(1))
        #expect(c.connectionCount == 2)
        let gauths = server.frames.filter { ($0["frame"] as? String ?? "").contains(#""a":"gauth""#) }
        #expect(gauths.count == 2)
        #expect(server.upgrades.last?["upgrade"] as? String == "/.ws?v=5&ns=db&ls=sess1")
    }

    @Test func aWriteLeftUnansweredIsSentAgainAfterReconnecting() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "dropput"))
        let c = RealtimeClient(target: server.production, credential: .none, timeoutSeconds: 10, caFile: nil)
        try c.listen(try Path("/l"))
        try c.onDisconnectPut(try Path("/p"), .string("off"))
        try c.put(try Path("/w"), .int(7))
        #expect(c.connectionCount == 2)
        // Text frames only: a close frame may follow once the client is released.
        let frames = server.frames.filter { $0["op"] as? Int == 1 }.compactMap { $0["frame"] as? String }.filter { $0 != "0" }
        let puts = frames.filter { $0.contains(#""a":"p","b":{"p":"/w","d":7}"#) }
        #expect(puts.count == 2, "\(frames)")
        #expect(puts.first == puts.last, "sent again with its number")
        // After the reconnect, the listen and the onDisconnect write come back before the write.
        let cut = try #require(frames.firstIndex { $0.contains(#""a":"p","b":{"p":"/w""#) })
        let second = Array(frames[(cut + 1)...])
        #expect(second.count == 3, "\(frames)")
        #expect(second.count == 3 && second[0].contains(#""a":"q","b":{"p":"/l","h":""}"#))
        #expect(second.count == 3 && second[1].contains(#""a":"o","b":{"p":"/p","d":"off"}"#))
        #expect(second.count == 3 && second[2] == puts.last)
        #expect(server.upgrades.last?["upgrade"] as? String == "/.ws?v=5&ns=db&ls=sess1")
    }

    @Test func aShutdownAfterTheHelloEndsTheConnectionForGood() throws {
        let s = Sandbox()
        let server = try #require(ScriptedRealtimeServer(s, mode: "lateshutdown"))
        let c = RealtimeClient(target: server.production, credential: .accessToken("tok"), timeoutSeconds: 5, caFile: nil)
        try c.connect()
        var lost = false
        while let e = try c.nextEvent(timeoutMillis: 2_000) { if case .disconnected = e { lost = true; break } }
        #expect(lost)
        #expect(c.shutdownReason == "Database disabled")
        do {
            try c.put(try Path("/x"), .int(1))
            Issue.record("a write went through after a shutdown")
        } catch let e as RTDBError {
            #expect(e.code == .unavailable)
            #expect(e.message.contains("Database disabled"))
        }
        #expect(server.upgrades.count == 1)
    }
}
