"""Faults and abuse: clients that vanish, lie, flood, stall or crawl, and a server killed mid-write.

Every test ends by checking that the server still answers (and the fixture then checks it stops
with the documented status), and every write test reads the file back with rtdb."""

import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import ConnectionClosed, Reader, Stream, http, request_bytes, wait_for


def assert_serving(server):
    """The server answers a plain read on a new connection."""
    r = http(server, "GET", "/.json?shallow=true", timeout=15)
    assert r.status == 200, r


def closed_by_peer(sock, timeout):
    """True when the server closes (or resets) the connection within timeout, reading away any
    response it sent first; False when the connection is still open then."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def rst_close(sock):
    """Closes with a reset instead of a FIN, as a crashed client's kernel would."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ---------------------------------------------------------------------------------------------
# Bodies that never arrive whole

@pytest.mark.parametrize("how", ["fin", "reset"])
def test_disconnect_mid_body_writes_nothing(server, rtdb, how):
    rtdb("set", "/x", '"before"')
    body = json.dumps({"v": "y" * 2000}).encode()
    sock = server.connect()
    sock.sendall(request_bytes("PUT", "/x.json", None, {"Content-Length": str(len(body)),
                                                          "Content-Type": "application/json"}))
    sock.sendall(body[: len(body) // 2])
    time.sleep(0.3)
    if how == "fin":
        sock.close()
    else:
        rst_close(sock)
    time.sleep(0.5)
    assert_serving(server)
    assert rtdb("get", "/x").json() == "before"
    # Same with a chunked body that stops between chunks.
    sock = server.connect()
    sock.sendall(request_bytes("PUT", "/x.json", None, {"Transfer-Encoding": "chunked"}))
    sock.sendall(b"%x\r\n%s\r\n" % (len(body) // 2, body[: len(body) // 2]))
    time.sleep(0.3)
    sock.close() if how == "fin" else rst_close(sock)
    time.sleep(0.5)
    assert_serving(server)
    assert rtdb("get", "/x").json() == "before"


def test_truncated_json_body_is_400(server, rtdb):
    rtdb("set", "/x", '"before"')
    for body in (b'{"a": {"b": [1, 2', b'{"a": "unterminated', b'[1, 2,', b'{"a":1}{', b'tru'):
        r = http(server, "PUT", "/x.json", body)
        assert r.status == 400, (body, r)
        assert "error" in r.json()
        r = http(server, "PATCH", "/x.json", body)
        assert r.status == 400, (body, r)
    assert rtdb("get", "/x").json() == "before"
    assert_serving(server)


def test_body_shorter_than_content_length_then_close(server, rtdb):
    # The client half-closes after a short body: the server must not treat the bytes it got as
    # the whole body (even though they are valid JSON).
    rtdb("set", "/x", '"before"')
    sock = server.connect()
    sock.sendall(request_bytes("PUT", "/x.json", None, {"Content-Length": "100"}) + b'"short"')
    sock.shutdown(socket.SHUT_WR)
    try:
        closed_by_peer(sock, 10)
    finally:
        sock.close()
    assert rtdb("get", "/x").json() == "before"
    assert_serving(server)


# ---------------------------------------------------------------------------------------------
# Many clients

def test_thousand_simultaneous_connections(server, rtdb):
    rtdb("set", "/x", '{"hello":"world"}')
    count = 1000
    socks = []
    sel = selectors.DefaultSelector()
    try:
        for _ in range(count):
            s = socket.create_connection((server.host, server.port), timeout=30)
            socks.append(s)
        # Every connection is open before any sends its request.
        for s in socks:
            s.sendall(request_bytes("GET", "/x.json", None, {"Connection": "close"}))
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, bytearray())
        pending = count
        deadline = time.monotonic() + 90
        finished = []
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                try:
                    chunk = key.fileobj.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    key.data.extend(chunk)
                else:
                    sel.unregister(key.fileobj)
                    finished.append(bytes(key.data))
                    pending -= 1
        assert pending == 0, "%d of %d connections got no complete answer" % (pending, count)
        ok = [r for r in finished if r.startswith(b"HTTP/1.1 200") and r.endswith(b'{"hello":"world"}')]
        assert len(ok) == count, [r[:100] for r in finished if r not in ok][:5]
    finally:
        sel.close()
        for s in socks:
            s.close()
    assert_serving(server)
    assert http(server, "PUT", "/after.json", {"ok": True}).status == 200
    assert rtdb("get", "/after").json() == {"ok": True}


def test_pipelined_requests_answered_in_order(server, rtdb):
    rtdb("set", "/p", '{"a":1,"b":2}')
    batch = (request_bytes("GET", "/p/a.json") + request_bytes("PUT", "/p/c.json", 3)
             + request_bytes("GET", "/p/b.json") + request_bytes("GET", "/p.json", None, {"Connection": "close"}))
    with server.connect() as sock:
        sock.sendall(batch)
        reader = Reader(sock)
        answers = [reader.read_response() for _ in range(4)]
        assert [(a.status, a.json()) for a in answers] == [(200, 1), (200, 3), (200, 2), (200, {"a": 1, "b": 2, "c": 3})]
        assert closed_by_peer(sock, 10), "Connection: close was not honoured"


def test_max_connections_refuses_extra_keeps_existing(serve, rtdb):
    server = serve("--max-connections", "4")
    rtdb("set", "/x", "1")
    held = [server.connect() for _ in range(4)]
    readers = [Reader(s) for s in held]
    try:
        for s, r in zip(held, readers):
            s.sendall(request_bytes("GET", "/x.json"))
            assert r.read_response().status == 200
        # A fifth connection is refused: closed, reset, or answered with an error, never served.
        extra = server.connect()
        try:
            extra.sendall(request_bytes("GET", "/x.json"))
            extra.settimeout(10)
            try:
                answer = Reader(extra).read_response()
                assert answer.status >= 500 or answer.status == 429, answer
            except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
                pass
            except socket.timeout:
                pytest.fail("the connection over the limit was neither refused nor served within 10 s")
        finally:
            extra.close()
        # The existing ones are unharmed.
        for s, r in zip(held, readers):
            s.sendall(request_bytes("GET", "/x.json"))
            assert r.read_response().status == 200
        # Closing one frees a place.
        held.pop().close()
        readers.pop()

        def served():
            try:
                return http(server, "GET", "/x.json", timeout=5).status == 200
            except (ConnectionClosed, ConnectionResetError, BrokenPipeError, socket.timeout):
                return False

        wait_for(served, timeout=15, interval=0.2, message="a connection after one was closed is served")
    finally:
        for s in held:
            s.close()


def test_slow_loris_dropped_while_others_served(serve, rtdb):
    server = serve("--idle-timeout", "1")
    rtdb("set", "/x", "1")
    loris = server.connect()
    try:
        loris.sendall(b"GET /x.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        # Others are served normally meanwhile.
        for _ in range(5):
            r = http(server, "GET", "/x.json", timeout=5)
            assert r.status == 200
            time.sleep(0.1)
        # With --idle-timeout 1 it goes within a few seconds of its last byte.
        assert closed_by_peer(loris, 8), "a client idle in the middle of its request head was not dropped"
    finally:
        loris.close()
    # So is one that stops in the middle of a body, and that write does not happen.
    body = b'{"half": "' + b"h" * 1000 + b'"}'
    stuck = server.connect()
    try:
        stuck.sendall(request_bytes("PUT", "/x.json", None, {"Content-Length": str(len(body))}) + body[:500])
        assert closed_by_peer(stuck, 8), "a client idle in the middle of its body was not dropped"
    finally:
        stuck.close()
    assert rtdb("get", "/x").json() == 1
    # A connection that sends nothing at all is dropped too.
    silent = server.connect()
    try:
        assert closed_by_peer(silent, 10), "a silent connection was not dropped"
    finally:
        silent.close()
    assert_serving(server)


# ---------------------------------------------------------------------------------------------
# Malformed HTTP

def raw_exchange(server, data, timeout=10):
    """Sends raw bytes and returns the response (or None if the server closed without one)."""
    sock = server.connect(timeout)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            return Reader(sock).read_response()
        except (ConnectionClosed, ConnectionResetError):
            return None
    finally:
        sock.close()


@pytest.mark.parametrize("name,data", [
    ("garbage request line", b"HELLO THERE\r\n\r\n"),
    ("binary noise", bytes(range(256)) + b"\r\n\r\n"),
    ("no version", b"GET /x.json\r\nHost: a\r\n\r\n"),
    ("bad header line", b"GET /x.json HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n"),
])
def test_malformed_request_is_400(server, name, data):
    r = raw_exchange(server, data)
    assert r is not None, "%s: connection closed without a response" % name
    assert r.status == 400, (name, r)
    assert_serving(server)


@pytest.mark.parametrize("name,data,statuses", [
    # Request smuggling: both framings at once must not be guessed at.
    ("Content-Length with Transfer-Encoding",
     b"PUT /x.json HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n1\r\n0\r\n\r\n", {400}),
    ("a transfer coding it cannot decode", b"PUT /x.json HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nxx", {400, 501}),
    ("request line over 64 KiB", b"GET /" + b"a" * 70000 + b".json HTTP/1.1\r\nHost: a\r\n\r\n", {414, 431}),
    ("HTTP/1.1 without Host", b"GET /x.json HTTP/1.1\r\n\r\n", {400}),
    ("body over 256 MiB announced", b"PUT /x.json HTTP/1.1\r\nHost: a\r\nContent-Length: 300000000\r\n\r\n", {400, 413}),
])
def test_unacceptable_framing_is_refused(server, rtdb, name, data, statuses):
    r = raw_exchange(server, data)
    assert r is not None, "%s: connection closed without a response" % name
    assert r.status in statuses, (name, r)
    assert rtdb("get", "/x").json() is None
    assert_serving(server)


def test_oversized_header_is_431(server):
    data = b"GET /x.json HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n"
    r = raw_exchange(server, data)
    assert r is not None, "connection closed without a response"
    assert r.status == 431, r
    many = b"GET /x.json HTTP/1.1\r\nHost: a\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 100) for i in range(800)) + b"\r\n"
    r = raw_exchange(server, many)
    assert r is not None and r.status == 431, r
    assert_serving(server)


def test_bad_chunk_size_is_400(server, rtdb):
    rtdb("set", "/x", '"before"')
    for chunks in (b"ZZ\r\n{}\r\n0\r\n\r\n", b"-5\r\nhello\r\n0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n"):
        r = raw_exchange(server, request_bytes("PUT", "/x.json", None, {"Transfer-Encoding": "chunked"}) + chunks)
        assert r is not None and r.status == 400, (chunks, r)
    # A size past any limit: refused as too large or as malformed.
    r = raw_exchange(server, request_bytes("PUT", "/x.json", None, {"Transfer-Encoding": "chunked"})
                     + b"ffffffffffffffffffff\r\nx\r\n")
    assert r is not None and r.status in (400, 413), r
    assert rtdb("get", "/x").json() == "before"
    assert_serving(server)


def test_conflicting_content_length_is_400(server, rtdb):
    rtdb("set", "/x", '"before"')
    data = (b"PUT /x.json HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n"
            b'"abc"xx')
    r = raw_exchange(server, data)
    assert r is not None and r.status == 400, r
    for value in (b"-1", b"abc", b"5, 7"):
        r = raw_exchange(server, b"PUT /x.json HTTP/1.1\r\nHost: a\r\nContent-Length: " + value + b"\r\n\r\n\"abc\"")
        assert r is not None and r.status == 400, (value, r)
    assert rtdb("get", "/x").json() == "before"
    assert_serving(server)


# ---------------------------------------------------------------------------------------------
# kill -9 during a large write

def big_value(children=30000, size=1000):
    return {"k%05d" % i: "v%05d" % i + "x" * size for i in range(children)}


@pytest.mark.parametrize("moment", ["mid-transfer", "after-last-byte"])
def test_kill9_during_large_put_is_all_or_nothing(serve, rtdb, folder, moment):
    rtdb("set", "/big", '{"old":true}')
    rtdb("set", "/other", '"untouched"')
    value = big_value()
    body = json.dumps(value, separators=(",", ":")).encode()
    assert len(body) > 25 * 1024 * 1024
    server = serve()
    sock = server.connect(30)
    try:
        sock.sendall(request_bytes("PUT", "/big.json", None, {"Content-Length": str(len(body)),
                                                               "Content-Type": "application/json"}))
        step = 1024 * 1024
        limit = len(body) // 2 if moment == "mid-transfer" else len(body)
        sent = 0
        try:
            while sent < limit:
                sock.sendall(body[sent:min(sent + step, limit)])
                sent = min(sent + step, limit)
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            pytest.fail("the server closed the connection during the upload")
        if moment == "after-last-byte":
            time.sleep(0.05)
        server.kill9()
    finally:
        sock.close()
    # The file is consistent, and holds the old value or the new one, whole.
    if shutil.which("sqlite3"):
        check = subprocess.run(["sqlite3", os.path.join(folder, "db.db"), "PRAGMA integrity_check"],
                               capture_output=True, text=True, timeout=120)
        assert check.stdout.strip() == "ok", check.stdout + check.stderr
    stored = rtdb("get", "/big", timeout=120).json()
    if moment == "mid-transfer":
        assert stored == {"old": True}
    else:
        assert stored == {"old": True} or stored == value, "partial write: %d children" % len(stored)
    assert rtdb("get", "/other").json() == "untouched"
    # A new server on the same file serves it, and writes to it.
    again = serve()
    r = http(again, "GET", "/big.json?shallow=true", timeout=60)
    assert r.status == 200
    assert set(r.json()) == set(stored)
    assert http(again, "PUT", "/after.json", 1).status == 200
    assert rtdb("get", "/after").json() == 1


# ---------------------------------------------------------------------------------------------
# A stream whose client stops reading

def test_stalled_streams_are_dropped_and_memory_bounded(server, rtdb):
    rtdb("set", "/feed", '"start"')
    rtdb("set", "/small", '"ok"')
    payload = "z" * (1024 * 1024)
    writer = server.connect(30)
    writer_reader = Reader(writer)

    def put_feed(i):
        writer.sendall(request_bytes("PUT", "/feed.json?print=silent", json.dumps({"i": i, "p": payload}).encode()))
        r = writer_reader.read_response("PUT")
        assert r.status in (200, 204), r

    # Warm up (allocator, caches) before the baseline is taken.
    for i in range(5):
        put_feed(i)
    baseline = server.rss_kb()

    # Three streams whose clients read the response head, then nothing more: every write below
    # owes each of them a 1 MiB event, 300 MiB in all if the server kept it.
    stalled = []
    for _ in range(3):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(15)
        stalled.append(s)
        s.connect((server.host, server.port))
        s.sendall(request_bytes("GET", "/feed.json", None, {"Accept": "text/event-stream"}))
        first = s.recv(4096)
        assert first.startswith(b"HTTP/1.1 200"), first[:200]
    try:
        writes = 100
        peak = baseline
        slowest_write = slowest_read = 0.0
        for i in range(writes):
            t = time.monotonic()
            put_feed(i)
            slowest_write = max(slowest_write, time.monotonic() - t)
            if i % 10 == 0:
                t = time.monotonic()
                r = http(server, "GET", "/small.json", timeout=10)
                assert r.status == 200 and r.json() == "ok"
                slowest_read = max(slowest_read, time.monotonic() - t)
                peak = max(peak, server.rss_kb())
        peak = max(peak, server.rss_kb())
        growth_mb = (peak - baseline) / 1024
        print("stalled streams: RSS %d -> %d KiB, slowest write %.2f s, read %.2f s" % (baseline, peak, slowest_write, slowest_read))
        assert growth_mb < 200, "RSS grew by %.0f MiB (baseline %d KiB, peak %d KiB)" % (growth_mb, baseline, peak)
        assert slowest_write < 5, "a write took %.1f s while streams were stalled" % slowest_write
        assert slowest_read < 2, "a read took %.1f s while streams were stalled" % slowest_read
        # Each stalled stream is eventually dropped: reading it now ends with EOF (or a reset)
        # after at most what was buffered, not with an endless backlog of events.
        for s in stalled:
            drained = 0
            s.settimeout(10)
            deadline = time.monotonic() + 60
            dropped = False
            try:
                while time.monotonic() < deadline:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        dropped = True
                        break
                    drained += len(chunk)
            except ConnectionResetError:
                dropped = True
            except socket.timeout:
                pass
            assert dropped, "a stalled stream was still open after %d bytes drained" % drained
            assert drained < 100 * 1024 * 1024
    finally:
        for s in stalled:
            s.close()
        writer.close()
    # Other streams still work.
    with Stream(server, "/feed.json") as s:
        assert s.status == 200
        name, data = s.events(1)[0]
        assert name == "put" and json.loads(data)["path"] == "/"
    assert_serving(server)


# ---------------------------------------------------------------------------------------------
# Stopping with work in progress

def test_sigterm_answers_the_write_in_progress_and_ends_streams(server, rtdb):
    value = {"k%05d" % i: "w" * 200 for i in range(20000)}
    body = json.dumps(value).encode()
    stream = Stream(server, "/.json")
    writer = server.connect(30)
    try:
        assert stream.status == 200
        stream.events(1)
        writer.sendall(request_bytes("PUT", "/in-flight.json", body))
        time.sleep(0.2)
        server.proc.send_signal(signal.SIGTERM)
        writer.settimeout(30)
        try:
            answer = Reader(writer).read_response("PUT")
        except (ConnectionClosed, ConnectionResetError):
            answer = None
        # The stream is closed by the server (after any events it still had to send).
        stream.sock.settimeout(15)
        try:
            while stream.reader.sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        except socket.timeout:
            pytest.fail("a stream was still open after SIGTERM")
        server.stopped = True
        status = server.proc.wait(timeout=30)
        assert status == 143, status
    finally:
        stream.close()
        writer.close()
    stored = rtdb("get", "/in-flight", timeout=120).json()
    print("in-flight write:", "answered" if answer else "not answered")
    if answer is None:
        # Not started when the signal came: then it is not written at all.
        assert stored is None
    else:
        assert answer.status == 200, answer
        assert stored == value
