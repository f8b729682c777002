"""Benchmark of security rules on `rtdb serve` (goal r), called from bench.py.

Runs the serve GET and PUT request-rate measurements (wrk, 2 threads x 32 connections) twice on
the same file and machine: without rules (every request is allowed, nothing is evaluated), and
with a rules file of 50 rules whose reads and writes are checked for a signed-in user (an
unsigned ID token in `auth=`, decoded on every request). Goal: rules cost at most 20% of the
request rate. The two runs alternate (plain, rules, plain, rules) and the better of each pair is
kept, so a burst of noise on the shared cores does not decide the result.
"""
import base64
import json

import serve_bench


def mock_token(uid):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")
    claims = {"iss": "https://securetoken.google.com/demo-project", "aud": "demo-project", "iat": 0,
              "exp": 3600, "auth_time": 0, "sub": uid, "user_id": uid,
              "firebase": {"sign_in_provider": "custom", "identities": {}}}
    return b64({"alg": "none", "type": "JWT"}) + "." + b64(claims) + "."


def rules_document():
    """50 rules: 7 on the two benchmarked locations, 43 on other paths a real app would have."""
    rules = {
        "small": {".read": "auth != null && auth.uid == 'bench'"},
        "items": {
            "$k": {
                ".write": "auth != null && $k.beginsWith('k') && (!data.exists() || data.child('owner').val() == auth.uid)",
                ".validate": "newData.hasChildren(['n', 'text', 'owner'])",
                "n": {".validate": "newData.isNumber() && newData.val() >= 0"},
                "text": {".validate": "newData.isString() && newData.val().length <= 140"},
                "owner": {".validate": "newData.val() == auth.uid"},
                "$other": {".validate": False},
            }
        },
    }
    rules["members"] = {".read": "auth != null"}
    rules["public"] = {".read": True, ".write": False}
    for i in range(10):
        rules[f"section{i}"] = {
            "$id": {
                ".read": f"auth != null && root.child('members/{i}/' + auth.uid).exists()",
                ".write": f"auth.token.admin == true || $id.matches(/^[a-z0-9_-]{{3,32}}$/)",
                "title": {".validate": "newData.isString() && newData.val().length < 100"},
                "ts": {".validate": "newData.isNumber() && newData.val() <= now"},
            }
        }
    count = 0

    def walk(node):
        nonlocal count
        for k, v in node.items():
            if k in (".read", ".write", ".validate"):
                count += 1
            elif isinstance(v, dict):
                walk(v)
    walk(rules)
    assert count == 50, count
    return {"rules": rules}


def bench_r(ctx, res, seconds=5):
    if serve_bench.shutil.which("wrk") is None:
        res.add("r", "rules cost: wrk is not installed (apt-get install wrk)", "—", "", False)
        return
    db = ctx.path("r.db")
    ctx.run(ctx.cmd(db, "set", "/small", json.dumps({"name": "Ada", "age": 36})))
    rules_file = ctx.path("bench.rules.json")
    with open(rules_file, "w") as f:
        json.dump(rules_document(), f, indent=2)
    check = ctx.run([ctx.rtdb, "rules", "check", rules_file], capture=True)
    token = mock_token("bench")
    lua = ctx.path("put-rules.lua")
    with open(lua, "w") as f:
        f.write('wrk.method = "PUT"\nwrk.body = \'{"n":1,"text":"hello","owner":"bench"}\'\n'
                'local i = 0\nrequest = function()\n  i = i + 1\n'
                f'  return wrk.format(nil, "/items/k" .. (i % 1000) .. ".json?auth={token}")\nend\n')

    def rates(extra):
        p, host, port, _ = serve_bench.start_server(ctx, db, *extra)
        base = f"http://{host}:{port}"
        get, get_errs, _ = serve_bench.wrk(base + f"/small.json?auth={token}", seconds)
        put, put_errs, _ = serve_bench.wrk(base, seconds, lua)
        ctx.stop(p)
        if get_errs or put_errs:
            raise ctx.error(f"(r) non-2xx answers or socket errors with {extra or 'no rules'}")
        return get, put

    plain, ruled = [], []
    for _ in range(2):
        plain.append(rates([]))
        ruled.append(rates(["--rules", rules_file]))
    g0, p0 = max(r[0] for r in plain), max(r[1] for r in plain)
    g1, p1 = max(r[0] for r in ruled), max(r[1] for r in ruled)
    for what, a, b in (("GET /small.json", g0, g1), ("durable PUT /items/k….json", p0, p1)):
        ratio = b / a
        res.add("r", f"{what} with 50 rules, signed-in user: rate beside the no-rules run",
                f"{b:,.0f} vs {a:,.0f} req/s ({(1 - ratio) * 100:.1f}% cost)", "≤ 20% cost", ratio >= 0.8)
    res.notes.append("(r) each rate is the better of two wrk runs (2 threads × 32 connections, "
                     f"{seconds} s), no-rules and rules runs alternating on the same file")
