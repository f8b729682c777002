"""Firebase's realtime (WebSocket) protocol on `rtdb serve`.

The protocol's recorded transcripts are replayed frame by frame: the server's frames must be the ones the
JS SDK accepted, byte for byte, except the handshake's variable parts (ts, s, h), which are
checked for their meaning instead. Then onDisconnect in every way a connection can end, the
splitting of long messages, writes crossing between the realtime, REST, SSE and local paths,
--secret, malformed input, and the presence system of a killed client process."""

import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

from conftest import RTDB_BIN, Stream, http, wait_for
from realtime_client import WS, Closed, connect

SEED = {"a": {"b": 1}, "q": {"k1": {"x": 1}, "k2": {"x": 2}, "k3": {"x": 3}}, "counter": 5}
NS = "demo-proj-default-rtdb"
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "realtime_client.py")


def now_ms():
    return int(time.time() * 1000)


def c(text):
    """A client frame of the transcripts (`C>`), sent verbatim."""
    return text


def expect_frames(ws, expected):
    """The next frames are exactly `expected` (texts), in order."""
    got = [ws.recv_raw() for _ in expected]
    assert got == expected


def stored(rtdb, path):
    return json.loads(rtdb("get", path).stdout)


class Lines:
    """Lines of a child process's stdout, read by a thread, with timeouts."""

    def __init__(self, proc):
        self.proc = proc
        self.q = queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def next(self, timeout=10.0):
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line within %ss" % timeout)
        assert line is not None, "the process ended"
        return json.loads(line)


