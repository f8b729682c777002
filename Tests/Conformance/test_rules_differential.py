"""Same engine, same answers: requests derived from a fixed seed are decided by `rtdb rules
test` (which `rtdb rules simulate` shares), by `rtdb serve` over REST and by `rtdb serve` over
the realtime protocol, and the three decisions must agree. The requests cover `.validate` on
written children, `newData`, `root`, `data`, priorities, query rules and multi-path updates."""

import base64
import json
import os
import random
import subprocess

from conftest import RTDB_BIN, http
from realtime_client import connect

ADMIN = {"Authorization": "Bearer owner"}
SEED = 36
CASES = 200

RULES = {
    "rules": {
        "users": {
            "$uid": {
                ".read": "auth != null",
                ".write": "auth != null && auth.uid === $uid",
                ".validate": "newData.hasChildren(['name'])",
                "name": {".validate": "newData.isString() && newData.val().length <= 8"},
                "age": {".validate": "newData.isNumber() && newData.val() >= 0"},
                "$other": {".validate": False},
            }
        },
        "posts": {
            ".read": "query.orderByChild === 'author' && query.limitToFirst <= 3",
            "$p": {
                ".read": "data.child('public').val() === true",
                ".write": "auth != null && (data.exists() ? data.child('author').val() === auth.uid"
                          " : newData.child('author').val() === auth.uid)",
                ".validate": "newData.hasChildren(['author']) && root.child('users/' + newData.child('author').val()).exists()",
                "stars": {"$uid": {".write": "auth.uid === $uid", ".validate": "newData.val() === true"}},
                "rank": {".validate": "newData.getPriority() === null || newData.getPriority() < 10"},
            },
        },
        "public": {".read": True},
    }
}

DATA = [
    None,
    {"users": {"alice": {"name": "Alice"}}, "posts": {"p1": {"author": "alice", "public": True}}},
    {"users": {"alice": {"name": "Alice"}, "bob": {"name": "Bob", "age": 4}},
     "posts": {"p1": {"author": "alice"}, "p2": {"author": "bob", "public": True, ".priority": 3}},
     "public": {"motd": "hi"}},
]
USERS = [None, "alice", "alice", "bob", "bob"]
READS = ["/", "/users/alice", "/users/bob", "/posts", "/posts/p1", "/posts/p2", "/public"]
SETS = ["/users/alice", "/users/bob", "/users/alice/name", "/users/alice/age", "/posts/p1", "/posts/p3",
        "/posts/p1/stars/bob", "/posts/p2/stars/bob", "/posts/p1/rank"]
VALUES = [{"name": "Al"}, {"name": "Alexander"}, {"name": "A", "age": 3}, {"name": "A", "x": 1}, "Al", 7, -1,
          {"author": "alice"}, {"author": "bob", "title": "x"}, {"author": "carol"}, True,
          {".value": 5, ".priority": 3}, {".value": 5, ".priority": 20}, None]
UPDATES = [("/", {"users/alice/name": "Bo", "posts/p3": {"author": "alice"}}),
           ("/", {"users/bob": {"name": "B"}, "posts/p4": {"author": "bob"}}),
           ("/users/alice", {"name": "B", "age": -1}),
           ("/users/alice", {"age": 5}),
           ("/posts/p1", {"stars/bob": True, "title": "t"})]


def token(uid):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")
    claims = {"iss": "https://securetoken.google.com/demo", "aud": "demo", "iat": 0, "exp": 4102444800,
              "sub": uid, "user_id": uid, "firebase": {"sign_in_provider": "custom", "identities": {}}}
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(claims) + "."


def cases():
    rng = random.Random(SEED)
    out = []
    for i in range(CASES):
        c = {"name": "c%d" % i, "auth": None, "data": rng.choice(DATA)}
        uid = rng.choice(USERS)
        if uid:
            c["auth"] = {"uid": uid}
        op = rng.choice(["read", "query", "set", "set", "update", "remove"])
        c["op"] = op
        if op == "read":
            c["path"] = rng.choice(READS)
        elif op == "query":
            c["path"] = "/posts"
            c["orderBy"] = rng.choice(["author", "$key", "public"])
            c["limitToFirst"] = rng.choice([2, 3, 5])
        elif op == "set":
            c["path"] = rng.choice(SETS)
            c["value"] = rng.choice(VALUES)
        elif op == "update":
            c["path"], c["value"] = rng.choice(UPDATES)
        else:
            c["path"] = rng.choice(SETS)
        c["expect"] = "allow"
        out.append(c)
    return out


