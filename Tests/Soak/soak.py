#!/usr/bin/env python3
"""A bounded soak of `rtdb serve`: clients of every kind connect, listen, write small and large
values, vanish without a goodbye and come back, for about a minute; then SIGTERM.

It fails on any crash (the server gone before SIGTERM, or an exit status other than 143), on
any report of the thread sanitizer or of a Swift runtime error in the server's stderr, and on
any acknowledged write that is not in the file afterwards.

    soak.py RTDB_BINARY [--seconds N] [--seed N]

Run by `make test` against the binary built with `--sanitize=thread`. Standard library only.
"""
import argparse
import base64
import http.client
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# What a crash or a sanitizer report looks like in the server's stderr.
FATAL_MARKERS = ("ThreadSanitizer", "Fatal error", "Program crashed", "AddressSanitizer", "runtime error")


class Ledger:
    """Acknowledged writes: path -> the value the server said it stored (unique paths)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}
        self.counts = {"rest_writes": 0, "realtime_writes": 0, "large_writes": 0, "huge_writes": 0,
                       "sse_streams": 0, "realtime_listens": 0, "events": 0, "abrupt_drops": 0,
                       "failed_requests": 0, "huge_event_bytes": 0}
        self.failures = []

    def ack(self, path, value):
        with self.lock:
            self.acked[path] = value

    def count(self, name, n=1):
        with self.lock:
            self.counts[name] += n

    def failed(self, why):
        with self.lock:
            self.counts["failed_requests"] += 1
            if len(self.failures) < 5:
                self.failures.append(why)


def value_for(rng, size):
    return {"n": rng.randrange(1 << 30), "s": "v" * size}


def rest_writer(port, ledger, stop, wid, seed):
    rng = random.Random(seed)
    i = 0
    while not stop.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            for _ in range(rng.randrange(1, 20)):
                if stop.is_set():
                    break
                i += 1
                roll = rng.random()
                # The first writer makes every 15th write a huge one: it runs away from the loop
                # (a detached write), and a slow (sanitized) build still makes a few.
                if roll < 0.01 or (wid == 0 and i % 15 == 1):
                    size, kind = 1_200_000, "huge_writes"
                elif roll < 0.15:
                    size, kind = rng.randrange(20_000, 200_000), "large_writes"
                else:
                    size, kind = rng.randrange(1, 400), "rest_writes"
                # Huge values go where no stream follows: every (re)connecting stream would get
                # them whole, which a sanitized build serves too slowly for the rest to happen.
                path = "/soak/%s/w%d/k%d" % ("huge" if kind == "huge_writes" else "rest", wid, i)
                if rng.random() < 0.05:
                    # Half a request, then gone: nothing may be stored for it, and nothing breaks.
                    s = socket.create_connection(("127.0.0.1", port))
                    body = json.dumps(value_for(rng, size)).encode()
                    s.sendall(b"PUT %s.json HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(body))
                              + body[: len(body) // 2])
                    reset(s)
                    ledger.count("abrupt_drops")
                    continue
                v = value_for(rng, size)
                conn.request("PUT", path + ".json", body=json.dumps(v))
                r = conn.getresponse()
                data = r.read()
                if r.status == 200:
                    ledger.ack(path, json.loads(data))
                    ledger.count(kind)
                else:
                    ledger.failed("PUT %s (%s): %d %s" % (path, kind, r.status, data[:200]))
                if rng.random() < 0.1:
                    conn.request("GET", "/soak/rest/w%d/k%d.json" % (wid, rng.randrange(1, i + 1)))
                    conn.getresponse().read()
        except (OSError, http.client.HTTPException) as e:
            ledger.failed("REST writer %d: %r" % (wid, e))
        finally:
            conn.close()


def reset(s):
    """Closes with an RST: the server finds out on its next read or write."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def sse_client(port, ledger, stop, seed):
    rng = random.Random(seed)
    while not stop.is_set():
        try:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
            s.connect(("127.0.0.1", port))
            follow = rng.choice((b"/soak/rt", b"/soak/rest/w1", b"/soak/rest/w2", b"/soak/rest"))
            s.sendall(b"GET " + follow + b".json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            ledger.count("sse_streams")
            s.settimeout(0.2)
            until = time.time() + rng.uniform(0.2, 3.0)
            reading = rng.random() < 0.6      # the others never read: the server queues for them
            while time.time() < until and not stop.is_set():
                if reading:
                    try:
                        if s.recv(65536):
                            ledger.count("events")
                    except socket.timeout:
                        pass
                else:
                    time.sleep(0.05)
            reset(s) if rng.random() < 0.5 else s.close()
            ledger.count("abrupt_drops")
        except OSError:
            ledger.count("failed_requests")


def huge_follower(port, ledger, stop):
    """One stream that follows the first writer's huge values for the whole soak (its first
    event is empty): each huge write is read back for it on a thread of its own (the server's
    event builder), and it is sent whole."""
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /soak/huge/w0.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                data = s.recv(1 << 20)
            except socket.timeout:
                continue
            if not data:
                ledger.failed("the stream on /soak/huge/w0 was closed by the server")
                return
            ledger.count("huge_event_bytes", len(data))
        s.close()
    except OSError as e:
        ledger.failed("the stream on /soak/huge/w0: %r" % e)


def ws_frame(payload):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class WSReader:
    """Unmasked server frames from a socket: text payloads, in order (continuations joined)."""

    def __init__(self, s):
        self.s = s
        self.buf = b""
        self.parts = b""

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise OSError("closed")
            self.buf += chunk

    def message(self):
        while True:
            self._need(2)
            b0, b1 = self.buf[0], self.buf[1]
            n, off = b1 & 0x7F, 2
            if n == 126:
                self._need(4)
                n, off = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10)
                n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
            self._need(off + n)
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            op = b0 & 0x0F
            if op == 8:
                raise OSError("close frame")
            if op in (1, 0):
                self.parts += payload
                if b0 & 0x80:
                    text, self.parts = self.parts, b""
                    # Firebase splits long messages: a bare count first, then that many frames.
                    if text.isdigit():
                        k = int(text)
                        whole = b""
                        for _ in range(k):
                            whole += self.message().encode()
                        return whole.decode()
                    return text.decode()


