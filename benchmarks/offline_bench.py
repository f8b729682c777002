"""Benchmarks of the offline cache (goal o), called from bench.py.

* a read answered from a complete cache: `rtdb --url URL --cache C --offline get PATH` beside
  `rtdb --db FILE get PATH` of the same data, interleaved, medians compared (goal ≤ 1.5×);
* queuing a write offline: `--offline set` beside an embedded `set`, interleaved (goal ≤ 2×);
* flushing 10,000 queued writes to `rtdb serve` on loopback with `sync --writes-only`
  (goal ≥ 2,000 writes/s). The rows are put in the queue with sqlite3 (setup: 10,000 separate
  `rtdb set` processes would take a minute and measure process start-up, not the flush); each
  is a set of its own path, so consecutive rows travel as one multi-path update. For
  reference, 1,000 increments of one counter, which must go one request each, are flushed too;
* for reference, an auto-mode `get` of a kept location while `sync --follow` streams it (the
  read fast path: answered from the cache, no request), beside the embedded `get`.
Every process started here goes through ctx.spawn / ctx.run, so the caller stops it.
"""
import json
import sqlite3
import statistics
import time

import serve_bench


def bench_o(ctx, res, runs=41, rows=10_000, solo_rows=1_000):
    rtdb = ctx.rtdb
    sdb, edb, cache = ctx.path("o-server.db"), ctx.path("o-embedded.db"), ctx.path("o-cache.db")
    item = json.dumps({"name": "Ada", "n": 1})
    for db in (sdb, edb):
        ctx.run([rtdb, "--db", db, "set", "/bench/item", item])
    server, host, port, _ = serve_bench.start_server(ctx, sdb)
    url = f"http://{host}:{port}?ns=bench"
    cached = [rtdb, "--url", url, "--cache", cache]

    # (1) a read answered from a complete cache
    ctx.run(cached + ["get", "/bench/item"])   # online: stored as a complete tracked query
    _, a = ctx.run(cached + ["--offline", "get", "/bench/item"], capture=True)
    _, b = ctx.run([rtdb, "--db", edb, "get", "/bench/item"], capture=True)
    if json.loads(a) != json.loads(b):
        raise ctx.error(f"(o) the cache and the embedded file disagree: {a!r} vs {b!r}")
    for _ in range(3):
        ctx.run(cached + ["--offline", "get", "/bench/item"]), ctx.run([rtdb, "--db", edb, "get", "/bench/item"])
    tc, te = [], []
    for _ in range(runs):
        tc.append(ctx.run(cached + ["--offline", "get", "/bench/item"])[0])
        te.append(ctx.run([rtdb, "--db", edb, "get", "/bench/item"])[0])
    mc, me = statistics.median(tc), statistics.median(te)
    res.add("o", f"get --offline /bench/item from a complete cache, median of {runs}", f"{mc * 1000:.2f} ms", "", None)
    res.add("o", "  reference: embedded get of the same data, median", f"{me * 1000:.2f} ms", "", None)
    res.add("o", "cached get ÷ embedded get", f"{mc / me:.2f}×", "≤ 1.5×", mc / me <= 1.5)

    # (2) queuing a write offline
    tq, tw = [], []
    for i in range(runs + 3):
        dq = ctx.run(cached + ["--offline", "set", f"/w/k{i}", str(i)])[0]
        dw = ctx.run([rtdb, "--db", edb, "set", f"/w/k{i}", str(i)])[0]
        if i >= 3:
            tq.append(dq)
            tw.append(dw)
    mq, mw = statistics.median(tq), statistics.median(tw)
    res.add("o", f"set --offline (queued), median of {runs}", f"{mq * 1000:.2f} ms", "", None)
    res.add("o", "  reference: embedded set, median", f"{mw * 1000:.2f} ms", "", None)
    res.add("o", "queued set ÷ embedded set", f"{mq / mw:.2f}×", "≤ 2×", mq / mw <= 2)
    ctx.run(cached + ["queue", "clear"])

    # (3) flushing 10,000 queued writes
    def fill(items):
        con = sqlite3.connect(cache)
        now = int(time.time() * 1000)
        con.executemany("INSERT INTO cache_writes(cmd, kind, path, data, created_ms, principal) "
                        "VALUES(?, 'set', ?, ?, ?, 'anonymous')", [(c, p, d, now) for c, p, d in items])
        con.commit()
        con.close()
    fill([("set", f"/flush/k{i}", str(i)) for i in range(rows)])
    dt, out = ctx.run(cached + ["sync", "--writes-only"], capture=True, timeout=600)
    last = json.loads(out.splitlines()[-1])
    if last.get("acked") != rows or last.get("pending") != 0:
        raise ctx.error(f"(o) sync did not send every row: {last}")
    _, shallow = ctx.run([rtdb, "--db", sdb, "get", "/flush", "--shallow"], capture=True, timeout=120)
    if len(json.loads(shallow)) != rows:
        raise ctx.error("(o) the server does not hold every flushed write")
    rate = rows / dt
    res.add("o", f"sync of {rows:,} queued sets to rtdb serve (one request in flight)", f"{rate:,.0f} writes/s",
            "≥ 2,000 writes/s", rate >= 2_000)
    inc = json.dumps({".sv": {"increment": 1}})
    fill([("increment", "/counter", inc) for _ in range(solo_rows)])
    dt2, _ = ctx.run(cached + ["sync", "--writes-only"], timeout=600)
    _, n = ctx.run([rtdb, "--db", sdb, "get", "/counter"], capture=True)
    if int(n) != solo_rows:
        raise ctx.error(f"(o) the counter is {n!r} after {solo_rows} increments")
    res.add("o", f"  reference: sync of {solo_rows:,} increments of one counter (one request each)",
            f"{solo_rows / dt2:,.0f} writes/s", "", None)
    res.notes.append(f"(o) cached get min/max {min(tc) * 1000:.2f}/{max(tc) * 1000:.2f} ms; "
                     f"queued set min/max {min(tq) * 1000:.2f}/{max(tq) * 1000:.2f} ms")

    # (4) a kept location while `sync --follow` streams it: an auto-mode read (no --offline)
    # answered from the cache without a request, beside the embedded get
    ctx.run(cached + ["keep", "add", "/bench"])
    follow = ctx.spawn(cached + ["sync", "--follow"])
    deadline = time.time() + 30
    while time.time() < deadline:
        con = sqlite3.connect(cache)
        live = con.execute("SELECT count(*) FROM cache_streams").fetchone()[0]
        con.close()
        if live:
            break
        time.sleep(0.1)
    else:
        raise ctx.error("(o) sync --follow never streamed the kept location")
    tk, te2 = [], []
    for i in range(runs + 3):
        dk = ctx.run(cached + ["get", "/bench/item"])[0]
        de = ctx.run([rtdb, "--db", edb, "get", "/bench/item"])[0]
        if i >= 3:
            tk.append(dk)
            te2.append(de)
    mk, me2 = statistics.median(tk), statistics.median(te2)
    res.add("o", f"get /bench/item of a kept location streamed by sync --follow (auto mode), median of {runs}",
            f"{mk * 1000:.2f} ms", "", None)
    res.add("o", "  ratio to the embedded get (median of the same runs)", f"{mk / me2:.2f}×", "", None)
    ctx.stop(follow)
    ctx.stop(server)