def runner_decisions(folder, all_cases):
    rules = os.path.join(folder, "rules.json")
    tests = os.path.join(folder, "cases.jsonl")
    with open(rules, "w") as f:
        json.dump(RULES, f)
    with open(tests, "w") as f:
        for c in all_cases:
            f.write(json.dumps(c) + "\n")
    proc = subprocess.run([RTDB_BIN, "rules", "test", rules, tests], capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(all_cases) + 1, proc
    return [json.loads(l)["allowed"] for l in lines[:-1]]


def reset(server, data):
    r = http(server, "PUT", "/.json?ns=demo", json.dumps(data).encode(), ADMIN)
    assert r.status == 200, r


def rest_decision(server, c):
    auth = "&auth=" + token(c["auth"]["uid"]) if c["auth"] else ""
    path = "" if c["path"] == "/" else c["path"]
    if c["op"] in ("read", "query"):
        q = ""
        if c["op"] == "query":
            q = "&orderBy=%s&limitToFirst=%d" % (json.dumps(c["orderBy"]), c["limitToFirst"])
        r = http(server, "GET", path + "/.json?ns=demo" + q + auth)
    elif c["op"] == "set":
        r = http(server, "PUT", path + "/.json?ns=demo" + auth, json.dumps(c["value"]).encode())
    elif c["op"] == "update":
        r = http(server, "PATCH", path + "/.json?ns=demo" + auth, c["value"])
    else:
        r = http(server, "DELETE", path + "/.json?ns=demo" + auth)
    assert r.status in (200, 401), (c, r)
    return r.status == 200


def realtime_decision(server, c):
    ws = connect(server)
    try:
        if c["auth"]:
            assert ws.call("auth", {"cred": token(c["auth"]["uid"])})["s"] == "ok"
        if c["op"] in ("read", "query"):
            q = {}
            if c["op"] == "query":
                q = {"l": c["limitToFirst"], "vf": "l"}
                if c["orderBy"] != "$key":
                    q["i"] = c["orderBy"]
                else:
                    q["i"] = ".key"
            body = {"p": c["path"], "h": ""}
            if q:
                body["q"] = q
            answer = ws.call("q", body)
        elif c["op"] == "set":
            answer = ws.call("p", {"p": c["path"], "d": c["value"]})
        elif c["op"] == "update":
            answer = ws.call("m", {"p": c["path"], "d": c["value"]})
        else:
            answer = ws.call("p", {"p": c["path"], "d": None})
        assert answer["s"] in ("ok", "permission_denied"), (c, answer)
        return answer["s"] == "ok"
    finally:
        ws.close()


def test_runner_rest_and_realtime_decide_alike(serve, folder):
    all_cases = cases()
    by_runner = runner_decisions(folder, all_cases)
    server = serve()
    r = http(server, "PUT", "/.settings/rules.json?ns=demo", RULES, ADMIN)
    assert r.status == 200, r
    disagreements = []
    for c, expected in zip(all_cases, by_runner):
        reset(server, c["data"])
        over_rest = rest_decision(server, c)
        reset(server, c["data"])
        over_realtime = realtime_decision(server, c)
        if not (expected == over_rest == over_realtime):
            disagreements.append((c, expected, over_rest, over_realtime))
    assert not disagreements, "\n".join(json.dumps(d) for d in disagreements)
    # The draw exercises both answers of every kind of request.
    kinds = {(c["op"], a) for c, a in zip(all_cases, by_runner)}
    assert len(kinds) == 10, kinds
    prioritized = [a for c, a in zip(all_cases, by_runner) if isinstance(c.get("value"), dict) and ".priority" in c["value"]]
    assert True in prioritized and False in prioritized
    multi = [a for c, a in zip(all_cases, by_runner) if c["op"] == "update" and c["path"] == "/"]
    assert True in multi and False in multi
