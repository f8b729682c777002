"""Shared fixtures for the conformance suite.

Every test gets a fresh temporary folder, and a server started on a free port against a file in
it (`serve`, `server`); every server a test starts is stopped when the test ends, alternately with
SIGINT and SIGTERM, and must then exit with status 130 or 143 (a server that died during the test
fails it too). `rtdb` runs the command-line tool on the same file. The binary under test is
$RTDB_BIN (default: the debug build, .build/debug/rtdb).
"""

import json
import os
import resource
import signal
import socket
import subprocess
import threading
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RTDB_BIN = os.path.abspath(os.environ.get("RTDB_BIN") or os.path.join(REPO, ".build", "debug", "rtdb"))

# Upper bound for one test, so a server that stops answering fails a test instead of hanging
# the whole run. Generous: CI machines are small and busy.
TEST_TIME_LIMIT = int(os.environ.get("RTDB_CONFORMANCE_TEST_LIMIT", "180"))
READY_TIMEOUT = 15.0
STOP_TIMEOUT = 20.0

_stop_counter = [0]

# The fault tests open a thousand connections at once, from this process to a server that
# inherits the limit: raise the soft limit on open files as far as the hard limit allows.
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
_want = 65536 if _hard == resource.RLIM_INFINITY else min(_hard, 65536)
if _soft != resource.RLIM_INFINITY and _soft < _want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (_want, _hard))


class ServerDied(AssertionError):
    pass


class Server:
    """One `rtdb serve` process, started on port 0 and ready once it printed its listening line."""

    def __init__(self, folder, args, db=None, data_dir=None):
        self.folder = folder
        self.db = db
        self.data_dir = data_dir
        self.args = list(args)
        self.out_path = os.path.join(folder, "serve.%d.out" % id(self))
        self.err_path = os.path.join(folder, "serve.%d.err" % id(self))
        self.proc = None
        self.url = None
        self.host = None
        self.port = None
        self.ready = None
        self.killed = False
        self.stopped = False

    def command(self):
        cmd = [RTDB_BIN]
        if self.db is not None:
            cmd += ["--db", self.db]
        cmd += ["serve", "--port", "0"]
        if self.data_dir is not None:
            cmd += ["--data-dir", self.data_dir]
        return cmd + self.args

    def start(self):
        if not os.access(RTDB_BIN, os.X_OK):
            raise AssertionError("no rtdb binary at %s: build it (swift build) or set RTDB_BIN" % RTDB_BIN)
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, cwd=self.folder)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            with open(self.out_path, "rb") as f:
                text = f.read()
            if b"\n" in text:
                break
            if self.proc.poll() is not None:
                raise ServerDied("rtdb serve exited with status %s before listening; stderr: %s"
                                 % (self.proc.returncode, self.stderr()))
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("rtdb serve printed no listening line within %ss" % READY_TIMEOUT)
            time.sleep(0.01)
        line = text.split(b"\n", 1)[0]
        self.ready = json.loads(line)
        assert self.ready.get("event") == "listening", line
        self.url = self.ready["url"]
        assert self.url.startswith("http://"), self.url
        hostport = self.url[len("http://"):].rstrip("/")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr(self):
        try:
            with open(self.err_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_lines(self):
        """The JSON lines printed on stderr with --log."""
        lines = []
        for line in self.stderr().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
        return lines

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS for pid %d" % self.proc.pid)

    def connect(self, timeout=10.0):
        """A raw TCP connection to the server (the caller closes it)."""
        return socket.create_connection((self.host, self.port), timeout=timeout)

    def kill9(self):
        self.killed = True
        self.proc.kill()
        self.proc.wait(timeout=STOP_TIMEOUT)

    def stop(self, sig):
        """Sends sig and returns the exit status (killing the server if it does not exit)."""
        self.stopped = True
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("rtdb serve did not exit within %ss of signal %d" % (STOP_TIMEOUT, sig))


def _finish(server):
    """Stops a server at the end of a test, checking it was still running and exits as documented."""
    if server.proc is None or server.ready is None or server.killed or server.stopped:
        return  # never started (already reported), or ended by the test itself
    status = server.proc.poll()
    if status is not None:
        raise ServerDied("rtdb serve died during the test with status %d; stderr tail: %s"
                         % (status, server.stderr()[-2000:]))
    _stop_counter[0] += 1
    sig, expected = (signal.SIGINT, 130) if _stop_counter[0] % 2 else (signal.SIGTERM, 143)
    status = server.stop(sig)
    assert status == expected, "rtdb serve exited %s on %s, expected %d" % (
        status, signal.Signals(sig).name, expected)


@pytest.fixture
def folder(tmp_path):
    return str(tmp_path)


@pytest.fixture
def serve(folder):
    """Factory: serve(*options, db=True, data_dir=None) starts a server and returns a Server.

    db=True uses <tmp>/db.db, a string another file, None no --db (with data_dir)."""
    started = []

    def start(*options, db=True, data_dir=None):
        if db is True:
            db = os.path.join(folder, "db.db")
        s = Server(folder, options, db=db, data_dir=data_dir)
        started.append(s)
        return s.start()

    yield start
    errors = []
    for s in started:
        try:
            _finish(s)
        except AssertionError as e:
            errors.append(str(e))
    assert not errors, "; ".join(errors)


@pytest.fixture
def server(serve):
    """A server on <tmp>/db.db with default options."""
    return serve()


class RtdbResult:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self):
        lines = [l for l in self.stdout.splitlines() if l.strip()]
        assert len(lines) == 1, "expected one JSON line, got: %r" % self.stdout
        return json.loads(lines[0])


