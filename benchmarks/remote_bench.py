"""Benchmarks of `rtdb --url` against `rtdb serve` on loopback (goal h), called from bench.py.

* get of a small path: `rtdb --url URL get PATH` beside `curl -s` of the same REST URL, both
  runs interleaved, medians compared (goal ≤ 1.5× curl);
* `push --lines` of 100,000 items to serve: one PATCH (goal ≥ 50,000 items/s);
* watch latency through serve: `rtdb --url … watch` while `rtdb --url … set` writes; the time
  from the write (its server timestamp, taken in the write transaction) to the event line
  (goal p50 ≤ 10 ms).
Every process started here goes through ctx.spawn / ctx.run, so the caller stops it.
"""
import json
import shutil
import statistics
import subprocess
import time

import serve_bench


def bench_h(ctx, res, line_reader, gen_push_lines, runs=41, items=100_000, writes=40):
    db = ctx.path("h.db")
    ctx.run([ctx.rtdb, "--db", db, "set", "/bench/item", json.dumps({"name": "Ada", "n": 1})])
    server, host, port, _ = serve_bench.start_server(ctx, db)
    url = f"http://{host}:{port}?ns=bench"
    rest = f"http://{host}:{port}/bench/item.json?ns=bench"
    remote = [ctx.rtdb, "--url", url]

    # (1) get of a small path, beside curl
    curl = shutil.which("curl")
    if not curl:
        raise ctx.error("(h) curl is required")
    _, out = ctx.run(remote + ["get", "/bench/item"], capture=True)
    _, ref = ctx.run([curl, "-s", "-H", "Authorization: Bearer owner", rest], capture=True)
    if json.loads(out) != json.loads(ref):
        raise ctx.error(f"(h) rtdb get and curl disagree: {out!r} vs {ref!r}")
    tg, tc = [], []
    for _ in range(runs):
        tg.append(ctx.run(remote + ["get", "/bench/item"])[0])
        tc.append(ctx.run([curl, "-s", "-H", "Authorization: Bearer owner", rest])[0])
    mg, mc = statistics.median(tg), statistics.median(tc)
    res.add("h", f"rtdb --url get /bench/item against rtdb serve, median of {runs}", f"{mg * 1000:.2f} ms", "", None)
    res.add("h", "  reference: curl -s of the same REST URL, median", f"{mc * 1000:.2f} ms", "", None)
    res.add("h", "rtdb --url get ÷ curl", f"{mg / mc:.2f}×", "≤ 1.5×", mg / mc <= 1.5)

    # (2) push --lines of 100,000 items: one PATCH
    src = ctx.path("h-lines.jsonl")
    gen_push_lines(src, items)
    dt, _ = ctx.run(remote + ["push", "/items", "--lines", "-q"], stdin_file=src, timeout=600)
    rate = items / dt
    res.add("h", f"rtdb --url push /items --lines of {items:,} items to rtdb serve", f"{rate:,.0f} items/s",
            "≥ 50,000 items/s", rate >= 50_000)
    _, shallow = ctx.run([ctx.rtdb, "--db", db, "get", "/items", "--shallow"], capture=True, timeout=120)
    if len(json.loads(shallow)) != items:
        raise ctx.error("(h) push --lines did not store every item")

    # (3) watch latency through rtdb serve
    ctx.run(remote + ["set", "/live", json.dumps({"k": {"n": -1}})])
    w = ctx.spawn(remote + ["watch", "/live", "--child-events"])
    reader = line_reader(w)
    reader.wait_for(lambda e: e.get("event") == "child_added" and e.get("key") == "k", timeout=10)
    lat, exit_lat = [], []
    warmup = 3
    for i in range(warmup + writes):
        value = json.dumps({"n": i, "t": {".sv": "timestamp"}})
        _, out = ctx.run(remote + ["set", "/live/k", value], capture=True, timeout=30)
        t_exit = time.time()
        written = json.loads(out)["value"]
        t_line, _ = reader.wait_for(lambda e: e.get("key") == "k" and isinstance(e.get("value"), dict)
                                    and e["value"].get("n") == i, timeout=10)
        if i >= warmup:
            lat.append(t_line * 1000.0 - written["t"])
            exit_lat.append((t_line - t_exit) * 1000.0)
        time.sleep(0.03)
    p50 = statistics.median(lat)
    res.add("h", f"rtdb --url watch through rtdb serve: write (commit) → event line, p50 of {writes}",
            f"{p50:.2f} ms", "≤ 10 ms", p50 <= 10)
    res.add("h", "  lower bound: writer process exit → event line, median", f"{statistics.median(exit_lat):.2f} ms", "", None)
    res.notes.append(f"(h) watch through serve: p90 {sorted(lat)[int(0.9 * len(lat))]:.2f} ms, max {max(lat):.2f} ms; "
                     "curl and rtdb both send 'Authorization: Bearer owner' and open one connection per run")
    ctx.stop(w)
    ctx.stop(server)
