#!/usr/bin/env bash
# Budgets of `rtdb serve` across connections: listens and descriptors.
#
#   benchmarks/budgets.sh [path/to/rtdb]
#
# Without an argument it uses .build-bench/release/rtdb (what run.sh builds), else
# .build/release/rtdb. Measures, each on a fresh server in a temp dir removed on exit:
#
#   listens   6 realtime connections x LISTENS (default 50,000) listens on paths never written,
#             then the latency (p50, p99) of 200 PUTs elsewhere, against the same PUTs before
#             any listen; the server runs with --max-listens above the total.
#   cap       one connection asks for 1,200 listens of a server started with --max-listens 1000:
#             how many are answered ok and how many refused "too many listens on this server".
#   fds       under `ulimit -n 256` with --data-dir, 100 SSE streams on 100 namespaces and a PUT
#             on each: streams opened and refused (503), PUTs answered, descriptors in use, and
#             how long a new client's GET takes.
#
# Prints one JSON object per measurement. Needs python3 and sh. Takes about a minute.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
rtdb="${1:-}"
if [[ -z "$rtdb" ]]; then
    for candidate in "$root/.build-bench/release/rtdb" "$root/.build/release/rtdb"; do
        [[ -x "$candidate" ]] && { rtdb="$candidate"; break; }
    done
fi
[[ -n "$rtdb" && -x "$rtdb" ]] || { echo "budgets.sh: give the rtdb binary to measure (or build .build-bench)" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/rtdb-budgets.XXXXXX")"
trap 'rm -rf "$work"' EXIT

RTDB="$rtdb" WORK="$work" BENCH_DIR="$here" LISTENS="${LISTENS:-50000}" python3 - <<'PY'
import json, os, socket, subprocess, sys, threading, time
sys.path.insert(0, os.environ["BENCH_DIR"])
from realtime_bench import Conn

rtdb, work, listens = os.environ["RTDB"], os.environ["WORK"], int(os.environ["LISTENS"])

def start(argv, name, shell=None):
    out = open(os.path.join(work, name + ".out"), "wb+")
    err = open(os.path.join(work, name + ".err"), "wb")
    cmd = ["sh", "-c", shell, "sh"] + argv if shell else [rtdb] + argv
    p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        out.seek(0)
        line = out.readline()
        if line.endswith(b"\n"):
            url = json.loads(line)["url"]
            host, port = url[len("http://"):].rsplit(":", 1)
            return p, host, int(port)
        if p.poll() is not None:
            break
        time.sleep(0.02)
    raise RuntimeError(f"{name} did not start: " + open(os.path.join(work, name + ".err")).read())

def stop(p):
    p.terminate()
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()

def read_response(sock, buf=b""):
    """One HTTP response (Content-Length framed); returns (status, body, rest)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed")
        rest += chunk
    return status, rest[:length], rest[length:]

def put_latencies(host, port, n=200, ns=None):
    s = socket.create_connection((host, port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    q = f"?ns={ns}" if ns else ""
    times = []
    for i in range(n):
        body = str(i).encode()
        t0 = time.perf_counter()
        s.sendall(f"PUT /probe.json{q} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        status, _, _ = read_response(s)
        times.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise RuntimeError(f"PUT answered {status}")
    s.close()
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99) - 1]

def listen_all(c, paths):
    """Sends a listen for each path, in bulk; returns (ok, refused messages)."""
    frames = []
    for i, p in enumerate(paths):
        payload = json.dumps({"t": "d", "d": {"r": i + 1, "a": "q", "b": {"p": p, "h": ""}}}, separators=(",", ":")).encode()
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
        frames.append(head + b"\0\0\0\0" + payload)
    sender = threading.Thread(target=lambda: [c.sock.sendall(b"".join(frames[i:i + 500])) for i in range(0, len(frames), 500)],
                              daemon=True)
    sender.start()
    ok, refused = 0, []
    while ok + len(refused) < len(paths):
        m = c.next_message()
        d = m.get("d", {})
        if m.get("t") == "d" and "r" in d:
            if d["b"].get("s") == "ok":
                ok += 1
            else:
                refused.append(d["b"])
    sender.join(60)
    return ok, refused

def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

# listens: many listens elsewhere, an unrelated PUT's latency
p, host, port = start(["serve", "--port", "0", "--db", os.path.join(work, "listens.db"), "--max-listens", str(6 * listens + 1000)], "listens")
try:
    before = put_latencies(host, port)
    conns = []
    t0 = time.perf_counter()
    for k in range(6):
        c = Conn(host, port, ns="listens")
        c.sock.settimeout(120)
        ok, refused = listen_all(c, [f"/idle/c{k}/{i}" for i in range(listens)])
        if refused:
            raise RuntimeError(f"listen refused: {refused[0]}")
        conns.append(c)
    opened_s = time.perf_counter() - t0
    after = put_latencies(host, port, ns="listens")
    print(json.dumps({"measure": "listens", "listens": 6 * listens, "opened_s": round(opened_s, 2),
                      "put_p50_ms_before": round(before[0], 3), "put_p99_ms_before": round(before[1], 3),
                      "put_p50_ms_with_listens": round(after[0], 3), "put_p99_ms_with_listens": round(after[1], 3),
                      "rss_mb": round(rss_kb(p.pid) / 1024, 1)}), flush=True)
    for c in conns:
        c.sock.close()
finally:
    stop(p)

# cap: listens past --max-listens are refused
p, host, port = start(["serve", "--port", "0", "--db", os.path.join(work, "cap.db"), "--max-listens", "1000"], "cap")
try:
    c = Conn(host, port, ns="cap")
    c.sock.settimeout(60)
    ok, refused = listen_all(c, [f"/cap/{i}" for i in range(1200)])
    print(json.dumps({"measure": "cap", "asked": 1200, "ok": ok, "refused": len(refused),
                      "message": refused[0].get("d") if refused else None}), flush=True)
    c.sock.close()
finally:
    stop(p)

# fds: streams across namespaces under ulimit -n 256
data = os.path.join(work, "data")
os.makedirs(data)
p, host, port = start([data], "fds", shell='ulimit -n 256 && exec "$RTDB" serve --port 0 --data-dir "$1"')
try:
    streams, opened, refused = [], 0, 0
    for i in range(100):
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(f"GET /live.json?ns=ns{i} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        if head.startswith(b"HTTP/1.1 200"):
            opened += 1
        elif head.startswith(b"HTTP/1.1 503"):
            refused += 1
        streams.append(s)
    w = socket.create_connection((host, port), timeout=10)
    answered, buf = 0, b""
    for i in range(100):
        w.sendall(f"PUT /live.json?ns=ns{i} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1".encode())
        status, _, buf = read_response(w, buf)
        answered += status == 200
    fds = len(os.listdir(f"/proc/{p.pid}/fd"))
    t0 = time.perf_counter()
    g = socket.create_connection((host, port), timeout=10)
    g.sendall(b"GET /live.json?ns=ns5 HTTP/1.1\r\nHost: x\r\n\r\n")
    status, _, _ = read_response(g)
    new_client_ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({"measure": "fds", "ulimit": 256, "streams_opened": opened, "streams_refused_503": refused,
                      "puts_answered_200": answered, "descriptors_in_use": fds, "new_client_get_status": status,
                      "new_client_get_ms": round(new_client_ms, 2)}), flush=True)
    for s in streams + [w, g]:
        s.close()
finally:
    stop(p)
PY
