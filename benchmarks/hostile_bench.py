"""Benchmark of `rtdb serve` against clients that try to stall it (goals l and u), called from
bench.py or run alone:

    python3 benchmarks/hostile_bench.py path/to/rtdb [l|u]

(l) A listen flood: one realtime connection sends 16,000 listens (`q`, each on its own path)
as fast as the socket takes them. Measured: the time until all 16,000 are answered (goal ≤ 3 s),
the slowest answer to another client's small GET sent every 20 ms meanwhile (goal ≤ 200 ms),
and, once the flooding connection is dropped, the time the next GET takes (goal ≤ 100 ms).

(u) A huge write: one client PUTs a 90 MB plain JSON document (690,000 children of two fields)
while another GETs a small value every 20 ms. Measured: the slowest of those GETs (goal ≤ 250 ms),
the write's own time, and the server's peak memory (VmHWM) against the body (goal ≤ 2.5×).

Only the standard library.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from realtime_bench import Conn  # noqa: E402


def start(rtdb, work, ctx, *extra):
    cmd = [rtdb, "--db", os.path.join(work, "hostile.db"), "serve", "--port", "0", *extra]
    p = ctx.spawn(cmd) if ctx else subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    if not line:
        raise RuntimeError("serve printed no listening line")
    host, port = json.loads(line)["url"][len("http://"):].rsplit(":", 1)
    return p, host, int(port)


def stop(p, ctx):
    if ctx:
        ctx.stop(p)
    else:
        p.terminate()
        p.wait(20)


def get(host, port, path="/probe.json", timeout=30):
    """One GET on its own connection; returns its time in seconds."""
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("probe GET failed: %r" % data[:200])
    return time.perf_counter() - t0


def put(host, port, path, body, timeout=600):
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        s.sendall(body)
        head = s.recv(65536)
        while s.recv(1 << 20):   # the answer (the stored value) is read and dropped
            pass
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("PUT failed: %r" % head[:200])
    return time.perf_counter() - t0


class Probe:
    """A small GET every 20 ms from another client; `worst` is the slowest."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.worst = 0.0
        self.count = 0
        self.done = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            try:
                self.worst = max(self.worst, get(self.host, self.port))
                self.count += 1
            except Exception as e:  # noqa: BLE001 (reported by stop())
                self.error = e
                return
            self.done.wait(0.02)

    def stop(self):
        self.done.set()
        self.thread.join(60)
        if self.error:
            raise RuntimeError(f"probe failed: {self.error}")


def frame(payload):
    n = len(payload)
    head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    return head + b"\0\0\0\0" + payload


def measure_flood(rtdb, work, listens=16_000, ctx=None):
    server, host, port = start(rtdb, work, ctx)
    try:
        put(host, port, "/probe.json", b'{"ok":true}')
        c = Conn(host, port)
        c.sock.settimeout(60)
        frames = [frame(json.dumps({"t": "d", "d": {"r": i + 1, "a": "q", "b": {"p": f"/flood/{i}", "h": ""}}},
                                   separators=(",", ":")).encode()) for i in range(listens)]
        probe = Probe(host, port)
        time.sleep(0.1)
        t0 = time.perf_counter()
        sender = threading.Thread(target=lambda: [c.sock.sendall(b"".join(frames[i:i + 500]))
                                                  for i in range(0, listens, 500)], daemon=True)
        sender.start()
        answered = 0
        while answered < listens:
            m = c.next_message()
            if m.get("t") == "d" and "r" in m.get("d", {}):
                if m["d"]["b"].get("s") != "ok":
                    raise RuntimeError(f"listen refused: {m}")
                answered += 1
        all_answered = time.perf_counter() - t0
        sender.join(30)
        time.sleep(0.2)
        probe.stop()
        c.sock.close()
        after_close = get(host, port)
        return {"listens": listens, "answered_s": all_answered, "probe_worst_ms": probe.worst * 1000,
                "probes": probe.count, "after_close_ms": after_close * 1000}
    finally:
        stop(server, ctx)


def document(entries):
    return ("{" + ",".join('"k%07d":{"n":%d,"s":"%s"}' % (i, i, "x" * 100) for i in range(entries)) + "}").encode()


def peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure_huge_write(rtdb, work, entries=690_000, ctx=None):
    body = document(entries)
    server, host, port = start(rtdb, work, ctx)
    try:
        put(host, port, "/probe.json", b'{"ok":true}')
        probe = Probe(host, port)
        time.sleep(0.2)
        took = put(host, port, "/big.json", body)
        time.sleep(0.1)
        probe.stop()
        peak = peak_kb(server.pid) / 1024
        return {"body_mb": len(body) / 1e6, "write_s": took, "probe_worst_ms": probe.worst * 1000,
                "probes": probe.count, "peak_mb": peak, "peak_ratio": peak * 1024 * 1024 / len(body)}
    finally:
        stop(server, ctx)


def bench_l(ctx, res):
    f = measure_flood(ctx.rtdb, ctx.work, ctx=ctx)
    res.add("l", f"{f['listens']:,} listens sent at once on one realtime connection → all answered",
            f"{f['answered_s']:.2f} s", "≤ 3 s", f["answered_s"] <= 3)
    res.add("l", f"  another client's GET meanwhile, slowest of {f['probes']}", f"{f['probe_worst_ms']:.0f} ms",
            "≤ 200 ms", f["probe_worst_ms"] <= 200)
    res.add("l", "  the flooding connection dropped → the next GET", f"{f['after_close_ms']:.1f} ms", "≤ 100 ms",
            f["after_close_ms"] <= 100)


def bench_u(ctx, res):
    f = measure_huge_write(ctx.rtdb, ctx.work, ctx=ctx)
    res.add("u", f"a {f['body_mb']:.0f} MB PUT: another client's GET meanwhile, slowest of {f['probes']}",
            f"{f['probe_worst_ms']:.0f} ms", "≤ 250 ms", f["probe_worst_ms"] <= 250)
    res.add("u", "  the server's peak memory (VmHWM) / the body", f"{f['peak_mb']:.0f} MB ({f['peak_ratio']:.2f}×)",
            "≤ 2.5×", f["peak_ratio"] <= 2.5)
    res.add("u", "  the PUT itself, sent to answered", f"{f['write_s']:.1f} s", "", None)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: hostile_bench.py RTDB [l|u]")
    which = sys.argv[2] if len(sys.argv) == 3 else "lu"
    rtdb = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        if "l" in which:
            print(json.dumps({"l": measure_flood(rtdb, work)}))
        if "u" in which:
            print(json.dumps({"u": measure_huge_write(rtdb, work)}))