def spawn_client(server, *messages, ns="demo"):
    """A client process (realtime_client.py) that sends `messages` and waits to be killed."""
    proc = subprocess.Popen([sys.executable, CLIENT, server.host, str(server.port), ns]
                            + [json.dumps(m) for m in messages],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = Lines(proc).next(15)
    return proc, ready


@pytest.fixture
def seeded(serve, rtdb):
    rtdb("set", "/", json.dumps(SEED))
    return serve()


# ---------------------------------------------------------------------------------------------
# transcripts

def test_transcripts_12_1_to_12_6(seeded):
    """connect, get, listen, set under a listen, a tagged query window, a transaction."""
    before = now_ms()
    ws = WS(seeded.host, seeded.port, "v=5&p=1:123:web:abc&ns=" + NS,
            headers={"User-Agent": "Firebase/5/12.18.0/linux/Node"})
    assert ws.status == 101
    assert ws.headers["upgrade"].lower() == "websocket"
    # 12.1: the hello, with ts (server ms, ≥ 2^31), v, h (the Host header), s (a session id).
    hello = json.loads(ws.recv_raw())
    assert hello["t"] == "c" and hello["d"]["t"] == "h"
    h = hello["d"]["d"]
    assert sorted(h) == ["h", "s", "ts", "v"]
    assert isinstance(h["ts"], int) and h["ts"] >= 2 ** 31
    assert before - 1000 <= h["ts"] <= now_ms() + 1000
    assert h["v"] == "5"
    assert h["h"] == "%s:%d" % (seeded.host, seeded.port)
    assert isinstance(h["s"], str) and len(h["s"]) >= 8
    ws.send_text(c('{"t":"d","d":{"r":1,"a":"s","b":{"c":{"sdk.node.12-18-0":1}}}}'))
    # 12.2, sent before r1 is answered.
    ws.send_text(c('{"t":"d","d":{"r":2,"a":"g","b":{"p":"/a","q":{}}}}'))
    expect_frames(ws, ['{"t":"d","d":{"r":1,"b":{"s":"ok","d":""}}}',
                       '{"t":"d","d":{"r":2,"b":{"s":"ok","d":{"b":1}}}}'])
    # 12.3: the data before the ok.
    ws.send_text(c('{"t":"d","d":{"r":3,"a":"q","b":{"p":"/a","h":""}}}'))
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"a","d":{"b":1}}}}',
                       '{"t":"d","d":{"r":3,"b":{"s":"ok","d":{}}}}'])
    # 12.4: the writer's own listen hears the write before its ack.
    ws.send_text(c('{"t":"d","d":{"r":4,"a":"p","b":{"p":"/a/b","d":2}}}'))
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"a/b","d":2}}}',
                       '{"t":"d","d":{"r":4,"b":{"s":"ok","d":""}}}'])
    # 12.5: a tagged window; after the write it is k3, k4 (a d push, or the equivalent m push).
    ws.send_text(c('{"t":"d","d":{"r":5,"a":"q","b":{"p":"/q","q":{"l":2,"vf":"r","i":"x"},"t":1,"h":""}}}'))
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"q","d":{"k2":{"x":2},"k3":{"x":3}},"t":1}}}',
                       '{"t":"d","d":{"r":5,"b":{"s":"ok","d":{}}}}'])
    ws.send_text(c('{"t":"d","d":{"r":6,"a":"p","b":{"p":"/q/k4","d":{"x":4}}}}'))
    push = json.loads(ws.recv_raw())
    assert push["t"] == "d" and push["d"]["b"]["p"] == "q" and push["d"]["b"]["t"] == 1, push
    window = {"k2": {"x": 2}, "k3": {"x": 3}}
    if push["d"]["a"] == "d":
        window = push["d"]["b"]["d"]
    else:
        assert push["d"]["a"] == "m", push
        for k, v in push["d"]["b"]["d"].items():
            if v is None:
                window.pop(k, None)
            else:
                window[k] = v
    assert window == {"k3": {"x": 3}, "k4": {"x": 4}}
    expect_frames(ws, ['{"t":"d","d":{"r":6,"b":{"s":"ok","d":""}}}'])
    # 12.6: a transaction: the stale first try is refused, the retry with the right hash commits.
    ws.send_text(c('{"t":"d","d":{"r":7,"a":"q","b":{"p":"/counter","h":""}}}'))
    ws.send_text(c('{"t":"d","d":{"r":8,"a":"p","b":{"p":"/counter","d":1,"h":""}}}'))
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"counter","d":5}}}',
                       '{"t":"d","d":{"r":7,"b":{"s":"ok","d":{}}}}',
                       '{"t":"d","d":{"r":8,"b":{"s":"datastale","d":"hash mismatch"}}}'])
    ws.send_text(c('{"t":"d","d":{"r":9,"a":"p","b":{"p":"/counter","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}}}'))
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"counter","d":6}}}',
                       '{"t":"d","d":{"r":9,"b":{"s":"ok","d":""}}}'])
    ws.send_text(c('{"t":"d","d":{"r":10,"a":"n","b":{"p":"/counter"}}}'))
    expect_frames(ws, ['{"t":"d","d":{"r":10,"b":{"s":"ok","d":""}}}'])
    # After the unlisten, a write to /counter reaches nobody; /a still listens.
    http(seeded, "PUT", "/counter.json?ns=" + NS, 7)
    http(seeded, "PUT", "/a/b.json?ns=" + NS, 3)
    expect_frames(ws, ['{"t":"d","d":{"a":"d","b":{"p":"a/b","d":3}}}'])
    assert ws.no_message()
    # A JS health-check ping is answered with a pong.
    ws.send_text('{"t":"c","d":{"t":"p","d":{}}}')
    expect_frames(ws, ['{"t":"c","d":{"t":"o","d":null}}'])
    assert ws.close() == 1000


def test_transcript_12_7_ondisconnect_after_clean_close(server, rtdb):
    b = connect(server)
    assert b.call("q", {"p": "/presence", "h": ""}) == {"s": "ok", "d": {}}
    a = connect(server)
    a.send_text(c('{"t":"d","d":{"r":2,"a":"o","b":{"p":"/presence/u1","d":{"at":{".sv":"timestamp"},"state":"offline"}}}}'))
    expect_frames(a, ['{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}'])
    assert stored(rtdb, "/presence") is None, "nothing is written at registration"
    before = now_ms()
    assert a.close(1000) == 1000
    b.sock.settimeout(10)
    frame = b.recv_raw()
    after = now_ms()
    at = json.loads(frame)["d"]["b"]["d"]["at"]
    assert before - 5 <= at <= after + 5
    assert frame == '{"t":"d","d":{"a":"d","b":{"p":"presence/u1","d":{"at":%d,"state":"offline"}}}}' % at
    assert stored(rtdb, "/presence/u1") == {"at": at, "state": "offline"}
    b.close()


