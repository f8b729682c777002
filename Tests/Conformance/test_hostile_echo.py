"""Credentials stay secret, and no answer or log line echoes a client's input at length.

Every error answer of `rtdb serve`, and every line it logs with --log, quotes at most a short,
cut prefix of what a client sent: a 50,000-character key, path, parameter, header, number or
realtime field is never sent back or written out whole. The secret never appears in output,
logs or the process's arguments; `--secret-file` and `$RTDB_SERVE_SECRET` give it without the
command line."""

import json
import os
import subprocess
import urllib.parse

import pytest

from conftest import RTDB_BIN, Reader, http, request_bytes
from realtime_client import connect

LONG = "Z" * 50_000
# The longest run of the input an answer may hold (Limits.quote shows 80 characters).
SHOWN = 200


def longest_run(data):
    """The longest run of 'Z' in `data` (bytes or text)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    best = run = 0
    for c in text:
        run = run + 1 if c == "Z" else 0
        best = max(best, run)
    return best


def raw(server, data, timeout=15):
    """Sends raw bytes on a fresh connection; returns everything the server sent before closing."""
    with server.connect(timeout) as sock:
        sock.sendall(data)
        try:
            sock.shutdown(1)
        except OSError:
            pass
        out = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        return out


def rest_cases():
    q = urllib.parse.quote
    return {
        "key in the path": ("GET", "/a/%s.json" % ("." + LONG), None, {}),
        "bad path": ("GET", "/%s" % LONG, None, {}),
        "namespace": ("GET", "/a.json?ns=%s" % LONG, None, {}),
        "unknown parameter": ("GET", "/a.json?%s=1" % LONG, None, {}),
        "orderBy": ("GET", "/a.json?orderBy=%s" % q(json.dumps(LONG)), None, {}),
        "startAt": ("GET", '/a.json?orderBy="$key"&startAt=%s' % LONG, None, {}),
        "limitToFirst": ("GET", "/a.json?limitToFirst=%s" % ("9" * 50_000), None, {}),
        "timeout": ("GET", "/a.json?timeout=%s" % LONG, None, {}),
        "format": ("GET", "/a.json?format=%s" % LONG, None, {}),
        "print": ("GET", "/a.json?print=%s" % LONG, None, {}),
        "callback": ("GET", "/a.json?callback=%s" % LONG, None, {}),
        "writeSizeLimit": ("PUT", "/a.json?writeSizeLimit=%s" % LONG, b"1", {}),
        "method override": ("POST", "/a.json", b"1", {"X-HTTP-Method-Override": LONG}),
        "auth token": ("GET", "/a.json?auth=%s" % LONG, None, {}),
        "auth_variable_override": ("GET", "/a.json?auth_variable_override=%s" % LONG, None, {"Authorization": "Bearer owner"}),
        "if-match": ("PUT", "/a.json", b"1", {"If-Match": LONG}),
        "key in the body": ("PUT", "/a.json", json.dumps({LONG + "/": 1}).encode(), {}),
        "forbidden key in the body": ("PUT", "/a.json", json.dumps({"." + LONG: 1}).encode(), {}),
        "long number": ("PUT", "/a.json", ("9" * 50_000).encode(), {}),
        "long fraction": ("PUT", "/a.json", ("1." + "9" * 50_000 + "e999").encode(), {}),
        "bad JSON": ("PUT", "/a.json", ("[" + '"%s",' % LONG + "}").encode(), {}),
        "bad literal": ("PUT", "/a.json", ("tru" + LONG).encode(), {}),
        "priority": ("PUT", "/a.json", json.dumps({".priority": {LONG: 1}, ".value": 1}).encode(), {}),
        "server value": ("PUT", "/a.json", json.dumps({".sv": LONG}).encode(), {}),
        "increment": ("PUT", "/a.json", json.dumps({".sv": {LONG: 1}}).encode(), {}),
        "update path": ("PATCH", "/a.json", json.dumps({"a/" + LONG + "/.x": 1}).encode(), {}),
        "update overlap": ("PATCH", "/a.json", json.dumps({LONG[:700]: 1, LONG[:700] + "/b": 2}).encode(), {}),
        "rules": ("PUT", "/.settings/rules.json", json.dumps({"rules": {".read": LONG}}).encode(), {"Authorization": "Bearer owner"}),
        "rules key": ("PUT", "/.settings/rules.json", json.dumps({"rules": {"$" + LONG: {}}}).encode(), {"Authorization": "Bearer owner"}),
        "rules parameter": ("GET", "/.settings/rules.json?format=%s" % LONG, None, {"Authorization": "Bearer owner"}),
    }


@pytest.fixture
def logged(serve):
    return serve("--log")


@pytest.mark.parametrize("name", list(rest_cases()))
def test_rest_errors_quote_a_short_cut_of_the_input(logged, name):
    method, target, body, headers = rest_cases()[name]
    h = {"Connection": "close"}
    h.update(headers)
    out = raw(logged, request_bytes(method, target, body, h))
    assert out.startswith(b"HTTP/1.1 "), out[:300]
    assert longest_run(out) <= SHOWN, "%s: the answer echoes %d characters: %r" % (name, longest_run(out), out[:400])


def test_http_framing_errors_quote_a_short_cut(logged):
    cases = [
        b"GET /" + LONG.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n" + LONG[:30000].encode() + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 30000 + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + LONG[:30000].encode() + b"\r\n\r\n",
        LONG[:30000].encode() + b" / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/" + LONG[:30000].encode() + b"\r\nHost: x\r\n\r\n",
        b"PUT /a.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + LONG[:30000].encode() + b"\r\n",
        b"GET / HTTP/1.1\r\nHost: " + LONG[:30000].encode() + b"\r\n\r\n",
    ]
    for data in cases:
        out = raw(logged, data)
        assert longest_run(out) <= SHOWN, "echoes %d characters: %r" % (longest_run(out), out[:300])


REALTIME = [
    {"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/" + LONG, "h": ""}}},
    {"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/a/." + LONG, "h": ""}}},
    {"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/a", "q": {"i": "." + LONG}, "h": ""}}},
    {"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/a", "q": {LONG: 1}, "h": ""}}},
    {"t": "d", "d": {"r": 1, "a": "p", "b": {"p": "/a", "d": {LONG + "/": 1}}}},
    {"t": "d", "d": {"r": 1, "a": "m", "b": {"p": "/a", "d": {"x/." + LONG: 1}}}},
    {"t": "d", "d": {"r": 1, "a": "p", "b": {"p": "/a", "d": 1, "h": LONG}}},
    {"t": "d", "d": {"r": 1, "a": LONG, "b": {}}},
    {"t": "d", "d": {"r": 1, "a": "auth", "b": {"cred": LONG}}},
    {"t": "d", "d": {"r": 1, "a": "gauth", "b": {"cred": "x", "authvar": LONG}}},
    {"t": "d", "d": {"r": 1, "a": "o", "b": {"p": "/" + LONG, "d": 1}}},
]


@pytest.mark.parametrize("message", REALTIME, ids=[str(i) for i in range(len(REALTIME))])
def test_realtime_errors_quote_a_short_cut_of_the_input(logged, message):
    ws = connect(logged)
    ws.send(message)
    ws.sock.settimeout(10)
    texts = []
    try:
        while True:
            text = ws.recv_raw()
            texts.append(text)
            m = json.loads(text)
            if m.get("t") == "d" and m["d"].get("r") == 1:
                break
    except Exception:  # noqa: BLE001 (a closed connection ends the answer too)
        pass
    answer = "".join(texts) + repr(getattr(ws, "close_reason", ""))
    assert texts or True
    assert longest_run(answer) <= SHOWN, "echoes %d characters: %r" % (longest_run(answer), answer[:300])
    ws.cut()


def test_the_log_quotes_a_short_cut_of_every_input(logged):
    for name, (method, target, body, headers) in rest_cases().items():
        h = {"Connection": "close"}
        h.update(headers)
        raw(logged, request_bytes(method, target, body, h))
    logged_text = logged.stderr()
    assert logged_text.count("\n") >= len(rest_cases()) - 5
    assert longest_run(logged_text) <= SHOWN, "the log echoes %d characters" % longest_run(logged_text)


# ---------------------------------------------------------------------------------------------
# The secret

SECRET = "s3cret-token-never-shown"


def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read()


def environ_free(extra):
    env = {k: v for k, v in os.environ.items() if k not in ("RTDB_SECRET", "RTDB_SERVE_SECRET")}
    env.update(extra)
    return env


def check_secret_required(server):
    assert http(server, "GET", "/a.json").status == 401
    assert http(server, "GET", "/a.json?auth=" + SECRET).status == 200
    assert http(server, "GET", "/a.json", headers={"Authorization": "Bearer " + SECRET}).status == 200


@pytest.mark.parametrize("how", ["--secret-file", "RTDB_SERVE_SECRET", "RTDB_SECRET", "--secret"])
def test_the_secret_is_required_and_never_shown(serve, folder, monkeypatch, how):
    for name in ("RTDB_SECRET", "RTDB_SERVE_SECRET"):
        monkeypatch.delenv(name, raising=False)
    args = ["--log"]
    if how == "--secret-file":
        path = os.path.join(folder, "secret")
        with open(path, "w") as f:
            f.write(SECRET + "\n")
        args += ["--secret-file", path]
    elif how == "--secret":
        args += ["--secret", SECRET]
    else:
        monkeypatch.setenv(how, SECRET)
    server = serve(*args)
    check_secret_required(server)
    assert SECRET.encode() not in cmdline(server.pid)
    # Requests that carry it, refused or not, do not put it in the log.
    http(server, "GET", "/a.json?auth=" + SECRET + "&bad=1")
    http(server, "PUT", "/.settings/rules.json?auth=" + SECRET, {"rules": {"x": 1}})
    ws = connect(server)
    ws.call("auth", {"cred": SECRET})
    ws.close()
    assert SECRET not in server.stderr()
    with open(server.out_path) as f:
        assert SECRET not in f.read()


def test_the_serve_secret_wins_over_the_old_name(serve, monkeypatch):
    monkeypatch.setenv("RTDB_SECRET", "old-name")
    monkeypatch.setenv("RTDB_SERVE_SECRET", SECRET)
    server = serve()
    check_secret_required(server)
    assert http(server, "GET", "/a.json?auth=old-name").status == 401


def test_secret_file_problems_are_usage_errors_without_the_secret(folder):
    empty = os.path.join(folder, "empty")
    open(empty, "w").close()
    db = os.path.join(folder, "db.db")
    for args, needle in [(["--secret-file", empty], "holds no credential"),
                         (["--secret-file", os.path.join(folder, "missing")], "cannot read"),
                         (["--secret-file", empty, "--secret", SECRET], "exclude each other")]:
        r = subprocess.run([RTDB_BIN, "--db", db, "serve", "--port", "0"] + args, capture_output=True, text=True,
                           timeout=30, env=environ_free({}), stdin=subprocess.DEVNULL)
        assert r.returncode == 2 or (needle == "cannot read" and r.returncode != 0), r
        assert needle in r.stderr, r.stderr
        assert SECRET not in r.stderr + r.stdout


def test_a_bad_listen_address_error_does_not_show_the_secret(folder):
    r = subprocess.run([RTDB_BIN, "--db", os.path.join(folder, "db.db"), "serve", "--host", "256.1.1.1", "--port", "0",
                        "--secret", SECRET], capture_output=True, text=True, timeout=30, env=environ_free({}),
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert SECRET not in r.stderr + r.stdout


def test_a_url_with_credentials_is_shown_redacted(folder):
    r = subprocess.run([RTDB_BIN, "get", "/", "--url", "http://user:%s@127.0.0.1:1/?ns=x&auth=%s" % (SECRET, SECRET)],
                       capture_output=True, text=True, timeout=60, env=environ_free({}), stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert SECRET not in r.stderr + r.stdout, r.stderr
