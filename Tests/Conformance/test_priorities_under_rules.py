"""Priorities under security rules, over REST and the realtime protocol's raw frames.

A priority never hides a value's type from the rules (`isString()`, `isNumber()`,
`isBoolean()` see the value beneath it), `data.getPriority()` is the stored priority, and a
compare-and-set on a node that has a priority succeeds with the hash of the value *with* its
priority, as clients compute it (the Firebase JS SDK's transaction tests "Priority is preserved
when setting data", "transaction() respects .priority" and "Transaction and priority" failed
with `datastale` forever before), for a realtime `p` with `h` and a REST `if-match`."""

import json

import pytest

from conftest import http
from realtime_client import connect

ADMIN = {"Authorization": "Bearer owner"}

RULES = {
    "rules": {
        ".read": True,
        "open": {".write": True},
        "notes": {"$n": {".write": True, ".validate": "!newData.isString() || newData.val().length <= 5"}},
        "flags": {"$f": {".write": True, ".validate": "!newData.isBoolean()"}},
        "nums": {"$n": {".write": True, ".validate": "newData.isNumber()"}},
        "ranked": {"$r": {".write": "!data.exists() || data.getPriority() == 5"}},
    }
}


def put_rules(server, rules):
    r = http(server, "PUT", "/.settings/rules.json?ns=demo", rules, ADMIN)
    assert r.status == 200, r


def rest(server, method, path, value=None, headers=None):
    return http(server, method, path + ".json?ns=demo", value, headers)


@pytest.fixture
def ruled(serve):
    server = serve()
    put_rules(server, RULES)
    return server


def etag(server, path):
    r = rest(server, "GET", path, headers={"X-Firebase-ETag": "true"})
    assert r.status == 200, r
    return r.headers["etag"]


# ---------------------------------------------------------------------------------------------
# Type checks see through priorities

# (path, value, allowed): every type check, with and without a priority.
TYPE_CASES = [
    ("/notes/a", "short", True),
    ("/notes/b", {".value": "short", ".priority": 1}, True),
    ("/notes/c", "far too long", False),
    ("/notes/d", {".value": "far too long", ".priority": 1}, False),
    ("/notes/e", {".value": 12345678, ".priority": "p"}, True),
    ("/flags/a", True, False),
    ("/flags/b", {".value": False, ".priority": 1}, False),
    ("/flags/c", {".value": 1, ".priority": 1}, True),
    ("/nums/a", 5, True),
    ("/nums/b", {".value": 5, ".priority": 1}, True),
    ("/nums/c", {".value": 2.5, ".priority": "x"}, True),
    ("/nums/d", {".value": "5", ".priority": 1}, False),
    ("/nums/e", {".value": True, ".priority": 1}, False),
]


