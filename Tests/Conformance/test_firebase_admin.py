"""firebase-admin (Python) against `rtdb serve`, through FIREBASE_DATABASE_EMULATOR_HOST.

Each test has its own App (unique name) whose databaseURL is https://<ns>.firebaseio.com; the SDK
then talks to http://127.0.0.1:PORT/...json?ns=<ns> with `Authorization: Bearer owner`.
"""

import itertools
import os
import queue
import socket
import threading

import firebase_admin
import pytest
import requests
from firebase_admin import db, exceptions

_names = itertools.count(1)


@pytest.fixture
def make_app(monkeypatch):
    """Factory: make_app(server, ns) returns a firebase_admin App pointed at the server."""
    apps = []

    def make(server, ns="conformance"):
        monkeypatch.setenv("FIREBASE_DATABASE_EMULATOR_HOST", "%s:%d" % (server.host, server.port))
        app = firebase_admin.initialize_app(
            options={"databaseURL": "https://%s.firebaseio.com" % ns, "httpTimeout": 30},
            name="conformance-%d-%d" % (os.getpid(), next(_names)))
        apps.append(app)
        return app

    yield make
    for app in apps:
        firebase_admin.delete_app(app)


def stop_listening(registration):
    """Ends a listen() at once. The SDK's own close() only closes the socket, which does not wake
    its reader thread: that waits for the next bytes (a keep-alive, every 30 s) before it sees the
    close. Shutting the connection down first ends the read now; with reconnecting switched off,
    the thread then stops by itself, and close() finds nothing left to do."""
    sse = registration._sse
    sse.should_connect = False
    sse.retry = 0
    try:
        sock = sse.resp.raw._fp.fp.raw._sock
        sock.shutdown(socket.SHUT_RDWR)
    except (AttributeError, OSError):
        pass
    registration._thread.join(timeout=10)
    registration.close()


@pytest.fixture
def ref(server, make_app):
    """db.reference('/') of an App on the default server."""
    return db.reference("/", app=make_app(server))


def test_set_then_get(ref, rtdb):
    value = {"name": {"first": "Jack", "last": "Sparrow"}, "age": 40, "ok": True, "ratio": 0.5}
    ref.child("users/jack").set(value)
    assert ref.child("users/jack").get() == value
    assert ref.child("users/jack/name/first").get() == "Jack"
    assert ref.child("users/nobody").get() is None
    # The write is in the file the local commands use.
    assert rtdb("get", "/users/jack/age").json() == 40
    ref.child("users/jack/age").set(41)
    assert ref.child("users/jack").get()["age"] == 41


def test_get_reads_local_writes(ref, rtdb):
    rtdb("set", "/local", '{"a":[1,2,3],"s":"x"}')
    # An array is stored as an object with integer keys and comes back as an array.
    assert ref.child("local").get() == {"a": [1, 2, 3], "s": "x"}


def test_get_shallow(ref):
    ref.child("tree").set({"a": {"x": 1, "y": {"z": 2}}, "b": 2, "c": "s"})
    assert ref.child("tree").get(shallow=True) == {"a": True, "b": True, "c": True}
    assert ref.child("tree/c").get(shallow=True) == "s"
    assert ref.child("tree/missing").get(shallow=True) is None


def test_get_with_etag(ref):
    target = ref.child("etag/node")
    value, etag = target.get(etag=True)
    assert value is None
    assert etag == "null_etag"
    target.set({"v": 1})
    value, etag1 = target.get(etag=True)
    assert value == {"v": 1}
    assert isinstance(etag1, str) and etag1 and etag1 != "null_etag"
    # The same data has the same tag; different data a different one.
    assert target.get(etag=True) == ({"v": 1}, etag1)
    target.set({"v": 2})
    value, etag2 = target.get(etag=True)
    assert value == {"v": 2}
    assert etag2 != etag1


