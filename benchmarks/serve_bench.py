"""Benchmarks of `rtdb serve` (goal g), called from bench.py.

Load generators: wrk (C, keep-alive, 2 threads x 32 connections) for request rates; this file's
own epoll loop (Python) for the 1,000 streams. Every server started here is stopped by the
caller's Ctx (it is spawned through ctx.spawn).
"""
import json
import os
import select
import shutil
import socket
import statistics
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def start_server(ctx, db, *extra):
    t0 = time.perf_counter()
    p = ctx.spawn([ctx.rtdb, "--db", db, "serve", "--port", "0", *extra])
    line = p.stdout.readline()
    dt = time.perf_counter() - t0
    if not line:
        raise ctx.error(f"serve printed no listening line: {p.stderr.read().decode(errors='replace')[:300]}")
    url = json.loads(line)["url"]
    host, port = url[len("http://"):].rsplit(":", 1)
    return p, host, int(port), dt


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(url, seconds, script=None):
    cmd = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    rate = None
    errors = 0
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            rate = float(line.split()[1])
        if "Non-2xx" in line or "Socket errors" in line:
            errors += 1
    return rate, errors, out


def bench_g(ctx, res, startups=21, seconds=5, streams=1000, writes=20, idle_secs=5):
    db = ctx.path("g.db")
    ctx.run(ctx.cmd(db, "set", "/small", json.dumps({"name": "Ada", "age": 36})))
    # start-up to the listening line
    times = []
    for _ in range(startups):
        p, _, _, dt = start_server(ctx, db)
        times.append(dt * 1000)
        ctx.stop(p)
    m = statistics.median(times)
    res.add("g", f"rtdb serve: start → listening line, median of {startups}", f"{m:.1f} ms", "≤ 50 ms", m <= 50)

    p, host, port, _ = start_server(ctx, db)
    base = f"http://{host}:{port}"
    if shutil.which("wrk") is None:
        res.add("g", "GET / PUT request rates: wrk is not installed (apt-get install wrk)", "—", "", False)
    else:
        rate, errs, out = wrk(base + "/small.json", seconds)
        res.add("g", f"GET /small.json, keep-alive, wrk 2 threads × 32 connections, {seconds} s",
                f"{rate:,.0f} req/s", "≥ 20,000 req/s", rate is not None and rate >= 20_000 and errs == 0)
        lua = ctx.path("put.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "PUT"\nwrk.body = \'{"n":1,"text":"hello"}\'\n'
                    'local i = 0\nrequest = function()\n  i = i + 1\n'
                    '  return wrk.format(nil, "/items/k" .. (i % 1000) .. ".json")\nend\n')
        rate, errs, out = wrk(base, seconds, lua)
        res.add("g", f"durable PUT (acknowledged after fsync), wrk 2 threads × 32 connections, {seconds} s",
                f"{rate:,.0f} req/s", "≥ 5,000 req/s", rate is not None and rate >= 5_000 and errs == 0)
        res.notes.append("(g) wrk runs on the same 2 cores as the server; rates are for both together")

    # 1,000 streams on one path
    ep = select.epoll()
    socks = {}
    request = (f"GET /live.json HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n").encode()
    for _ in range(streams):
        s = socket.create_connection((host, port))
        s.setblocking(False)
        s.sendall(request)
        socks[s.fileno()] = [s, b""]
        ep.register(s.fileno(), select.EPOLLIN)

    def drain(until, want):
        """Reads until every stream's buffer contains `want` (or the deadline); returns arrival times."""
        arrived = {}
        deadline = time.monotonic() + until
        while len(arrived) < len(socks) and time.monotonic() < deadline:
            for fd, _ in ep.poll(0.5):
                entry = socks[fd]
                try:
                    chunk = entry[0].recv(65536)
                except BlockingIOError:
                    continue
                now = time.perf_counter()
                entry[1] += chunk
                if fd not in arrived and want in entry[1]:
                    arrived[fd] = now
                    entry[1] = b""
        return arrived

    first = drain(30, b'"path":"/"')
    if len(first) < streams:
        raise ctx.error(f"(g) only {len(first)} of {streams} streams got their first event")
    rss = rss_mb(p.pid)
    writer = socket.create_connection((host, port))
    latencies = []
    for i in range(writes + 2):
        body = json.dumps({"i": i}).encode()
        t0 = time.perf_counter()
        writer.sendall(b"PUT /live.json?print=silent HTTP/1.1\r\nHost: x\r\nContent-Length: "
                       + str(len(body)).encode() + b"\r\n\r\n" + body)
        got = drain(30, f'"i":{i}'.encode())
        writer.recv(65536)
        if len(got) < streams:
            raise ctx.error(f"(g) write {i}: only {len(got)} of {streams} streams got the event")
        if i >= 2:
            latencies += [(t - t0) * 1000 for t in got.values()]
        time.sleep(0.05)
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[int(len(latencies) * 0.99)]
    res.add("g", f"{streams} streams on one path, one PUT → event on all, p50 over {writes} writes",
            f"{p50:.1f} ms", "≤ 10 ms", p50 <= 10)
    res.add("g", f"  same, p99", f"{p99:.1f} ms", "≤ 50 ms", p99 <= 50)
    res.add("g", f"server RSS with {streams} open streams", f"{rss:.1f} MB", "≤ 200 MB", rss <= 200)
    res.notes.append("(g) stream latency = arrival of the event at the harness's own epoll loop (Python, one "
                     "thread reading all streams) minus the moment the PUT was sent; it includes the write's fsync "
                     "and the harness's time to read the other streams first, so it is an upper bound")
    writer.close()
    for s, _ in socks.values():
        s.close()
    ep.close()
    time.sleep(1.0)
    # idle CPU, with no client
    c0, t0 = cpu_ticks(p.pid), time.monotonic()
    time.sleep(idle_secs)
    pct = (cpu_ticks(p.pid) - c0) / CLK_TCK / (time.monotonic() - t0) * 100
    res.add("g", f"idle server CPU over {idle_secs} s", f"{pct:.2f}% of a core", "≤ 1%", pct <= 1)
    ctx.stop(p)