def test_transcript_12_8_reconnect_after_the_server_drops_the_connection(serve, rtdb):
    rtdb("set", "/", json.dumps(SEED))
    first = serve()
    ws = connect(first, NS)
    assert ws.call("q", {"p": "/a", "h": ""})["s"] == "ok"
    assert ws.call("q", {"p": "/q", "h": ""})["s"] == "ok"
    session1 = ws.hello["s"]
    first.stop(signal.SIGTERM)
    with pytest.raises(Closed):
        ws.sock.settimeout(10)
        while True:
            ws.recv_text()
    ws.cut()
    second = serve()
    ws = WS(second.host, second.port, "v=5&ls=%s&ns=%s" % (session1, NS))
    assert ws.status == 101
    hello = ws.read_hello()
    assert hello["s"] != session1
    assert hello["h"] == "%s:%d" % (second.host, second.port)
    # The listens come back with the hashes of the client's cache; then the set made offline.
    ws.send_text(c('{"t":"d","d":{"r":5,"a":"q","b":{"p":"/a","h":"lUwqxaYTHjA4XN/UJjS/cI8JKaM="}}}'))
    ws.send_text(c('{"t":"d","d":{"r":6,"a":"q","b":{"p":"/q","h":"ECp3q7JbtQjhn1L9BjpfrCAYaxU="}}}'))
    ws.send_text(c('{"t":"d","d":{"r":7,"a":"p","b":{"p":"/a/c","d":3}}}'))
    got = [json.loads(ws.recv_raw()) for _ in range(6)]
    answers = {m["d"]["r"]: m["d"]["b"] for m in got if "r" in m["d"]}
    assert answers == {5: {"s": "ok", "d": {}}, 6: {"s": "ok", "d": {}}, 7: {"s": "ok", "d": ""}}
    pushes = [m["d"] for m in got if "a" in m["d"]]
    # The current data may be skipped when the hash matches; the write is always pushed.
    assert {"a": "d", "b": {"p": "a/c", "d": 3}} in pushes, pushes
    for p in pushes:
        assert p in ({"a": "d", "b": {"p": "a", "d": {"b": 1}}}, {"a": "d", "b": {"p": "q", "d": SEED["q"]}},
                     {"a": "d", "b": {"p": "a/c", "d": 3}}), p
    assert stored(rtdb, "/a") == {"b": 1, "c": 3}
    ws.close()


def test_ls_ends_the_old_session_and_runs_its_writes(server, rtdb):
    old = connect(server)
    assert old.call("o", {"p": "/status/u1", "d": "offline"}) == {"s": "ok", "d": ""}
    new = connect(server, extra="&ls=" + old.hello["s"])
    assert new.hello["s"] != old.hello["s"]
    wait_for(lambda: stored(rtdb, "/status/u1") == "offline", 5, message="the old session's write")
    # The old connection is closed by the server.
    old.sock.settimeout(5)
    with pytest.raises(Closed):
        while True:
            old.recv_text()
    new.close()


def test_transcript_12_9_denial(serve):
    server = serve("--secret", "s3cret")
    ws = connect(server)
    ws.send_text(c('{"t":"d","d":{"r":2,"a":"q","b":{"p":"/secret","h":""}}}'))
    expect_frames(ws, ['{"t":"d","d":{"r":2,"b":{"s":"permission_denied","d":"Permission denied"}}}'])
    ws.send_text(c('{"t":"d","d":{"r":3,"a":"p","b":{"p":"/secret","d":1}}}'))
    expect_frames(ws, ['{"t":"d","d":{"r":3,"b":{"s":"permission_denied","d":"Permission denied"}}}'])
    ws.close()


# ---------------------------------------------------------------------------------------------
# onDisconnect

def test_ondisconnect_after_the_socket_is_cut(server, rtdb):
    a = connect(server)
    assert a.call("o", {"p": "/gone", "d": {"by": "cut"}})["s"] == "ok"
    a.cut()
    wait_for(lambda: stored(rtdb, "/gone") == {"by": "cut"}, 5, message="the write of a cut connection")