def test_get_if_changed(ref):
    target = ref.child("ifchanged")
    target.set("first")
    _, etag = target.get(etag=True)
    assert target.get_if_changed(etag) == (False, None, None)
    target.set("second")
    changed, value, new_etag = target.get_if_changed(etag)
    assert changed is True
    assert value == "second"
    assert new_etag and new_etag != etag
    assert target.get_if_changed(new_etag) == (False, None, None)


def test_set_if_unchanged_fresh(ref):
    target = ref.child("cas")
    target.set({"n": 1})
    _, etag = target.get(etag=True)
    ok, value, new_etag = target.set_if_unchanged(etag, {"n": 2})
    assert ok is True
    assert value == {"n": 2}
    assert target.get() == {"n": 2}
    # The returned tag is the tag of what is now stored.
    assert new_etag == target.get(etag=True)[1]


def test_set_if_unchanged_on_missing_data(ref):
    target = ref.child("cas-new")
    ok, value, etag = target.set_if_unchanged("null_etag", {"created": True})
    assert ok is True
    assert target.get() == {"created": True}
    # A second create-only write finds the data there and is refused.
    ok, value, etag2 = target.set_if_unchanged("null_etag", {"created": "again"})
    assert ok is False
    assert value == {"created": True}
    assert etag2 == etag


def test_set_if_unchanged_stale(ref, rtdb):
    target = ref.child("cas-stale")
    target.set({"n": 1})
    _, stale = target.get(etag=True)
    rtdb("set", "/cas-stale/n", "5")
    ok, value, etag = target.set_if_unchanged(stale, {"n": 2})
    assert ok is False
    # The refusal carries the current value and its tag.
    assert value == {"n": 5}
    assert etag == target.get(etag=True)[1]
    assert etag != stale
    assert target.get() == {"n": 5}
    assert rtdb("get", "/cas-stale").json() == {"n": 5}


def test_push(ref):
    parent = ref.child("messages")
    first = parent.push({"user": "jack", "text": "Ahoy!"})
    second = parent.push()
    for child in (first, second):
        assert len(child.key) == 20
        assert child.key.startswith("-")
    # Push IDs made later sort later.
    assert first.key < second.key
    assert first.get() == {"user": "jack", "text": "Ahoy!"}
    assert second.get() == ""
    assert set(parent.get().keys()) == {first.key, second.key}


def test_update_multi_path(ref, rtdb):
    users = ref.child("users")
    users.set({"ada": {"name": "Ada", "nick": "a", "langs": {"x": 1}}, "bob": {"name": "Bob", "age": 3}})
    users.update({"ada/nick": None, "bob/name": "Robert", "carl": {"name": "Carl"}, "ada/langs": {"y": 2}})
    assert users.get() == {
        "ada": {"name": "Ada", "langs": {"y": 2}},
        "bob": {"name": "Robert", "age": 3},
        "carl": {"name": "Carl"},
    }
    assert rtdb("get", "/users/bob").json() == {"name": "Robert", "age": 3}


def test_delete(ref):
    ref.child("gone").set({"a": 1, "b": {"c": 2}})
    ref.child("kept").set(7)
    ref.child("gone/b").delete()
    assert ref.child("gone").get() == {"a": 1}
    ref.child("gone").delete()
    assert ref.child("gone").get() is None
    assert ref.child("kept").get() == 7
    # Deleting what is not there succeeds.
    ref.child("never").delete()


def test_transaction_four_threads(server, make_app):
    counter = db.reference("/counter", app=make_app(server))
    per_thread, threads = 25, 4
    committed = []
    aborted = []
    errors = []
    lock = threading.Lock()

    def work():
        try:
            done = 0
            while done < per_thread:
                try:
                    counter.transaction(lambda current: (current or 0) + 1)
                except db.TransactionAbortedError:
                    # 25 lost races in a row: legal under contention, and nothing was written.
                    with lock:
                        aborted.append(1)
                    if len(aborted) > 20:
                        raise
                    continue
                done += 1
                with lock:
                    committed.append(1)
        except Exception as e:  # reported below, with the thread's failure
            errors.append(repr(e))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=150)
    assert not any(w.is_alive() for w in workers), "transactions did not finish"
    assert errors == []
    assert len(committed) == per_thread * threads
    assert counter.get() == per_thread * threads