@pytest.fixture
def rtdb(folder):
    """Runs `$RTDB_BIN --db <tmp>/db.db ARGS…`; fails the test on a non-zero status unless check=False."""

    def run(*args, db=None, check=True, input=None, timeout=60):
        db = db or os.path.join(folder, "db.db")
        proc = subprocess.run([RTDB_BIN, "--db", db] + list(args), input=input, capture_output=True,
                              text=True, timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        result = RtdbResult(proc)
        if check:
            assert proc.returncode == 0, "rtdb %s exited %d: %s" % (" ".join(args), proc.returncode, proc.stderr)
        return result

    return run


@pytest.fixture(autouse=True)
def _time_limit():
    """Fails a test that runs longer than TEST_TIME_LIMIT seconds instead of hanging the run."""

    def expired(signum, frame):
        raise TimeoutError("test exceeded %d s" % TEST_TIME_LIMIT)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIME_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# Raw HTTP over a socket: for what requests and curl cannot send (or hide), and for reading
# exactly what the server wrote.

class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case name -> value (last one wins)
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "<Response %d %r %r>" % (self.status, self.headers, self.body[:200])


class ConnectionClosed(Exception):
    pass


class Reader:
    """Buffered reads of HTTP responses from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionClosed("connection closed by the server")
        self.buf += chunk

    def read_until(self, marker):
        while marker not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(marker, 1)
        return head

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_response(self, method="GET"):
        head = self.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        assert parts[0].startswith("HTTP/1."), "bad status line %r" % lines[0]
        status = int(parts[1])
        reason = parts[2] if len(parts) > 2 else ""
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 100:
            return Response(status, reason, headers, b"")
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.read_until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self.read_until(b"\r\n")
                    break
                body += self.read_exact(size)
                self.read_exact(2)
        elif "content-length" in headers:
            body = self.read_exact(int(headers["content-length"]))
        else:
            body = self.buf
            try:
                while True:
                    self._fill()
            except ConnectionClosed:
                pass
            body, self.buf = self.buf, b""
        return Response(status, reason, headers, body)


def request_bytes(method, path, body=None, headers=None, host="127.0.0.1"):
    """Serialises one HTTP/1.1 request (Content-Length set when there is a body)."""
    headers = dict(headers or {})
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host]
    if body is not None and not any(k.lower() in ("content-length", "transfer-encoding") for k in headers):
        headers["Content-Length"] = str(len(body))
    for k, v in headers.items():
        lines.append("%s: %s" % (k, v))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def http(server, method, path, body=None, headers=None, timeout=15.0):
    """One request on a fresh connection, closed afterwards."""
    with server.connect(timeout) as sock:
        h = {"Connection": "close"}
        h.update(headers or {})
        sock.sendall(request_bytes(method, path, body, h))
        return Reader(sock).read_response(method)


class Dechunker(Reader):
    """A Reader over the decoded body of a chunked response (for streams)."""

    def __init__(self, raw):
        super().__init__(raw.sock)
        self.raw = raw

    def _fill(self):
        size = int(self.raw.read_until(b"\r\n").split(b";")[0], 16)
        if size == 0:
            raise ConnectionClosed("stream ended")
        self.buf += self.raw.read_exact(size)
        self.raw.read_exact(2)


class Stream:
    """An open Server-Sent Events response on its own connection; close() it (or use `with`)."""

    def __init__(self, server, path, headers=None, timeout=15.0):
        self.sock = server.connect(timeout)
        h = {"Accept": "text/event-stream"}
        h.update(headers or {})
        self.sock.sendall(request_bytes("GET", path, None, h))
        raw = Reader(self.sock)
        head = raw.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        self.status = int(lines[0].split(" ")[1])
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.reader = Dechunker(raw) if chunked else raw

    def events(self, count, timeout=15.0):
        return sse_events(self.reader, count, timeout)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def sse_events(reader, count, timeout=15.0):
    """Reads `count` SSE events (name, data-string) from a Reader already past the response head.
    Keep-alive events are skipped."""
    events = []
    deadline = time.monotonic() + timeout
    reader.sock.settimeout(timeout)
    while len(events) < count:
        if time.monotonic() > deadline:
            raise AssertionError("only %d of %d events within %ss: %r" % (len(events), count, timeout, events))
        frame = reader.read_until(b"\n\n").decode("utf-8")
        name, data = None, []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if (name is None and not data) or name == "keep-alive":
            continue
        events.append((name, "\n".join(data)))
    return events


def wait_for(predicate, timeout=10.0, interval=0.05, message="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("%s not met within %ss" % (message, timeout))
        time.sleep(interval)