def test_ondisconnect_after_the_idle_timeout(serve, rtdb):
    # A realtime connection that goes silent (no keep-alive) is dropped after twice
    # --idle-timeout, and its onDisconnect writes run then; a talking one is kept.
    server = serve("--idle-timeout", "0.5")
    quiet = connect(server)
    talking = connect(server)
    assert quiet.call("o", {"p": "/idle/quiet", "d": {"at": {".sv": "timestamp"}}})["s"] == "ok"
    assert talking.call("o", {"p": "/idle/talking", "d": True})["s"] == "ok"
    silent_since = now_ms()
    deadline = time.time() + 10
    while stored(rtdb, "/idle/quiet") is None and time.time() < deadline:
        talking.send_text("0")   # a keep-alive frame: the talking connection stays
        time.sleep(0.1)
    written = stored(rtdb, "/idle/quiet")
    assert written is not None, "the silent connection's onDisconnect write never ran"
    assert written["at"] >= silent_since + 1000 - 50, (written, silent_since)
    assert stored(rtdb, "/idle/talking") is None
    assert talking.call("g", {"p": "/idle/quiet", "q": {}})["s"] == "ok"
    talking.close()
    wait_for(lambda: stored(rtdb, "/idle/talking") is True, 5, message="the talking connection's write after its close")


def test_ondisconnect_after_kill9_of_the_client_process(server, rtdb):
    watcher = connect(server)
    assert watcher.call("q", {"p": "/k", "h": ""})["s"] == "ok"
    proc, ready = spawn_client(server, {"a": "o", "b": {"p": "/k/u", "d": {"at": {".sv": "timestamp"}}}})
    try:
        assert ready["ready"] == [{"s": "ok", "d": ""}]
        killed = now_ms()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        push = watcher.push(5)
        assert push["b"]["p"] == "k/u", push
        assert killed - 5 <= push["b"]["d"]["at"] <= now_ms() + 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    watcher.close()


def test_cancel_drops_a_path_and_splits_a_stored_ancestor(server, rtdb):
    rtdb("set", "/p", '{"a":"keep","z":"keep"}')
    ws = connect(server)
    assert ws.call("o", {"p": "/u1", "d": "off"})["s"] == "ok"
    assert ws.call("o", {"p": "/u2", "d": "off"})["s"] == "ok"
    assert ws.call("oc", {"p": "/u1", "d": None}) == {"s": "ok", "d": ""}
    # A stored ancestor: /p is registered whole, then /p/a is cancelled: only /p/b is written,
    # and /p/a keeps its value (/p/z too: the split writes children, not all of /p).
    assert ws.call("o", {"p": "/p", "d": {"a": 1, "b": 2}})["s"] == "ok"
    assert ws.call("oc", {"p": "/p/a", "d": None})["s"] == "ok"
    # Cancel everything under /x: nothing left to write there.
    assert ws.call("om", {"p": "/x", "d": {"m": 1, "n/o": 2}})["s"] == "ok"
    assert ws.call("oc", {"p": "/x", "d": None})["s"] == "ok"
    ws.close()
    wait_for(lambda: stored(rtdb, "/u2") == "off", 5, message="the remaining write")
    assert stored(rtdb, "/u1") is None
    assert stored(rtdb, "/p") == {"a": "keep", "b": 2, "z": "keep"}
    assert stored(rtdb, "/x") is None


def test_ondisconnect_update_keeps_other_children(server, rtdb):
    rtdb("set", "/users/u1", '{"name":"Ada","online":true}')
    ws = connect(server)
    assert ws.call("om", {"p": "/users/u1", "d": {"online": False, "last": {".sv": "timestamp"}, "seen/by": "srv"}}) \
        == {"s": "ok", "d": ""}
    before = now_ms()
    ws.close()
    u = wait_for(lambda: (lambda v: v if v and v.get("online") is False else None)(stored(rtdb, "/users/u1")), 5,
                 message="the update")
    assert u["name"] == "Ada"
    assert u["seen"] == {"by": "srv"}
    assert before - 5 <= u["last"] <= now_ms() + 5


