"""Benchmark of `rtdb serve` with big writes while streams are open (goal v), called from
bench.py or run alone:

    python3 benchmarks/big_events_bench.py path/to/rtdb

Each run starts a server, opens one SSE stream (on a path the write does not touch, or on the
written path itself), and sends one big write while another client GETs a small value every
20 ms. Measured: the slowest of those GETs (goal ≤ 250 ms), the server's peak memory (VmHWM)
against the body (goal ≤ 2.5×), the write's own time, and whether the stream saw its event.

  * an 88 MB PUT of 1.2 M children of three fields, a stream elsewhere;
  * the same children each with an array (`"tags":["a","b"]`), a stream elsewhere (arrays
    take the streamed path);
  * a PATCH of 1,000,000 children, a stream elsewhere;
  * the 88 MB PUT again with the stream on the written path (its event is the whole value).

Only the standard library.
"""
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_bench import Probe, get, peak_kb, start, stop  # noqa: E402


def document(entries, arrays, pad):
    """`entries` children {"name": …, "score": …} (with `"tags":["a","b"]` when `arrays`);
    names padded by `pad` characters."""
    tags = ',"tags":["a","b"]' if arrays else ""
    return ("{" + ",".join('"k%07d":{"name":"user-%07d%s","score":%d%s}' % (i, i, "x" * pad, i % 1000, tags)
                           for i in range(entries)) + "}").encode()


def patch_body(entries):
    return ("{" + ",".join('"c%07d":%d' % (i, i) for i in range(entries)) + "}").encode()


def send(host, port, method, path, body, timeout=900):
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        s.sendall(body)
        head = s.recv(65536)
        while s.recv(1 << 20):
            pass
    if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.1 204"):
        raise RuntimeError(f"{method} failed: {head[:200]!r}")
    return time.perf_counter() - t0


class Stream:
    """An SSE stream read on its own thread: the number of events after the first, and bytes."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=900)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.events = 0
        self.bytes = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return
                self.bytes += len(chunk)
                self.events += chunk.count(b"event: put") + chunk.count(b"event: patch")
        except OSError:
            return

    def close(self):
        self.sock.close()


def measure(rtdb, work, name, method, path, body, stream_path, ctx=None):
    server, host, port = start(rtdb, work, ctx)
    try:
        send(host, port, "PUT", "/probe.json", b'{"ok":true}')
        stream = Stream(host, port, stream_path)
        time.sleep(0.3)
        base_events = stream.events
        probe = Probe(host, port)
        time.sleep(0.2)
        took = send(host, port, method, path, body)
        # The stream's event, when it has one, arrives after the answer.
        deadline = time.time() + 120
        while stream_path.startswith(path.rsplit(".json", 1)[0]) and stream.events == base_events and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        probe.stop()
        peak = peak_kb(server.pid) / 1024
        stream.close()
        return {"name": name, "body_mb": len(body) / 1e6, "write_s": took, "probe_worst_ms": probe.worst * 1000,
                "probes": probe.count, "peak_mb": peak, "peak_ratio": peak * 1024 * 1024 / len(body),
                "stream_events": stream.events - base_events}
    finally:
        stop(server, ctx)
        for f in os.listdir(work):
            if f.startswith("hostile.db"):
                os.remove(os.path.join(work, f))


def runs(rtdb, work, ctx=None):
    plain = document(1_200_000, arrays=False, pad=27)
    out = [measure(rtdb, work, f"{len(plain) / 1e6:.0f} MB PUT, a stream elsewhere", "PUT", "/big.json", plain, "/elsewhere.json", ctx)]
    arrays = document(1_200_000, arrays=True, pad=9)
    out.append(measure(rtdb, work, f"{len(arrays) / 1e6:.0f} MB PUT with arrays, a stream elsewhere", "PUT", "/big.json",
                       arrays, "/elsewhere.json", ctx))
    del arrays
    out.append(measure(rtdb, work, "1,000,000-child PATCH, a stream elsewhere", "PATCH", "/m.json",
                       patch_body(1_000_000), "/elsewhere.json", ctx))
    out.append(measure(rtdb, work, f"{len(plain) / 1e6:.0f} MB PUT, the stream on the written path", "PUT", "/big.json", plain,
                       "/big.json", ctx))
    return out


def bench_v(ctx, res):
    for f in runs(ctx.rtdb, ctx.work, ctx):
        res.add("v", f"{f['name']}: another client's GET meanwhile, slowest of {f['probes']}",
                f"{f['probe_worst_ms']:.0f} ms", "≤ 250 ms", f["probe_worst_ms"] <= 250)
        res.add("v", "  the server's peak memory (VmHWM) / the body", f"{f['peak_mb']:.0f} MB ({f['peak_ratio']:.2f}×)",
                "≤ 2.5×", f["peak_ratio"] <= 2.5)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: big_events_bench.py RTDB")
    rtdb = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        for f in runs(rtdb, work):
            print(json.dumps(f))