@pytest.fixture
def dinosaurs(ref):
    data = {
        "bruhathkayosaurus": {"height": 25, "length": 44, "name": "b"},
        "lambeosaurus": {"height": 2.1, "length": 12.5, "name": "l"},
        "linhenykus": {"height": 0.6, "length": 1, "name": "li"},
        "pterodactyl": {"height": 0.6, "length": 1.5, "name": "p"},
        "stegosaurus": {"height": 4, "length": 9, "name": "s"},
        "triceratops": {"height": 3, "length": 9, "name": "t"},
        "nessie": {"length": 20, "name": "n"},
        "unknown": {"height": "tall", "name": "u"},
    }
    ref.child("dinosaurs").set(data)
    return ref.child("dinosaurs")


def keys(result):
    return list(result.keys())


def test_order_by_child(dinosaurs):
    q = dinosaurs.order_by_child("height")
    # Missing children sort first, then numbers, then strings; ties by key.
    assert keys(q.get()) == ["nessie", "linhenykus", "pterodactyl", "lambeosaurus", "triceratops",
                             "stegosaurus", "bruhathkayosaurus", "unknown"]
    assert keys(dinosaurs.order_by_child("height").start_at(3).get()) == [
        "triceratops", "stegosaurus", "bruhathkayosaurus", "unknown"]
    assert keys(dinosaurs.order_by_child("height").start_at(0.6).end_at(3).get()) == [
        "linhenykus", "pterodactyl", "lambeosaurus", "triceratops"]
    assert keys(dinosaurs.order_by_child("height").equal_to(0.6).get()) == ["linhenykus", "pterodactyl"]
    assert keys(dinosaurs.order_by_child("height").start_at(3).limit_to_first(2).get()) == [
        "triceratops", "stegosaurus"]
    assert keys(dinosaurs.order_by_child("height").end_at(25).limit_to_last(2).get()) == [
        "stegosaurus", "bruhathkayosaurus"]
    result = dinosaurs.order_by_child("height").equal_to(4).get()
    assert result == {"stegosaurus": {"height": 4, "length": 9, "name": "s"}}
    assert dinosaurs.order_by_child("height").equal_to(99).get() in (None, {})


def test_order_by_child_nested_path(ref):
    scores = ref.child("scores")
    scores.set({"a": {"stats": {"pts": 5}}, "b": {"stats": {"pts": 1}}, "c": {"stats": {"pts": 3}}, "d": {}})
    assert keys(scores.order_by_child("stats/pts").start_at(2).get()) == ["c", "a"]
    assert keys(scores.order_by_child("stats/pts").limit_to_last(1).get()) == ["a"]


def test_order_by_key(dinosaurs, ref):
    assert keys(dinosaurs.order_by_key().start_at("l").end_at("p").get()) == [
        "lambeosaurus", "linhenykus", "nessie"]
    assert keys(dinosaurs.order_by_key().limit_to_first(2).get()) == ["bruhathkayosaurus", "lambeosaurus"]
    assert keys(dinosaurs.order_by_key().limit_to_last(2).get()) == ["triceratops", "unknown"]
    assert keys(dinosaurs.order_by_key().equal_to("nessie").get()) == ["nessie"]
    # Keys that are 32-bit integers (leading zeros allowed) come first, in numeric order, the
    # shorter first on a tie: -1, 7, 07, 9, 10, then x.
    # (The SDK re-sorts keys as plain strings, so only the set chosen by the server is compared.)
    ref.child("numbered").set({"10": "a", "9": "b", "x": "c", "-1": "d", "07": "e", "7": "f"})
    assert set(ref.child("numbered").order_by_key().limit_to_first(3).get()) == {"-1", "7", "07"}
    assert set(ref.child("numbered").order_by_key().limit_to_last(2).get()) == {"10", "x"}
    assert set(ref.child("numbered").order_by_key().start_at("8").end_at("10").get()) == {"9", "10"}