def test_server_values_resolve_when_the_writes_run(server, rtdb):
    ws = connect(server)
    registered = now_ms()
    assert ws.call("o", {"p": "/t", "d": {".sv": "timestamp"}})["s"] == "ok"
    assert ws.call("o", {"p": "/n", "d": {".sv": {"increment": 2}}})["s"] == "ok"
    rtdb("set", "/n", "40")
    time.sleep(1.2)
    closed = now_ms()
    ws.close()
    wait_for(lambda: stored(rtdb, "/t") is not None, 5, message="the timestamp")
    assert stored(rtdb, "/t") >= closed - 5 > registered + 1000
    # The increment applies to the value stored when it runs, not when it was registered.
    assert stored(rtdb, "/n") == 42


def test_registrations_are_refused_like_writes(serve, rtdb):
    server = serve("--secret", "s3cret")
    ws = connect(server)
    assert ws.call("o", {"p": "/a", "d": 1})["s"] == "permission_denied"
    assert ws.call("om", {"p": "/a", "d": {"b": 1}})["s"] == "permission_denied"
    assert ws.call("auth", {"cred": "s3cret"})["s"] == "ok"
    bad = ws.call("o", {"p": "/a", "d": {"x": {".sv": "nonsense"}}})
    assert bad["s"] != "ok" and isinstance(bad["d"], str), bad
    bad = ws.call("o", {"p": "/a", "d": {"x.y": 1}})
    assert bad["s"] != "ok" and isinstance(bad["d"], str), bad
    bad = ws.call("om", {"p": "/a", "d": {"b": 1, "b/c": 2}})
    assert bad["s"] != "ok", bad
    assert ws.call("o", {"p": "/ok", "d": 1})["s"] == "ok"
    ws.close()
    wait_for(lambda: stored(rtdb, "/ok") == 1, 5, message="the accepted write")
    assert stored(rtdb, "/a") is None


def test_writes_are_lost_when_the_server_stops_and_registered_again(serve, rtdb):
    first = serve()
    ws = connect(first)
    assert ws.call("o", {"p": "/lost", "d": True})["s"] == "ok"
    assert first.stop(signal.SIGTERM) == 143
    ws.cut()
    second = serve()
    time.sleep(0.3)
    assert stored(rtdb, "/lost") is None, "a server stop must not run the writes"
    # The client re-registers on its new connection; those run when it goes.
    ws = connect(second, extra="&ls=" + ws.hello["s"])
    assert ws.call("o", {"p": "/lost", "d": "again"})["s"] == "ok"
    ws.close()
    wait_for(lambda: stored(rtdb, "/lost") == "again", 5, message="the re-registered write")


# ---------------------------------------------------------------------------------------------
# Frames