def realtime_client(port, ledger, stop, cid, seed):
    rng = random.Random(seed)
    r = 0
    i = 0
    while not stop.is_set():
        s = None
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            key = base64.b64encode(os.urandom(16))
            s.sendall(b"GET /.ws?v=5 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    raise OSError("closed during upgrade")
                head += chunk
            reader = WSReader(s)
            reader.buf = head.split(b"\r\n\r\n", 1)[1]
            r += 1
            s.sendall(ws_frame(json.dumps({"t": "d", "d": {"r": r, "a": "q", "b": {"p": "/soak/rt", "h": ""}}}).encode()))
            ledger.count("realtime_listens")
            until = time.time() + rng.uniform(0.3, 3.0)
            while time.time() < until and not stop.is_set():
                i += 1
                r += 1
                path = "/soak/rt/c%d/k%d" % (cid, i)
                v = value_for(rng, rng.choice((10, 100, 5_000, 60_000)))
                s.sendall(ws_frame(json.dumps({"t": "d", "d": {"r": r, "a": "p", "b": {"p": path, "d": v}}}).encode()))
                # Read until this write's answer (events for everyone's writes come meanwhile).
                while True:
                    msg = json.loads(reader.message())
                    d = msg.get("d", {})
                    if msg.get("t") == "d" and d.get("r") == r:
                        if d.get("b", {}).get("s") == "ok":
                            ledger.ack(path, v)
                            ledger.count("realtime_writes")
                        else:
                            ledger.count("failed_requests")
                        break
                    ledger.count("events")
            if rng.random() < 0.5:
                reset(s)
            else:
                s.close()
            s = None
            ledger.count("abrupt_drops")
        except (OSError, ValueError):
            ledger.count("failed_requests")
        finally:
            if s is not None:
                s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rtdb")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rtdb-soak-")
    db = os.path.join(work, "soak.db")
    err_path = os.path.join(work, "serve.stderr")
    err = open(err_path, "wb")
    serve = subprocess.Popen([args.rtdb, "--db", db, "serve", "--port", "0"], stdout=subprocess.PIPE,
                             stderr=err, stdin=subprocess.DEVNULL)
    line = serve.stdout.readline()
    if not line:
        print("soak: serve did not start")
        sys.exit(1)
    port = int(json.loads(line)["url"].rsplit(":", 1)[1])

    ledger = Ledger()
    stop = threading.Event()
    threads = []
    for w in range(4):
        threads.append(threading.Thread(target=rest_writer, args=(port, ledger, stop, w, args.seed * 100 + w)))
    for c in range(6):
        threads.append(threading.Thread(target=sse_client, args=(port, ledger, stop, args.seed * 200 + c)))
    for c in range(4):
        threads.append(threading.Thread(target=realtime_client, args=(port, ledger, stop, c, args.seed * 300 + c)))
    threads.append(threading.Thread(target=huge_follower, args=(port, ledger, stop)))
    for t in threads:
        t.daemon = True
        t.start()

    failures = []
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        time.sleep(0.5)
        if serve.poll() is not None:
            failures.append("serve ended during the soak with status %s" % serve.returncode)
            break
    stop.set()
    for t in threads:
        t.join(timeout=60)
    if serve.poll() is None:
        serve.send_signal(signal.SIGTERM)
        try:
            status = serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            serve.kill()
            status = serve.wait()
            failures.append("serve did not stop within 60 s of SIGTERM")
        if status != -signal.SIGTERM and status != 143:
            failures.append("serve exited with %s after SIGTERM, not 143" % status)
    err.close()
    stderr = open(err_path, "rb").read().decode("utf-8", "replace")
    for marker in FATAL_MARKERS:
        if marker in stderr:
            at = stderr.index(marker)
            failures.append("serve's stderr has %r:\n%s" % (marker, stderr[max(0, at - 200):at + 3000]))
            break

    # Every acknowledged write is in the file.
    got = subprocess.run([args.rtdb, "--db", db, "get", "/soak"], capture_output=True, timeout=600)
    if got.returncode != 0:
        failures.append("reading the file back failed: %s" % got.stderr.decode()[-500:])
        tree = {}
    else:
        tree = json.loads(got.stdout or b"null") or {}
    lost = 0
    for path, value in ledger.acked.items():
        node = tree
        for key in path.split("/")[2:]:
            node = node.get(key) if isinstance(node, dict) else None
        if node != value:
            lost += 1
            if lost <= 5:
                failures.append("acknowledged write lost: %s" % path)
    if lost > 5:
        failures.append("... %d acknowledged writes lost in all" % lost)
    c = ledger.counts
    print("soak: %.0f s, %d acknowledged writes (%d REST, %d large, %d huge, %d realtime), %d streams, %d listens, "
          "%d events read, %d bytes of huge writes' events, %d abrupt drops, %d requests refused or cut" %
          (args.seconds, len(ledger.acked), c["rest_writes"], c["large_writes"], c["huge_writes"],
           c["realtime_writes"], c["sse_streams"], c["realtime_listens"], c["events"], c["huge_event_bytes"],
           c["abrupt_drops"], c["failed_requests"]))
    # Enough happened for the soak to mean something.
    if len(ledger.acked) < 100 or c["sse_streams"] < 10 or c["realtime_listens"] < 10 or c["huge_writes"] < 1 \
            or c["huge_event_bytes"] < 1_000_000:
        failures.append("too little traffic for a soak: %s" % c)
    for why in ledger.failures:
        print("soak: a client's request failed (the server may refuse or cut some): " + why)
    for f in failures:
        print("soak: FAILED: " + f)
    if not failures:
        print("soak: passed")
    if not failures:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
