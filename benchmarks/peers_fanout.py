"""One write fanned out to 1,000 subscribers (part f of benchmarks/peers.sh): the subscribers of
rtdb serve (SSE), Redis (pub/sub) and etcd (watches through its gRPC gateway), and the loop that
times a write until the last of them has it.

The subscribers are plain sockets read by one epoll loop, each protocol spoken by hand (only the
standard library), so the same reader times all three servers.
"""
import json
import select
import socket
import time

from peers_servers import BenchError, Etcd, Redis, RtdbServer, b64, http_call, rss_kb


class FanRtdb:
    """SSE streams of GET /live.json; the write is a PUT of a JSON string."""
    ready = b"event: put"

    def __init__(self, procs, label, binary):
        self.label, self.binary, self.procs = label, binary, procs

    def start(self):
        db = self.procs.path(f"fan-{self.label}-{time.monotonic_ns()}.db")
        self.server = RtdbServer(self.procs, self.label, self.binary, db).start()
        self.pid, self.port = self.server.p.pid, self.server.port
        http_call(self.port, "PUT", "/live.json", body=b'"start"')

    def subscribe(self):
        return (f"GET /live.json HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                "Accept: text/event-stream\r\n\r\n").encode()

    def marker(self, i):
        return f"fanout-{i:05d}".encode()

    def write(self, sock, i):
        body = b'"' + self.marker(i) + b'"'
        sock.sendall(b"PUT /live.json?print=silent HTTP/1.1\r\nHost: x\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)

    def stop(self):
        self.server.stop()


class FanRedis:
    """SUBSCRIBE live; the write is PUBLISH live MARKER (pub/sub, nothing stored)."""
    label = "redis"
    ready = b":1\r\n"

    def __init__(self, procs):
        self.procs = procs

    def start(self):
        self.server = Redis(self.procs).start()
        self.pid, self.port = self.server.p.pid, self.server.port

    def subscribe(self):
        return b"SUBSCRIBE live\r\n"

    def marker(self, i):
        return f"fanout-{i:05d}".encode()

    def write(self, sock, i):
        sock.sendall(b"PUBLISH live " + self.marker(i) + b"\r\n")

    def stop(self):
        self.server.stop()


class FanEtcd:
    """Watches of key `live` through the gRPC gateway (POST /v3/watch, a JSON line per event);
    the write is POST /v3/kv/put."""
    label = "etcd"
    ready = b'"created":true'

    def __init__(self, procs):
        self.procs = procs

    def start(self):
        self.server = Etcd(self.procs).start()
        self.pid, self.port = self.server.p.pid, self.server.port
        http_call(self.port, "POST", "/v3/kv/put", body=json.dumps({"key": b64("live"), "value": b64("start")}))

    def post(self, path, body):
        return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}").encode()

    def subscribe(self):
        return self.post("/v3/watch", json.dumps({"create_request": {"key": b64("live")}}))

    def marker(self, i):
        return b64(f"fanout-{i:05d}").encode()   # etcd sends the value base64-encoded

    def write(self, sock, i):
        sock.sendall(self.post("/v3/kv/put", json.dumps({"key": b64("live"), "value": b64(f"fanout-{i:05d}")})))

    def stop(self):
        self.server.stop()


def fanout_once(target, n, writes):
    """Starts the target's server, measures its RSS, opens n subscribers, sends writes+1 writes
    (the first a warm-up) one at a time; returns the slowest subscriber's delay of each write
    (ms), the first and the median subscriber's delay of each write, and the RSS growth (KB)."""
    target.start()
    try:
        time.sleep(0.3)
        rss0 = rss_kb(target.pid)
        ep = select.epoll()
        subs = {}
        try:
            req = target.subscribe()
            for _ in range(n):
                s = socket.create_connection(("127.0.0.1", target.port), timeout=10)
                s.setblocking(False)
                s.sendall(req)
                subs[s.fileno()] = [s, b""]
                ep.register(s.fileno(), select.EPOLLIN)

            def drain(want, timeout):
                """Reads every subscriber until each has received `want`; returns arrival times."""
                got = {}
                keep = len(want) - 1
                deadline = time.monotonic() + timeout
                while len(got) < n and time.monotonic() < deadline:
                    for fd, _ in ep.poll(0.5):
                        entry = subs[fd]
                        try:
                            chunk = entry[0].recv(65536)
                        except BlockingIOError:
                            continue
                        now = time.perf_counter()
                        if not chunk:
                            raise BenchError(f"{target.label}: a subscriber's connection was closed")
                        if fd in got:
                            continue
                        buf = entry[1] + chunk
                        if want in buf:
                            got[fd] = now
                            entry[1] = b""
                        else:
                            entry[1] = buf[-keep:] if keep else b""
                return got

            ready = drain(target.ready, 60)
            if len(ready) < n:
                raise BenchError(f"{target.label}: only {len(ready)} of {n} subscribers were set up within 60 s")
            writer = socket.create_connection(("127.0.0.1", target.port), timeout=10)
            writer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            slowest, spread = [], []
            for i in range(writes + 1):
                t0 = time.perf_counter()
                target.write(writer, i)
                got = drain(target.marker(i), 30)
                if len(got) < n:
                    raise BenchError(f"{target.label}: write {i} reached {len(got)} of {n} subscribers in 30 s")
                if not writer.recv(65536):
                    raise BenchError(f"{target.label}: the writer's connection was closed")
                if i:
                    delays = sorted((t - t0) * 1000 for t in got.values())
                    slowest.append(delays[-1])
                    spread.append((delays[0], delays[len(delays) // 2]))
                time.sleep(0.05)
            rss1 = rss_kb(target.pid)
            writer.close()
        finally:
            for s, _ in subs.values():
                s.close()
            ep.close()
        return slowest, spread, rss1 - rss0
    finally:
        target.stop()