def test_long_messages_are_split_both_ways(server, rtdb):
    ws = connect(server)
    assert ws.call("q", {"p": "/big", "h": ""})["s"] == "ok"
    big = {"text": "é" * 20000, "list": {"k%04d" % i: i for i in range(100)}}
    r = ws.request("p", {"p": "/big", "d": big})   # sent as a count and pieces
    body, pushes = ws.answer(r)
    assert body == {"s": "ok", "d": ""}
    assert pushes and pushes[-1]["b"]["d"] == big
    # The push came back split: a count frame, then pieces of at most 16,384 UTF-16 units.
    counts = [i for i, f in enumerate(ws.frames) if len(f) <= 6 and f.isdigit()]
    assert counts, ws.frames[:3]
    n = int(ws.frames[counts[-1]])
    assert n >= 2
    pieces = ws.frames[counts[-1] + 1:counts[-1] + 1 + n]
    assert all(len(p.encode("utf-16-le")) // 2 <= 16384 for p in pieces)
    assert len(pieces[0].encode("utf-16-le")) // 2 == 16384
    assert json.loads("".join(pieces))["d"]["b"]["d"] == big
    assert stored(rtdb, "/big") == big
    # A get of it, split too.
    assert ws.call("g", {"p": "/big", "q": {}}) == {"s": "ok", "d": big}
    ws.close()


def test_the_spec_20kb_set_in_count_and_pieces(server, rtdb):
    ws = connect(server)
    message = json.dumps({"t": "d", "d": {"r": 13, "a": "p", "b": {"p": "/s", "d": {"v": "x" * 19990}}}},
                         separators=(",", ":"))
    assert len(message) > 16384
    ws.send_text("2")
    ws.send_text(message[:16384])
    ws.send_text(message[16384:])
    expect_frames(ws, ['{"t":"d","d":{"r":13,"b":{"s":"ok","d":""}}}'])
    assert stored(rtdb, "/s") == {"v": "x" * 19990}
    ws.close()


def test_keepalive_zero_is_ignored(server):
    ws = connect(server)
    ws.send_text("0")
    assert ws.no_message(0.5)
    ws.send_text("0")
    assert ws.call("g", {"p": "/", "q": {}}) == {"s": "ok", "d": None}
    # A WebSocket ping gets a pong with the same payload.
    ws.send_frame(0x9, b"hi")
    ws.sock.settimeout(5)
    assert ws.recv_frame() == (0xA, b"hi")
    ws.close()


# ---------------------------------------------------------------------------------------------
# Writes from every path reach every kind of listener

def test_rest_and_local_writes_reach_a_realtime_listen(server, rtdb):
    ws = connect(server)
    assert ws.call("q", {"p": "/x", "h": ""})["s"] == "ok"
    assert http(server, "PUT", "/x/rest.json", 1).status == 200
    assert ws.push() == {"a": "d", "b": {"p": "x/rest", "d": 1}}
    assert http(server, "PATCH", "/x.json", {"m": 2, "n": 3}).status == 200
    p = ws.push()
    assert p["a"] in ("m", "d") and p["b"]["p"] in ("x", "x/m", "x/n"), p
    rtdb("set", "/x/local", '"yes"')
    deadline = time.monotonic() + 5
    while True:
        p = ws.push(5)
        if p == {"a": "d", "b": {"p": "x/local", "d": "yes"}}:
            break
        assert time.monotonic() < deadline, p
    ws.close()


def test_a_rest_push_reaches_a_realtime_listen_as_a_set_of_the_new_child(server):
    ws = connect(server)
    assert ws.call("q", {"p": "/x", "h": ""})["s"] == "ok"
    r = http(server, "POST", "/x/list.json", {"text": "hi"}, headers={"Authorization": "Bearer owner"})
    assert r.status == 200
    key = json.loads(r.body)["name"]
    assert ws.push() == {"a": "d", "b": {"p": "x/list/" + key, "d": {"text": "hi"}}}
    ws.close()


def test_a_realtime_write_reaches_sse_and_rtdb_watch(server, rtdb, folder):
    watch = subprocess.Popen([RTDB_BIN, "--db", os.path.join(folder, "db.db"), "watch", "/y"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(watch)
        assert lines.next()["value"] is None
        with Stream(server, "/y.json") as stream:
            name, data = stream.events(1)[0]
            assert name == "put" and json.loads(data) == {"path": "/", "data": None}
            ws = connect(server)
            assert ws.call("p", {"p": "/y", "d": {"from": "ws"}}) == {"s": "ok", "d": ""}
            name, data = stream.events(1)[0]
            assert name == "put" and json.loads(data) == {"path": "/", "data": {"from": "ws"}}
            assert lines.next(5)["value"] == {"from": "ws"}
            ws.close()
    finally:
        watch.terminate()
        watch.wait(10)


# ---------------------------------------------------------------------------------------------
# --secret

def test_secret_refuses_until_auth(serve, rtdb):
    server = serve("--secret", "s3cret")
    ws = connect(server)
    for action, body in [("g", {"p": "/", "q": {}}), ("q", {"p": "/", "h": ""}), ("p", {"p": "/a", "d": 1}),
                         ("m", {"p": "/", "d": {"a": 1}}), ("o", {"p": "/a", "d": 1})]:
        assert ws.call(action, body) == {"s": "permission_denied", "d": "Permission denied"}, action
    bad = ws.call("auth", {"cred": "wrong"})
    assert bad["s"] == "invalid_token" and isinstance(bad["d"], str), bad
    assert ws.call("p", {"p": "/a", "d": 1})["s"] == "permission_denied"
    ok = ws.call("auth", {"cred": "s3cret"})
    assert ok["s"] == "ok" and isinstance(ok["d"], dict), ok
    assert ws.call("p", {"p": "/a", "d": 1}) == {"s": "ok", "d": ""}
    assert ws.call("g", {"p": "/a", "q": {}}) == {"s": "ok", "d": 1}
    assert ws.call("unauth", {}) == {"s": "ok", "d": "unauthenticated"}
    assert ws.call("g", {"p": "/a", "q": {}})["s"] == "permission_denied"
    assert ws.call("gauth", {"cred": "s3cret"})["s"] == "ok"
    assert ws.call("g", {"p": "/a", "q": {}}) == {"s": "ok", "d": 1}
    ws.close()
    assert stored(rtdb, "/a") == 1


# ---------------------------------------------------------------------------------------------
# Malformed input closes that connection only

def _hostile_cases():
    def unmasked(ws):
        ws.send_frame(0x1, '{"t":"c","d":{"t":"p","d":{}}}', mask=False)

    def not_json(ws):
        ws.send_text("{this is not json")

    def not_a_message(ws):
        ws.send_text('{"t":"d","d":{"a":"p"}}')

    def binary(ws):
        ws.send_frame(0x2, b"\x00\x01")

    def huge(ws):
        # A frame that declares 1 GiB: refused from its header alone.
        ws.sock.sendall(bytes([0x81, 0xFF]) + struct.pack(">Q", 1 << 30) + os.urandom(4) + b"x" * 1000)

    def long_ping(ws):
        ws.send_frame(0x9, b"p" * 126)

    def too_many_pieces(ws):
        ws.send_text("10000")

    def invalid_utf8(ws):
        ws.send_frame(0x1, b'{"t":"d","d":{"r":1,"a":"g","b":{"p":"/\xff","q":{}}}}')

    return [("unmasked frame", unmasked, 1002), ("not JSON", not_json, 1007),
            ("not a realtime message", not_a_message, 1007), ("binary frame", binary, 1003),
            ("huge frame", huge, 1009), ("long ping", long_ping, 1002), ("too many pieces", too_many_pieces, 1009),
            ("invalid UTF-8", invalid_utf8, 1007)]


@pytest.mark.parametrize("name,send,code", _hostile_cases(), ids=[c[0] for c in _hostile_cases()])
def test_malformed_input_closes_only_that_connection(server, rtdb, name, send, code):
    good = connect(server)
    assert good.call("q", {"p": "/h", "h": ""})["s"] == "ok"
    bad = connect(server)
    assert bad.call("o", {"p": "/h/bad", "d": "gone"})["s"] == "ok"
    send(bad)
    assert bad.close_code(10) == code, name
    bad.cut()
    # The bad connection's onDisconnect write ran like any other ending; the good one still works.
    assert good.push(5) == {"a": "d", "b": {"p": "h/bad", "d": "gone"}}
    body, pushes = good.answer(good.request("p", {"p": "/h/good", "d": 1}))
    assert body == {"s": "ok", "d": ""}
    assert pushes == [{"a": "d", "b": {"p": "h/good", "d": 1}}]
    rtdb("set", "/h/local", "2")
    assert good.push(5) == {"a": "d", "b": {"p": "h/local", "d": 2}}
    assert stored(rtdb, "/h") == {"bad": "gone", "good": 1, "local": 2}
    good.close()


def test_a_plain_get_of_ws_is_not_an_upgrade(server):
    r = http(server, "GET", "/.ws?v=5&ns=demo", headers={"Upgrade": "websocket", "Connection": "Upgrade"})
    assert r.status == 400, r


# ---------------------------------------------------------------------------------------------
# Presence (issue scenario): a killed client's connection entry goes and lastOnline is set

def test_presence_of_a_killed_client(server, rtdb, folder):
    rtdb("set", "/users/u1", '{"name":"Ada"}')
    watch = subprocess.Popen([RTDB_BIN, "--db", os.path.join(folder, "db.db"), "watch", "/users/u1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = None
    try:
        lines = Lines(watch)
        assert lines.next()["value"] == {"name": "Ada"}
        conn = "-NpresenceConn0001"
        proc, ready = spawn_client(
            server,
            {"a": "p", "b": {"p": "/users/u1/connections/" + conn, "d": True}},
            {"a": "o", "b": {"p": "/users/u1/connections/" + conn, "d": None}},
            {"a": "o", "b": {"p": "/users/u1/lastOnline", "d": {".sv": "timestamp"}}})
        assert ready["ready"] == [{"s": "ok", "d": ""}] * 3
        assert lines.next(5)["value"] == {"name": "Ada", "connections": {conn: True}}
        killed = time.monotonic()
        killed_ms = now_ms()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        value = lines.next(5)["value"]
        elapsed = time.monotonic() - killed
        assert elapsed <= 1.0, "the watch saw the writes %.3f s after the kill" % elapsed
        # One atomic write: both changes in one event.
        assert set(value) == {"name", "lastOnline"}, value
        assert killed_ms - 5 <= value["lastOnline"] <= now_ms() + 5
    finally:
        for p in (proc, watch):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_priorities_reach_listens_and_priority_order_windows(server, rtdb):
    """Pushes carry priorities in export form (as the listen's first data does), a change of
    priority alone is pushed, and a tagged listen in priority order (no `i`) has the right
    window. Found by checking rtdb serve with the official JS SDK."""
    rtdb("set", "/p", json.dumps({"a": {".value": "A", ".priority": 3}, "b": {"v": "B"},
                                  "c": {".value": "C", ".priority": "z"}, "d": "D"}))
    ws = connect(server)

    def listen(body):
        answer, pushes = ws.answer(ws.request("q", body))
        assert answer["s"] == "ok", answer
        assert len(pushes) == 1, pushes
        return pushes[0]

    first = listen({"p": "/p", "h": ""})
    assert first["b"]["d"]["a"] == {".value": "A", ".priority": 3}, first
    # A priority alone changes: the node is pushed with it.
    answer, pushes = ws.answer(ws.request("p", {"p": "/p/b/.priority", "d": 4}))
    assert answer["s"] == "ok" and pushes == [{"a": "d", "b": {"p": "p/b", "d": {"v": "B", ".priority": 4}}}], pushes
    # A write with a priority keeps it in the push.
    answer, pushes = ws.answer(ws.request("p", {"p": "/p/f", "d": {".value": "F", ".priority": 7}}))
    assert answer["s"] == "ok" and pushes == [{"a": "d", "b": {"p": "p/f", "d": {".value": "F", ".priority": 7}}}], pushes
    # Priority order: no priority (d) < numbers (a 3, b 4, f 7) < strings (c).
    got = listen({"p": "/p", "q": {"sp": 1, "sin": True, "ep": 5, "ein": True}, "t": 5, "h": ""})
    assert got["b"]["t"] == 5 and sorted(got["b"]["d"]) == ["a", "b"], got
    got = listen({"p": "/p", "q": {"l": 2, "vf": "l"}, "t": 6, "h": ""})
    assert got["b"]["t"] == 6 and sorted(got["b"]["d"]) == ["a", "d"], got
    ws.close()


def test_an_export_stream_carries_priorities(server, rtdb):
    rtdb("set", "/e", json.dumps({"a": {".value": 1, ".priority": 2}}))
    with Stream(server, "/e.json?format=export") as stream:
        name, data = stream.events(1)[0]
        assert name == "put" and json.loads(data) == {"path": "/", "data": {"a": {".value": 1, ".priority": 2}}}
        rtdb("set", "/e/b", json.dumps({".value": 3, ".priority": "x"}))
        name, data = stream.events(1)[0]
        assert json.loads(data) == {"path": "/b", "data": {".value": 3, ".priority": "x"}}, data
    with Stream(server, "/e.json") as plain:
        name, data = plain.events(1)[0]
        assert json.loads(data) == {"path": "/", "data": {"a": 1, "b": 3}}, data
