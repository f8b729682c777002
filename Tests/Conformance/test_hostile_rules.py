"""Rules govern data, not names.

Without --data-dir every namespace name (`?ns=`, the Host label, the realtime `ns=`) is the same
file, so the rules in force are the file's: rules set under any name, or given with --rules at
start, govern every name a client may use, over REST and the realtime protocol. With --data-dir
each file keeps its own rules."""

import json
import os

from conftest import Reader, Stream, http, request_bytes
from realtime_client import connect

ADMIN = {"Authorization": "Bearer owner"}
CLOSED = {"rules": {".read": False, ".write": False}}
OPEN = {"rules": {".read": True, ".write": True}}


def send(server, method, target, body=None, headers=None, host=None):
    """One request on its own connection, with `host` as its Host header."""
    h = {"Connection": "close"}
    h.update(headers or {})
    with server.connect() as sock:
        sock.sendall(request_bytes(method, target, body, h, host=host or "127.0.0.1"))
        return Reader(sock).read_response(method)


def put_rules(server, rules, ns="demo", host=None):
    target = "/.settings/rules.json?ns=%s" % ns if ns else "/.settings/rules.json"
    r = send(server, "PUT", target, rules, ADMIN, host=host)
    assert r.status == 200, r


def get(server, path, ns=None, host=None):
    return send(server, "GET", path + ".json" + ("?ns=%s" % ns if ns else ""), host=host)


def put(server, path, value, ns=None, host=None):
    return send(server, "PUT", path + ".json" + ("?ns=%s" % ns if ns else ""), value, host=host)


def realtime_answers(server, ns, host=None):
    """A listen and a write by an anonymous realtime client of namespace `ns`."""
    ws = connect(server, ns=ns, host_header=host)
    try:
        listen = ws.call("q", {"p": "/x", "h": ""})
        write = ws.call("p", {"p": "/x", "d": 2})
    finally:
        ws.close()
    return listen["s"], write["s"]


def test_rules_set_under_one_name_govern_every_name(serve):
    server = serve()
    assert put(server, "/x", 1, ns="a").status == 200
    put_rules(server, CLOSED, ns="a")
    # The same data under other names: ?ns=, the Host label, no name at all.
    for ns, host in [("b", None), ("a", None), (None, "other.localhost"), (None, None)]:
        assert get(server, "/x", ns=ns, host=host).status == 401, (ns, host)
        assert put(server, "/x", 3, ns=ns, host=host).status == 401, (ns, host)
    for ns in ["a", "b", "zz"]:
        assert realtime_answers(server, ns) == ("permission_denied", "permission_denied"), ns
    assert http(server, "GET", "/x.json?ns=b", headers=ADMIN).json() == 1
    # The rules as any name reads them are the ones last set, under whatever name.
    r = http(server, "GET", "/.settings/rules.json?ns=zz", headers=ADMIN)
    assert json.loads(r.body) == CLOSED
    # Replaced through a Host label: every name follows.
    put_rules(server, OPEN, ns=None, host="elsewhere.localhost")
    for ns in ["a", "b"]:
        assert get(server, "/x", ns=ns).status == 200
    assert realtime_answers(server, "c") == ("ok", "ok")
    assert http(server, "GET", "/.settings/rules.json?ns=a", headers=ADMIN).json() == OPEN


def test_rules_given_at_start_are_replaced_for_every_name(serve, folder):
    rules_file = os.path.join(folder, "rules.json")
    with open(rules_file, "w") as f:
        json.dump(OPEN, f)
    server = serve("--rules", rules_file)
    assert put(server, "/x", 1, ns="a").status == 200
    # An open realtime session keeps working under the rules that replace the start's.
    ws = connect(server, ns="b")
    assert ws.call("q", {"p": "/x", "h": ""})["s"] == "ok"
    put_rules(server, CLOSED, ns="c")
    assert ws.call("p", {"p": "/x", "d": 5})["s"] == "permission_denied"
    assert ws.call("g", {"p": "/x", "q": {}})["s"] == "permission_denied"
    ws.close()
    for ns in ["a", "b", "anything"]:
        assert get(server, "/x", ns=ns).status == 401, ns
        assert put(server, "/x", 4, ns=ns).status == 401, ns
    assert http(server, "GET", "/x.json?ns=a", headers=ADMIN).json() == 1


def test_streams_opened_before_any_rules_are_revoked_by_rules_set_under_any_name(serve):
    server = serve()
    ws = connect(server, ns="b")
    assert ws.call("q", {"p": "/x", "h": ""})["s"] == "ok"
    with Stream(server, "/x.json?ns=d") as stream:
        assert stream.status == 200
        assert stream.events(1)[0][0] == "put"
        put_rules(server, OPEN, ns="a")   # the rules let everyone read …
        assert ws.call("g", {"p": "/x", "q": {}})["s"] == "ok"
        put_rules(server, CLOSED, ns="c")   # … then no one: both streams end
        assert stream.events(1, timeout=5.0) == [("cancel", '"Permission denied"')]
    push = ws.push(timeout=5.0)
    assert push["a"] == "c" and push["b"]["p"] == "x", push
    ws.close()


def test_with_a_data_dir_each_file_keeps_its_own_rules(serve, folder):
    dbs = os.path.join(folder, "dbs")
    server = serve(db=None, data_dir=dbs)
    assert put(server, "/x", 1, ns="a").status == 200
    assert put(server, "/x", 1, ns="b").status == 200
    put_rules(server, CLOSED, ns="a")
    assert get(server, "/x", ns="a").status == 401
    assert get(server, "/x", ns="a", host="a.localhost").status == 401
    assert get(server, "/x", ns="b").status == 200
    assert realtime_answers(server, "a") == ("permission_denied", "permission_denied")
    assert realtime_answers(server, "b") == ("ok", "ok")