def test_order_by_value(ref):
    scores = ref.child("values")
    scores.set({"alice": 30, "bob": 10, "carol": 20, "dan": 20, "eve": "z", "fay": True})
    # Booleans before numbers before strings; ties by key.
    assert keys(scores.order_by_value().get()) == ["fay", "bob", "carol", "dan", "alice", "eve"]
    assert keys(scores.order_by_value().start_at(15).end_at(30).get()) == ["carol", "dan", "alice"]
    assert keys(scores.order_by_value().equal_to(20).get()) == ["carol", "dan"]
    assert keys(scores.order_by_value().limit_to_first(2).get()) == ["fay", "bob"]
    assert keys(scores.order_by_value().start_at(0).limit_to_last(2).get()) == ["alice", "eve"]
    assert scores.order_by_value().start_at(100).end_at(200).get() in (None, {})


def test_listen_sees_local_set_and_update(server, make_app, rtdb):
    rtdb("set", "/rooms/1", '{"name":"lobby","count":2}')
    events = queue.Queue()
    registration = db.reference("/rooms/1", app=make_app(server)).listen(events.put)
    try:
        first = events.get(timeout=20)
        assert (first.event_type, first.path, first.data) == ("put", "/", {"name": "lobby", "count": 2})

        rtdb("set", "/rooms/1/messages/m1", '{"text":"hi"}')
        put = events.get(timeout=20)
        assert (put.event_type, put.path, put.data) == ("put", "/messages/m1", {"text": "hi"})

        rtdb("update", "/rooms/1", '{"count":3,"topic/title":"chat"}')
        patch = events.get(timeout=20)
        assert (patch.event_type, patch.path, patch.data) == ("patch", "/", {"count": 3, "topic/title": "chat"})

        # A write elsewhere in the tree raises nothing here; the next event is the delete.
        rtdb("set", "/rooms/2", '"other"')
        rtdb("set", "/rooms/1/name", "null")
        removed = events.get(timeout=20)
        assert (removed.event_type, removed.path, removed.data) == ("put", "/name", None)
    finally:
        stop_listening(registration)
    assert events.empty(), [(e.event_type, e.path, e.data) for e in list(events.queue)]


@pytest.mark.parametrize("rules", [False, True], ids=["no-rules", "rules"])
def test_listen_hears_a_push_as_a_put_of_the_new_child(server, make_app, rules):
    """As firebase-admin's own integration test_listen: a push() through REST streams to a
    listen() above it as a put at the new child, by an admin, with or without rules."""
    app = make_app(server)
    python = db.reference("/_adminsdk/python", app=app)
    if rules:
        python._client.request("put", "/.settings/rules.json", json={"rules": {".read": True, ".write": True}})
    events = queue.Queue()
    registration = python.listen(events.put)
    try:
        first = events.get(timeout=20)
        assert (first.event_type, first.path) == ("put", "/")
        ref = python.child("users").push()
        assert ref.path == "/_adminsdk/python/users/" + ref.key
        pushed = events.get(timeout=20)
        assert (pushed.event_type, pushed.path, pushed.data) == ("put", "/users/" + ref.key, "")
        valued = python.child("users").push({"name": "Luis Alvarez", "since": 1911})
        pushed = events.get(timeout=20)
        assert (pushed.event_type, pushed.path, pushed.data) == (
            "put", "/users/" + valued.key, {"name": "Luis Alvarez", "since": 1911})
    finally:
        stop_listening(registration)
    assert events.empty(), [(e.event_type, e.path, e.data) for e in list(events.queue)]


