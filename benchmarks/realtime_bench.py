"""Benchmark of `rtdb serve`'s realtime protocol (goal w), called from bench.py or run alone:

    python3 benchmarks/realtime_bench.py path/to/rtdb [CONNECTIONS LISTENS-PER-CONNECTION WRITES]

1,000 listens (10 WebSocket connections × 100 listens, each on its own path /w/cC/kK) held by
one server; an 11th connection writes (`p`) one of the listened paths at a time, chosen at
random with a fixed seed, and the time from sending the write to the data push arriving on the
listening connection is the latency (goal p50 ≤ 5 ms). Then one multi-path update (`m`) at /w
touches every listened path: the time until all 1,000 pushes arrived is reported too.

The client speaks RFC 6455 by hand (masked client frames, unmasked server frames) and reads all
sockets through one epoll loop. Only the standard library.
"""
import base64
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time


class Conn:
    def __init__(self, host, port, ns="bench"):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /.ws?v=5&ns={ns} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("the server closed the connection during the upgrade")
            buf += chunk
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0] + b" ":
            raise RuntimeError("upgrade refused: " + head.split(b"\r\n")[0].decode())
        self.r = 0
        self.messages = []
        self.hello = self.next_message()

    def send(self, obj):
        payload = json.dumps(obj, separators=(",", ":")).encode()
        n = len(payload)
        if n < 126:
            hdr = bytes([0x81, 0x80 | n])
        elif n < 65536:
            hdr = bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(hdr + mask + masked)

    def request(self, action, body):
        self.r += 1
        self.send({"t": "d", "d": {"r": self.r, "a": action, "b": body}})
        return self.r

    def parse(self):
        """Moves every whole text message in the buffer to self.messages."""
        while len(self.buf) >= 2:
            b0, b1 = self.buf[0], self.buf[1]
            n = b1 & 0x7F
            off = {126: 4, 127: 10}.get(n, 2)
            if len(self.buf) < off:
                return
            if n == 126:
                n = struct.unpack(">H", self.buf[2:4])[0]
            elif n == 127:
                n = struct.unpack(">Q", self.buf[2:10])[0]
            if len(self.buf) < off + n:
                return
            data, self.buf = self.buf[off:off + n], self.buf[off + n:]
            if b0 & 0x0F == 0x1:
                self.messages.append(data)

    def feed(self):
        """Reads what is there (non-blocking); returns the new messages."""
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return []
        if not chunk:
            raise RuntimeError("the server closed a connection")
        self.buf += chunk
        self.parse()
        out, self.messages = self.messages, []
        return out

    def next_message(self):
        while not self.messages:
            self.parse()
            if self.messages:
                break
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the server closed a connection")
            self.buf += chunk
        return json.loads(self.messages.pop(0))

    def call(self, action, body):
        r = self.request(action, body)
        while True:
            m = self.next_message()
            d = m.get("d", {})
            if m.get("t") == "d" and d.get("r") == r:
                if d["b"]["s"] != "ok":
                    raise RuntimeError(f"{action} answered {d['b']}")
                return d["b"]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def measure(rtdb, workdir, connections=10, per_connection=100, writes=500, warmup=20, seed=10, ctx=None):
    """Returns a dict of figures; the server is started here (through ctx.spawn when given, so
    that the harness stops it whatever happens) and stopped here."""
    db = os.path.join(workdir, "w.db")
    subprocess.run([rtdb, "--db", db, "set", "/w", "{}"], check=True, capture_output=True)
    cmd = [rtdb, "--db", db, "serve", "--port", "0"]
    server = ctx.spawn(cmd) if ctx else subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = json.loads(server.stdout.readline())["url"]
        host, port = url[len("http://"):].rsplit(":", 1)
        port = int(port)
        listeners = [Conn(host, port) for _ in range(connections)]
        owner = {}
        for c, conn in enumerate(listeners):
            # Listens pipelined, then every answer (and the initial null data pushes) read.
            want = []
            for k in range(per_connection):
                path = f"/w/c{c}/k{k}"
                owner[path[1:]] = conn
                want.append(conn.request("q", {"p": path, "h": ""}))
            answered = set()
            while len(answered) < len(want):
                m = conn.next_message()
                d = m.get("d", {})
                if m.get("t") == "d" and "r" in d:
                    if d["b"]["s"] != "ok":
                        raise RuntimeError(f"listen answered {d['b']}")
                    answered.add(d["r"])
        writer = Conn(host, port)
        ep = select.epoll()
        by_fd = {}
        for conn in listeners:
            conn.sock.setblocking(False)
            ep.register(conn.sock.fileno(), select.EPOLLIN)
            by_fd[conn.sock.fileno()] = conn
        for conn in listeners:
            conn.feed()

        def wait_for(paths, deadline_s=10):
            """Arrival times of the data pushes for `paths` (strings without a leading slash)."""
            left = set(paths)
            arrived = {}
            deadline = time.monotonic() + deadline_s
            while left and time.monotonic() < deadline:
                for fd, _ in ep.poll(0.5):
                    now = time.perf_counter()
                    for raw in by_fd[fd].feed():
                        m = json.loads(raw)
                        d = m.get("d", {})
                        if d.get("a") == "d" and d["b"]["p"] in left:
                            left.discard(d["b"]["p"])
                            arrived[d["b"]["p"]] = now
            if left:
                raise RuntimeError(f"{len(left)} pushes never arrived, e.g. {sorted(left)[:3]}")
            return arrived

        rng = random.Random(seed)
        paths = sorted(owner)
        latencies = []
        for i in range(warmup + writes):
            p = rng.choice(paths)
            t0 = time.perf_counter()
            writer.request("p", {"p": "/" + p, "d": {"i": i}})
            t = wait_for([p])[p]
            if i >= warmup:
                latencies.append((t - t0) * 1000)
            writer.next_message()   # the write's answer
        # One multi-path update touching all listened paths.
        body = {p[2:]: {"all": 1} for p in paths}
        t0 = time.perf_counter()
        writer.request("m", {"p": "/w", "d": body})
        arrived = wait_for(paths, 30)
        fan = (max(arrived.values()) - t0) * 1000
        return {"connections": connections, "listens": connections * per_connection, "writes": writes,
                "p50": pct(latencies, 0.5), "p99": pct(latencies, 0.99), "max": max(latencies), "fanout_ms": fan}
    finally:
        if ctx:
            ctx.stop(server)
        else:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def bench_w(ctx, res):
    f = measure(ctx.rtdb, ctx.work, ctx=ctx)
    what = f"{f['listens']:,} listens over {f['connections']} realtime connections to rtdb serve, one `p` write → its push"
    res.add("w", what + f", p50 of {f['writes']}", f"{f['p50']:.2f} ms", "≤ 5 ms", f["p50"] <= 5)
    res.add("w", "  the same, p99", f"{f['p99']:.2f} ms", "", None)
    res.add("w", f"one `m` update of all {f['listens']:,} listened paths → the last of their pushes",
            f"{f['fanout_ms']:.1f} ms", "", None)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 5):
        sys.exit("usage: realtime_bench.py RTDB [CONNECTIONS LISTENS-PER-CONNECTION WRITES]")
    extra = [int(a) for a in sys.argv[2:]]
    with tempfile.TemporaryDirectory() as work:
        kw = dict(zip(("connections", "per_connection", "writes"), extra))
        print(json.dumps(measure(os.path.abspath(sys.argv[1]), work, **kw)))
