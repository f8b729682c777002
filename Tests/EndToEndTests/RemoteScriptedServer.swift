import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// rtdb --url: every command against `rtdb serve` over http, and the client's handling of
// statuses, retries, redirects and streams against a small scripted HTTP server.

/// `--url` for a running server, emulator style.
func remoteURL(_ server: ServeProcess, ns: String = "test") -> String { server.url + "?ns=" + ns }

/// Waits until `text` appears in the child's stdout (or 10 s pass).
func waitFor(_ child: Child, _ text: String, seconds: Double = 10) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if child.stdout.contains(text) { return true }
        usleep(10_000)
    }
    return false
}

/// A scripted HTTP/1.1 server (python3) answering fixed statuses, redirects and event streams,
/// logging every request it gets as one JSON line.
final class ScriptedServer {
    let child: Child
    let url: String
    let log: String

    init?(_ s: Sandbox) {
        let script = s.write("scripted.py", ScriptedServer.source)
        log = s.dir + "/requests.log"
        guard let c = s.background(["python3", script, log], name: "scripted") else { return nil }
        child = c
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let line = c.stdout.split(separator: "\n").first, let port = Int(line) {
                url = "http://127.0.0.1:\(port)?ns=x"
                return
            }
            usleep(10_000)
        }
        c.killGroup()
        return nil
    }

    deinit { child.killGroup() }

    /// The logged requests, each {"m": method, "p": target, "auth": Authorization header}.
    var requests: [[String: Any]] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { object(String($0)) }
    }

    static let source = #"""
import http.server, json, sys, threading, time, os

LOG = sys.argv[1]
counts = {}
lock = threading.Lock()

def bump(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, code, body, headers=()):
        data = body.encode()
        self.send_response(code)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        path = self.path.split("?")[0]
        with open(LOG, "a") as f:
            f.write(json.dumps({"m": self.command, "p": self.path, "auth": self.headers.get("Authorization"), "body": body}) + "\n")
        c = bump(self.command + " " + path)
        if path.startswith("/s") and path[2:5].isdigit():
            code = int(path[2:5])
            return self.send(code, json.dumps({"error": "message for %d" % code}))
        if path == "/flaky.json":
            return self.send(503, '{"error":"busy"}') if c == 1 else self.send(200, '"recovered"')
        if path == "/limited.json":
            return self.send(429, '{"error":"slow down"}', [("Retry-After", "1")]) if c == 1 else self.send(200, '"later"')
        if path == "/slow.json":
            time.sleep(3)
            return self.send(200, "1")
        if path == "/moved.json":
            return self.send(307, "", [("Location", "http://127.0.0.1:%d/target.json?ns=x" % self.server.server_port)])
        if path == "/target.json":
            return self.send(200, json.dumps(self.headers.get("Authorization")))
        if path == "/noexport.json":
            # A server that documents format=export for reads only: refuse it on a stream.
            if "format=export" in self.path:
                return self.send(400, '{"error":"format=export is not supported for streams"}')
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'event: put\ndata: {"path":"/","data":{"a":1}}\n\n'); self.wfile.flush()
            time.sleep(5)
            self.close_connection = True
            return
        if path in ("/stream.json", "/revoked.json"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            def ev(name, data):
                self.wfile.write(("event: %s\ndata: %s\n\n" % (name, data)).encode()); self.wfile.flush()
            if path == "/revoked.json":
                ev("put", '{"path":"/","data":1}')
                time.sleep(0.2)
                ev("auth_revoked", "credential is no longer valid")
                time.sleep(1)
            elif c == 1:
                ev("put", '{"path":"/","data":{"a":1}}')
                ev("keep-alive", "null")
                time.sleep(0.2)
                ev("put", '{"path":"/b","data":2}')
                time.sleep(0.2)
            elif c == 2:
                ev("cancel", '"maintenance"')
                time.sleep(0.2)
            else:
                ev("put", '{"path":"/","data":{"a":1,"b":2,"c":3}}')
                time.sleep(0.2)
                ev("patch", '{"path":"/","data":{"a":null}}')
                time.sleep(5)
            self.close_connection = True
            return
        return self.send(404, '{"error":"not here"}')
    do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = handle_any

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_port, flush=True)
srv.serve_forever()
"""#
}