def test_listen_on_missing_location_starts_with_null(server, make_app, rtdb):
    events = queue.Queue()
    registration = db.reference("/empty", app=make_app(server)).listen(events.put)
    try:
        # The first event is a put at "/" even when there is nothing there: its data is null.
        first = events.get(timeout=20)
        assert (first.event_type, first.path, first.data) == ("put", "/", None)
        rtdb("set", "/empty", "42")
        second = events.get(timeout=20)
        assert (second.event_type, second.path, second.data) == ("put", "/", 42)
    finally:
        stop_listening(registration)


def test_secret_refuses_owner_token(serve, make_app):
    server = serve("--secret", "s3cret")
    ref = db.reference("/guarded", app=make_app(server))
    with pytest.raises(exceptions.UnauthenticatedError) as info:
        ref.set({"x": 1})
    assert "Permission denied" in str(info.value)
    with pytest.raises(exceptions.UnauthenticatedError):
        ref.get()
    base = server.url + "/guarded.json"
    # Nothing was written by the refused request.
    r = requests.get(base, params={"auth": "s3cret"}, timeout=15)
    assert (r.status_code, r.json()) == (200, None)
    r = requests.put(base, params={"auth": "s3cret"}, json={"x": 2}, timeout=15)
    assert (r.status_code, r.json()) == (200, {"x": 2})
    r = requests.get(base, headers={"Authorization": "Bearer s3cret"}, timeout=15)
    assert (r.status_code, r.json()) == (200, {"x": 2})
    r = requests.get(base, params={"access_token": "s3cret"}, timeout=15)
    assert (r.status_code, r.json()) == (200, {"x": 2})
    r = requests.get(base, params={"auth": "wrong"}, timeout=15)
    assert r.status_code == 401
    assert r.json() == {"error": "Permission denied"}
    r = requests.get(base, timeout=15)
    assert r.status_code == 401


def test_data_dir_namespaces(serve, make_app, folder, rtdb):
    data_dir = os.path.join(folder, "data")
    os.mkdir(data_dir)
    server = serve(db=None, data_dir=data_dir)
    alpha = db.reference("/", app=make_app(server, "alpha"))
    beta = db.reference("/", app=make_app(server, "beta"))
    alpha.child("who").set("alpha")
    beta.child("who").set({"name": "beta"})
    assert alpha.child("who").get() == "alpha"
    assert beta.child("who").get() == {"name": "beta"}
    assert sorted(n for n in os.listdir(data_dir) if n.endswith(".db")) == ["alpha.db", "beta.db"]
    assert rtdb("get", "/who", db=os.path.join(data_dir, "alpha.db")).json() == "alpha"
    assert rtdb("get", "/who", db=os.path.join(data_dir, "beta.db")).json() == {"name": "beta"}
    r = requests.get(server.url + "/.inspect/databases.json", timeout=15)
    assert r.status_code == 200
    listed = r.json()
    assert isinstance(listed, list), listed
    assert sorted(entry["name"] for entry in listed) == ["alpha", "beta"]
    # A stream on a namespace follows local writes to that namespace's file.
    events = queue.Queue()
    registration = alpha.child("who").listen(events.put)
    try:
        first = events.get(timeout=20)
        assert (first.event_type, first.path, first.data) == ("put", "/", "alpha")
        rtdb("set", "/who", '"changed"', db=os.path.join(data_dir, "alpha.db"))
        second = events.get(timeout=20)
        assert (second.event_type, second.path, second.data) == ("put", "/", "changed")
    finally:
        stop_listening(registration)
    assert beta.child("who").get() == {"name": "beta"}
    # A namespace that was only read is not created.
    assert db.reference("/", app=make_app(server, "gamma")).get() is None
    assert not os.path.exists(os.path.join(data_dir, "gamma.db"))
