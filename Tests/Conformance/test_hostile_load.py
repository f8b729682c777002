"""One client must not stall or exhaust the server: a flood of listens, running out of
descriptors, a thousand namespaces.

Timings are bounded with room for a loaded 2-core machine running the debug build; the
benchmark (benchmarks/hostile_bench.py) measures the release build against the figures
the documentation (docs/serve-limits.md) states."""

import json
import os
import resource
import socket
import threading
import time

import pytest

from conftest import http
from realtime_client import WS, connect

ADMIN = {"Authorization": "Bearer owner"}


def cpu_seconds(pid):
    """User plus system CPU time of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steady_descriptors(pid, quiet=0.3, limit=10.0):
    """The process's open descriptors once the count has not changed for `quiet` seconds."""
    deadline = time.monotonic() + limit
    last, since = descriptors(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = descriptors(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


def read_response(s):
    """One whole HTTP response with a Content-Length body, read from socket `s`."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = s.recv(4096)
        assert part, data
        data += part
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
    while len(body) < length:
        part = s.recv(4096)
        assert part, data
        body += part
    return head + b"\r\n\r\n" + body


def descriptors(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Probe:
    """Another client's small read, every 50 ms on its own connection, recording the slowest."""

    def __init__(self, server):
        self.server = server
        self.worst = 0.0
        self.count = 0
        self.failed = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.done.is_set():
            started = time.monotonic()
            try:
                r = http(self.server, "GET", "/probe.json?ns=demo", timeout=10.0)
                assert r.status == 200, r
            except Exception as e:  # noqa: BLE001 (reported by stop())
                self.failed = e
                return
            self.worst = max(self.worst, time.monotonic() - started)
            self.count += 1
            self.done.wait(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(15)
        assert self.failed is None, self.failed


def timed_get(server):
    started = time.monotonic()
    r = http(server, "GET", "/probe.json?ns=demo")
    assert r.status == 200, r
    return time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# Many listens are cheap

FLOOD = 16_000


def send_listens(ws, count):
    """Sends `count` listens on distinct paths in large writes (as fast as a socket takes them)."""
    batch = []
    for i in range(count):
        ws.r += 1
        text = json.dumps({"t": "d", "d": {"r": ws.r, "a": "q", "b": {"p": "/flood/%d" % i, "h": ""}}},
                          separators=(",", ":")).encode()
        batch.append(frame(text))
        if len(batch) == 500:
            ws.sock.sendall(b"".join(batch))
            batch = []
    if batch:
        ws.sock.sendall(b"".join(batch))


def frame(payload):
    """A masked text frame (the mask is zero: clients must mask, any key is valid)."""
    n = len(payload)
    head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    return head + b"\0\0\0\0" + payload


def test_a_flood_of_listens_is_answered_without_stalling_others(server):
    assert http(server, "PUT", "/probe.json?ns=demo", {"ok": True}).status == 200
    ws = connect(server)
    ws.sock.settimeout(30)
    with Probe(server) as probe:
        started = time.monotonic()
        sender = threading.Thread(target=send_listens, args=(ws, FLOOD), daemon=True)
        sender.start()
        oks = 0
        while oks < FLOOD:
            m = json.loads(ws.recv_raw())
            if m.get("t") == "d" and "r" in m["d"]:
                assert m["d"]["b"]["s"] == "ok", m
                oks += 1
        answered = time.monotonic() - started
        sender.join(10)
    # The documented figures (docs/serve-limits.md) are 3 s and 200 ms on a release build (benchmarks/hostile_bench.py);
    # the debug build on a busy machine gets three times that.
    assert answered < 9.0, "%d listens answered in %.2f s" % (FLOOD, answered)
    assert probe.count > 0
    assert probe.worst < 0.6, "another client waited %.3f s during the flood" % probe.worst
    ws.cut()
    # Closing the connection ends 16,000 listens; the next request does not wait for it.
    time.sleep(0.05)
    worst = max(timed_get(server) for _ in range(3))
    assert worst < 0.3, "a request after the close waited %.3f s" % worst


def test_listens_per_connection_are_capped_with_a_clear_error(server):
    ws = connect(server)
    # Past the cap every new listen is refused (the same path again is not a new listen).
    from_cap = 50_000
    send_listens(ws, from_cap)
    ws.sock.settimeout(60)
    refused = None
    for _ in range(from_cap):
        m = json.loads(ws.recv_raw())
        while not (m.get("t") == "d" and "r" in m["d"]):
            m = json.loads(ws.recv_raw())
        assert m["d"]["b"]["s"] == "ok", m
    answer = ws.call("q", {"p": "/one/more", "h": ""}, timeout=30)
    refused = answer
    assert refused["s"] == "failure", refused
    assert "too many listens on this connection (at most 50000)" in refused["d"], refused
    assert ws.call("n", {"p": "/flood/0"})["s"] == "ok"
    assert ws.call("q", {"p": "/one/more", "h": ""}, timeout=30)["s"] == "ok"
    ws.cut()


# ---------------------------------------------------------------------------------------------
# Out of descriptors, the server waits instead of spinning

@pytest.mark.parametrize("loops", [1, 2])
def test_out_of_descriptors_the_server_waits_and_logs_once_a_second(serve, loops):
    """With two loops, the held connections are served by both: a loop that cannot open the
    file now (it never read it) moves its connection to the writer's loop, which has it open."""
    server = serve("--loops", str(loops))
    assert http(server, "PUT", "/probe.json?ns=demo", {"ok": True}).status == 200
    idle = steady_descriptors(server.pid)   # (the PUT's connection closed)
    held = [server.connect() for _ in range(8)]
    # Every held connection accepted (one descriptor each) before the limit is lowered.
    deadline = time.monotonic() + 10
    while descriptors(server.pid) < idle + len(held) and time.monotonic() < deadline:
        time.sleep(0.01)
    before = descriptors(server.pid)
    assert before == idle + len(held), (idle, before)
    soft, hard = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    # The process may now open only what it has: every new connection fails in accept.
    resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (before, hard))
    clients = []
    try:
        for _ in range(20):
            clients.append(socket.create_connection((server.host, server.port), timeout=5))
        cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
        time.sleep(3.0)
        cpu = (cpu_seconds(server.pid) - cpu0) / (time.monotonic() - t0)
        assert cpu < 0.2, "the server used %.0f%% of a core while out of descriptors" % (cpu * 100)
        paused = [l for l in server.log_lines() if l.get("event") == "accept_paused"]
        assert 1 <= len(paused) <= 5, paused
        assert "Too many open files" in paused[0]["message"], paused[0]
        # Those already connected are still served, on whichever loop holds them.
        for s in held:
            s.sendall(b"GET /probe.json?ns=demo HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_response(s)
            assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b'{"ok":true}'), answer
    finally:
        for c in clients:
            c.close()
        for c in held:
            c.close()
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (soft, hard))
    # Descriptors free again: waiting clients get in.
    assert timed_get(server) < 2.0


def test_max_connections_is_capped_by_the_descriptor_limit(folder):
    """Started under `ulimit -n 64` with --max-connections 10000: connections past what the
    limit leaves room for are refused at once, and the server stays cool and answers."""
    from conftest import Server

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    s = Server(folder, ["--max-connections", "10000"], db=os.path.join(folder, "db.db"))
    import subprocess
    from conftest import RTDB_BIN
    with open(s.out_path, "wb") as out, open(s.err_path, "wb") as err:
        s.proc = subprocess.Popen(s.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                  cwd=folder, preexec_fn=low_limit)
    try:
        deadline = time.monotonic() + 15
        while b"\n" not in open(s.out_path, "rb").read():
            assert s.proc.poll() is None and time.monotonic() < deadline, s.stderr()
            time.sleep(0.01)
        ready = json.loads(open(s.out_path, "rb").read().split(b"\n")[0])
        s.host, port = ready["url"][len("http://"):].rsplit(":", 1)
        s.port = int(port)
        assert RTDB_BIN
        clients = [socket.create_connection((s.host, s.port), timeout=5) for _ in range(80)]
        cpu0, t0 = cpu_seconds(s.proc.pid), time.monotonic()
        time.sleep(1.5)
        cpu = (cpu_seconds(s.proc.pid) - cpu0) / (time.monotonic() - t0)
        assert cpu < 0.2, cpu
        assert descriptors(s.proc.pid) <= 64
        for c in clients:
            c.close()
        time.sleep(0.3)
        assert http(s, "GET", "/x.json").status == 200
        assert not any(l.get("event") == "accept_paused" for l in s.log_lines()), s.stderr()
    finally:
        s.proc.terminate()
        s.proc.wait(20)


# ---------------------------------------------------------------------------------------------
# Namespaces do not pile up

@pytest.fixture
def memory_folder(folder):
    """A folder in memory when the machine has one (/dev/shm): a thousand new database files
    cost a thousand fsyncs on a disk, which would measure the disk rather than the server."""
    import shutil
    import tempfile
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else folder
    path = tempfile.mkdtemp(prefix="rtdb-namespaces-", dir=base)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_thousand_namespaces_leave_few_files_open(serve, memory_folder):
    dbs = os.path.join(memory_folder, "dbs")
    server = serve(db=None, data_dir=dbs)
    with server.connect() as sock:
        from conftest import Reader, request_bytes
        reader = Reader(sock)
        for i in range(1000):
            sock.sendall(request_bytes("PUT", "/v.json?ns=n%d" % i, {"i": i}))
            assert reader.read_response().status == 200
    assert len([f for f in os.listdir(dbs) if f.endswith(".db")]) == 1000
    assert descriptors(server.pid) <= 300, descriptors(server.pid)
    assert server.rss_kb() < 150 * 1024, server.rss_kb()
    # A closed one opens again on its next request.
    assert http(server, "GET", "/v.json?ns=n0").json() == {"i": 0}
    assert http(server, "GET", "/v.json?ns=n999").json() == {"i": 999}


def test_a_stream_keeps_its_namespace_open(serve, folder):
    from conftest import Stream
    dbs = os.path.join(folder, "dbs")
    server = serve(db=None, data_dir=dbs)
    with Stream(server, "/v.json?ns=kept") as stream:
        assert stream.events(1)[0][0] == "put"
        for i in range(100):
            assert http(server, "PUT", "/v.json?ns=other%d" % i, i).status == 200
        assert http(server, "PUT", "/v.json?ns=kept", "after").status == 200
        assert stream.events(1, timeout=5) == [("put", '{"path":"/","data":"after"}')]


def test_the_list_of_databases_needs_the_secret(serve, folder):
    dbs = os.path.join(folder, "dbs")
    rules = os.path.join(folder, "rules.json")
    with open(rules, "w") as f:
        json.dump({"rules": {".read": True, ".write": True}}, f)
    server = serve("--secret", "s3cret", "--rules", rules, db=None, data_dir=dbs)
    assert http(server, "PUT", "/v.json?ns=a&auth=s3cret", 1).status == 200
    # The rules let anyone read a namespace's data, not the list of namespaces.
    assert http(server, "GET", "/v.json?ns=a").status == 200
    assert http(server, "GET", "/.inspect/databases.json").status == 401
    assert http(server, "GET", "/.inspect/databases.json?auth=nope").status == 401
    assert http(server, "GET", "/.inspect/databases.json?auth=s3cret").json() == [{"name": "a"}]