@pytest.mark.parametrize("path,value,allowed", TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_type_checks_over_rest(ruled, path, value, allowed):
    r = rest(ruled, "PUT", path, value)
    assert r.status == (200 if allowed else 401), r
    stored = rest(ruled, "GET", path, headers=None).json()
    plain = value[".value"] if isinstance(value, dict) else value
    assert stored == (plain if allowed else None)


@pytest.mark.parametrize("path,value,allowed", TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_type_checks_over_realtime(ruled, path, value, allowed):
    ws = connect(ruled)
    answer = ws.call("p", {"p": path, "d": value})
    assert answer["s"] == ("ok" if allowed else "permission_denied"), answer
    ws.close()


def test_a_priority_write_is_checked_against_the_value_beneath(ruled):
    assert rest(ruled, "PUT", "/nums/a", 3).status == 200
    # newData at /nums/a is 3 with priority 5: still a number.
    assert rest(ruled, "PUT", "/nums/a/.priority", 5).status == 200
    assert rest(ruled, "GET", "/nums/a/.priority").json() == 5
    ws = connect(ruled)
    assert ws.call("p", {"p": "/nums/a/.priority", "d": 7})["s"] == "ok"
    ws.close()
    assert rest(ruled, "GET", "/nums/a/.priority").json() == 7


def test_data_get_priority_is_the_stored_priority(ruled):
    assert rest(ruled, "PUT", "/ranked/x", {".value": "first", ".priority": 5}).status == 200
    assert rest(ruled, "PUT", "/ranked/y", {".value": "first", ".priority": 4}).status == 200
    # Only a node whose stored priority is 5 may be replaced.
    assert rest(ruled, "PUT", "/ranked/x", "second").status == 200
    assert rest(ruled, "PUT", "/ranked/y", "second").status == 401
    ws = connect(ruled)
    assert ws.call("p", {"p": "/ranked/y", "d": "third"})["s"] == "permission_denied"
    assert rest(ruled, "PUT", "/ranked/z", {".value": 1, ".priority": 5}).status == 200
    assert ws.call("p", {"p": "/ranked/z", "d": 2})["s"] == "ok"
    ws.close()


# ---------------------------------------------------------------------------------------------
# Compare-and-set on prioritised data under rules

@pytest.mark.parametrize("rules", [{"rules": {".read": True, ".write": True}}, None],
                         ids=["under rules", "without rules"])
def test_a_realtime_transaction_on_prioritised_data(serve, rules):
    server = serve()
    if rules:
        put_rules(server, rules)
    assert rest(server, "PUT", "/open/t", {".value": "test", ".priority": 5}).status == 200
    h = etag(server, "/open/t")
    ws = connect(server)
    # The SDK's transaction: the new value keeps the priority; the hash covers it.
    stale = ws.call("p", {"p": "/open/t", "d": {".value": "new", ".priority": 5}, "h": "AAAAAAAAAAAAAAAAAAAAAAAAAAA="})
    assert stale["s"] == "datastale", stale
    answer = ws.call("p", {"p": "/open/t", "d": {".value": "new", ".priority": 5}, "h": h})
    assert answer["s"] == "ok", answer
    ws.close()
    r = rest(server, "GET", "/open/t", headers=None)
    assert r.json() == "new"
    export = http(server, "GET", "/open/t.json?ns=demo&format=export")
    assert export.json() == {".value": "new", ".priority": 5}


@pytest.mark.parametrize("rules", [{"rules": {".read": True, ".write": True}}, None],
                         ids=["under rules", "without rules"])
def test_a_rest_if_match_on_prioritised_data(serve, rules):
    server = serve()
    if rules:
        put_rules(server, rules)
    assert rest(server, "PUT", "/open/t", {"a": 1, ".priority": "p"}).status == 200
    h = etag(server, "/open/t")
    assert rest(server, "PUT", "/open/t", {"a": 2}, {"if-match": '"AAAAAAAAAAAAAAAAAAAAAAAAAAA="'}).status == 412
    r = rest(server, "PUT", "/open/t", {"a": 2, ".priority": "p"}, {"if-match": h})
    assert r.status == 200, r
    assert http(server, "GET", "/open/t.json?ns=demo&format=export").json() == {"a": 2, ".priority": "p"}
    # The ETag of the new value, again with its priority, deletes it.
    assert rest(server, "DELETE", "/open/t", headers={"if-match": etag(server, "/open/t")}).status == 200
    assert rest(server, "GET", "/open/t").json() is None


def test_siblings_keep_their_priorities_through_a_transaction(ruled):
    """The SDK's "Changing priority on siblings": a transaction at the parent changes one child's
    priority and leaves the other's."""
    assert rest(ruled, "PUT", "/open/s", {"a": {".value": 1, ".priority": 1}, "b": {".value": 2, ".priority": 2}}).status == 200
    h = etag(ruled, "/open/s")
    ws = connect(ruled)
    answer = ws.call("p", {"p": "/open/s", "d": {"a": {".value": 1, ".priority": 3}, "b": {".value": 2, ".priority": 2}}, "h": h})
    assert answer["s"] == "ok", answer
    ws.close()
    assert http(ruled, "GET", "/open/s.json?ns=demo&format=export").json() == \
        {"a": {".value": 1, ".priority": 3}, "b": {".value": 2, ".priority": 2}}
