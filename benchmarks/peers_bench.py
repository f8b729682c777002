#!/usr/bin/env python3
"""rtdb against the tools people would use instead (called by benchmarks/peers.sh).

    peers_bench.py RTDB WORKDIR [--baseline RTDB2] [--quick] [--only gwrf] [--markdown FILE]

Measures, on loopback, in rounds that alternate rtdb and its peer (rtdb, baseline, peer, rtdb,
baseline, peer, ...), so that the machine's drift touches all of them alike:

  g  one-shot `rtdb get` of one leaf vs `sqlite3 FILE` selecting the same row (wall time with
     hyperfine, instructions with callgrind)
  w  durable writes, 32 connections: rtdb serve PUT vs Redis (appendfsync always) SET, the same
     bytes to the same keys at random, over 1,000 present keys (overwrites; etcd put as well) and
     over 100,000 under a prefix new to each run (inserts)
  r  small reads, 32 keep-alive connections: rtdb serve GET /small.json and /small.json?ns=bench
     vs nginx (static file, worker_processes auto) vs etcd range
  f  one write fanned out to 1,000 subscribers: rtdb serve SSE streams vs Redis pub/sub vs etcd
     watches: the slowest subscriber's delay and the server's RSS growth

Every figure is the median over the rounds; for w and r, each server's cores during each load as
well (`measure`). Prints a table with rtdb ÷ peer ratios and the goals (PASS/FAIL); exits 0 when the run completed, whatever the goals say, and 2 on a harness error.
Every server gets a free loopback port and a folder inside WORKDIR; every PID started is listed
in WORKDIR/pids (peers.sh's trap kills those, and only those, if this process dies).
"""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import shlex
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_servers import (CONNECTIONS, INSERT_KEYS, KEY_DIGITS, OVERWRITE_KEYS, PUT_BODY,  # noqa: E402
                           THREADS, BenchError, Etcd, Nginx, Procs, Redis, RtdbServer, b64, http_call,
                           log, loadavg, measure, random_put_lua, redis_benchmark, redis_prefix_keys,
                           wrk, write_lua)
from peers_fanout import FanEtcd, FanRedis, FanRtdb, fanout_once  # noqa: E402
from host import describe  # noqa: E402

SUBSCRIBERS = 1000
READ_NAMESPACE = "bench"   # the ?ns= of part r's second read


# ---------------------------------------------------------------------------------------------
# results

class Row:
    def __init__(self, work, peer, unit, fmt, rtdb, base, peerv, goal=None, absolute=None, cores=None):
        self.work, self.peer, self.unit, self.fmt = work, peer, unit, fmt
        self.rtdb, self.base, self.peerv = rtdb, base, peerv
        self.goal = goal            # (op, ratio) on rtdb ÷ peer, op "<=" or ">="
        self.absolute = absolute    # (op, value, text) on rtdb's own figure
        self.cores = cores          # (rtdb, baseline, peer): the cores each server used for its figure

    def cell(self, i):
        """Figure i (0 rtdb, 1 baseline, 2 peer), with the cores its server used when known."""
        text = self.fmt((self.rtdb, self.base, self.peerv)[i])
        if self.cores and self.cores[i] is not None:
            text += f", {f_cores(self.cores[i])}"
        return text

    def ratio(self, v):
        return v / self.peerv if v is not None and self.peerv else None

    def ok(self):
        checks = []
        if self.goal:
            op, bound = self.goal
            r = self.ratio(self.rtdb)
            checks.append(r is not None and (r <= bound if op == "<=" else r >= bound))
        if self.absolute:
            op, bound, _ = self.absolute
            checks.append(self.rtdb <= bound if op == "<=" else self.rtdb >= bound)
        return None if not checks else all(checks)

    def goal_text(self):
        parts = []
        if self.goal:
            parts.append(f"{'≤' if self.goal[0] == '<=' else '≥'} {self.goal[1]}× {self.peer}")
        if self.absolute:
            parts.append(self.absolute[2])
        return "; ".join(parts)


class Results:
    def __init__(self, has_base):
        self.rows = []
        self.notes = []
        self.has_base = has_base

    def add(self, row):
        self.rows.append(row)
        ok = row.ok()
        base = f", baseline {row.cell(1)}" if self.has_base else ""
        r = row.ratio(row.rtdb)
        log(f"{row.work}: rtdb {row.cell(0)}{base}, {row.peer} {row.cell(2)}"
            f" ({'—' if r is None else f'{r:.2f}×'}) {'' if ok is None else ('PASS' if ok else 'FAIL')}")

    def table(self, markdown=False):
        head = ["work", "rtdb"] + (["rtdb baseline"] if self.has_base else []) + ["peer", "rtdb ÷ peer"]
        head += (["baseline ÷ peer"] if self.has_base else []) + ["goal", "result"]
        body = []
        for r in self.rows:
            ratio = r.ratio(r.rtdb)
            line = [f"{r.work} ({r.unit})", r.cell(0)]
            if self.has_base:
                line.append(r.cell(1))
            line += [f"{r.peer} {r.cell(2)}", "—" if ratio is None else f"{ratio:.2f}×"]
            if self.has_base:
                br = r.ratio(r.base)
                line.append("—" if br is None else f"{br:.2f}×")
            ok = r.ok()
            line += [r.goal_text() or "—", "—" if ok is None else ("PASS" if ok else "FAIL")]
            body.append(line)
        if markdown:
            out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in body]
            return "\n".join(out)
        widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        fmt = lambda cells: "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()
        return "\n".join([fmt(head), "  ".join("-" * w for w in widths)] + [fmt(b) for b in body])


def f_ms(v):
    return "—" if v is None else f"{v:.2f} ms"


def f_rate(v):
    return "—" if v is None else f"{v:,.0f}/s"


def f_count(v):
    return "—" if v is None else f"{v:,.0f}"


def f_cores(v):
    return "—" if v is None else f"{v:.1f} cores"


def f_kb(v):
    return "—" if v is None else f"{v:.1f} KB"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------------------------------------
# g: one-shot get vs sqlite3

def time_runs(procs, cmd, runs, tag):
    """Median wall time of `cmd` in ms over `runs` runs (3 warm-ups): hyperfine when installed,
    else timed here around each run."""
    if shutil.which("hyperfine"):
        out = procs.path(f"hf-{tag}.json")
        procs.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none",
                   "--export-json", out, "--", shlex.join(cmd)], timeout=300)
        with open(out) as f:
            times = json.load(f)["results"][0]["times"]
    else:
        # posix_spawn and waitpid, not subprocess.run: the latter's own set-up (pipes, closing
        # descriptors) adds about a millisecond to every run, which would flatten the ratio
        exe = shutil.which(cmd[0])
        null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_RDONLY if fd == 0 else os.O_WRONLY, 0)
                for fd in (0, 1, 2)]
        times = []
        for i in range(runs + 3):
            t0 = time.perf_counter()
            pid = os.posix_spawn(exe, cmd, procs.env, file_actions=null)
            _, status = os.waitpid(pid, 0)
            dt = time.perf_counter() - t0
            if os.waitstatus_to_exitcode(status) != 0:
                raise BenchError(f"exit {os.waitstatus_to_exitcode(status)}: {' '.join(cmd)}")
            if i >= 3:
                times.append(dt)
    return statistics.median(times) * 1000


def instructions(procs, cmd, tag):
    out = procs.path(f"callgrind-{tag}.out")
    procs.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd], timeout=300)
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise BenchError(f"no totals in {out}")


def bench_get(procs, res, cfg, bins):
    users = 10_000
    src = procs.path("users.json")
    with open(src, "w") as f:
        json.dump({"users": {f"u{i:06d}": {"name": f"User {i}", "age": 18 + i % 60,
                                           "email": f"user{i}@example.com", "active": i % 3 != 0}
                             for i in range(users)}}, f, separators=(",", ":"))
    leaf = "/users/u005000/name"
    cmds = {}
    for label, binary in bins:
        db = procs.path(f"get-{label}.db")
        with open(src, "rb") as fin:
            procs.run([binary, "--db", db, "set", "/", "-", "-q"], stdin=fin, timeout=120)
        cmds[label] = [binary, "--db", db, "get", leaf]
        got = procs.run(cmds[label]).strip()
        if got != '"User 5000"':
            raise BenchError(f"rtdb ({label}) get {leaf} printed {got!r}")
    # The row rtdb stores that leaf in, found by its value (the key's encoding is rtdb's business),
    # then selected by primary key, as rtdb does.
    db = procs.path("get-rtdb.db")
    key = procs.run(["sqlite3", db, "select hex(path) from data where v = 'User 5000'"]).strip()
    if not re.fullmatch(r"[0-9A-F]+", key):
        raise BenchError(f"found no single row holding 'User 5000' in {db}: {key!r}")
    cmds["sqlite3"] = ["sqlite3", db, f"select v from data where path = X'{key}'"]
    if procs.run(cmds["sqlite3"]).strip() != "User 5000":
        raise BenchError("sqlite3's point select did not print User 5000")
    labels = [b[0] for b in bins] + ["sqlite3"]
    walls = {k: [] for k in labels}
    for r in range(cfg.rounds):
        for k in labels:
            walls[k].append(time_runs(procs, cmds[k], cfg.get_runs, f"{k}-{r}"))
        log(f"(g) round {r + 1}: " + ", ".join(f"{k} {walls[k][-1]:.2f} ms" for k in labels))
    irs = {k: instructions(procs, cmds[k], k) for k in labels}
    base = "baseline" if len(bins) > 1 else None
    timer = "hyperfine -N" if shutil.which("hyperfine") else "timed in-process"
    res.add(Row(f"get {leaf}, one process, wall median", "sqlite3", f"{timer}, {cfg.get_runs} runs × "
                f"{cfg.rounds} rounds", f_ms, med(walls["rtdb"]), med(walls[base]) if base else None,
                med(walls["sqlite3"]), goal=("<=", 1.3)))
    res.add(Row(f"get {leaf}, one process, instructions", "sqlite3", "callgrind Ir", f_count,
                irs["rtdb"], irs.get(base), irs["sqlite3"], goal=("<=", 1.3)))
    res.notes.append(f"(g) a {users:,}-user file ({users * 4:,} leaves) written by each rtdb binary with "
                     f"`set / -`; sqlite3 runs `{' '.join(cmds['sqlite3'][2:])}` on the file of the "
                     "measured binary (the row that holds the leaf, by primary key). Per-round medians: "
                     + "; ".join(f"{k} " + "/".join(f"{x:.2f}" for x in walls[k]) + " ms" for k in labels))
    os.remove(src)


# ---------------------------------------------------------------------------------------------
# w and r: request rates against servers that stay up for both

def disk_sync_ms(path, count=200):
    """p50 and p99 of one fdatasync of a small append in `path`'s folder: the floor under the
    latency of any write acknowledged only after its data is on the disk (rtdb's group commit,
    Redis's appendfsync always, etcd's WAL)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    times = []
    try:
        for _ in range(count):
            os.write(fd, b"x" * 100)
            t = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - t) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


class Figures:
    """One workload's Loads, by side, over the rounds."""

    def __init__(self):
        self.runs = {}

    def add(self, side, load):
        self.runs.setdefault(side, []).append(load)

    def rate(self, side):
        return med([x.rate for x in self.runs.get(side, [])])

    def p99(self, side):
        return med([x.p99 for x in self.runs.get(side, [])])

    def cores(self, side):
        return med([x.cores for x in self.runs.get(side, [])])

    def last(self):
        return ", ".join(f"{k} {v[-1].rate:,.0f}/s p99 {v[-1].p99:.2f} ms {f_cores(v[-1].cores)}"
                         for k, v in self.runs.items())

    def errors(self):
        return [f"{k}: {x.errors}" for k, v in self.runs.items() for x in v if x.errors]

    def per_round(self):
        return "; ".join(f"{k} " + "/".join(f"{x.rate:,.0f}" for x in v) for k, v in self.runs.items())


def interleave(cfg, part, contenders):
    """Runs every contender's load once per round, in the order given, each measured with the
    CPU time of its server (`measure`). `contenders` are (workload, side, server PID,
    run(round number) → Load); returns {workload: Figures}."""
    figs = {}
    for r in range(1, cfg.rounds + 1):
        for workload, side, pid, run in contenders:
            figs.setdefault(workload, Figures()).add(side, measure(pid, lambda: run(r)))
        for workload, f in figs.items():
            log(f"({part}) round {r}, {workload}: {f.last()}")
    return figs


def note_socket_errors(res, part, figs):
    errors = [f"{workload}, {e}" for workload, f in figs.items() for e in f.errors()]
    if errors:
        res.notes.append(f"({part}) wrk socket errors: " + "; ".join(errors))


class RedisWrites:
    """redis-benchmark runs of one key pattern, each sized to last about `secs` seconds from
    the median rate so far (one fast round would otherwise make the next, slower one run
    several times as long)."""

    def __init__(self, procs, redis, space, secs):
        self.procs, self.redis, self.space, self.secs = procs, redis, space, secs
        self.rates = []

    def warm_up(self, prefix):
        self.rates.append(redis_benchmark(self.procs, self.redis.port, 2000, prefix, self.space).rate)

    def run(self, prefix):
        n = max(1000, int(med(self.rates) * self.secs))
        load = redis_benchmark(self.procs, self.redis.port, n, prefix, self.space)
        self.rates.append(load.rate)
        return load


def rtdb_children(port, path):
    """The keys under `path` on an rtdb server (a shallow read)."""
    got = json.loads(http_call(port, "GET", f"{path}.json?shallow=true"))
    return list(got) if isinstance(got, dict) else []


def inserts_tag(r):
    """The prefix of round r's insert load (0: the warm-up): new to each run, so that every
    run starts with none of its keys present, on both sides."""
    return f"inserts{r}"


def bench_writes(procs, res, cfg, servers, redis, etcd):
    secs = cfg.seconds
    put_lua = random_put_lua(procs.path("put.lua"))
    bodies = ",\n".join(f"  '{json.dumps({'key': b64(f'items/{i:0{KEY_DIGITS}d}'), 'value': b64(PUT_BODY)})}'"
                        for i in range(OVERWRITE_KEYS))
    etcd_put_lua = write_lua(procs.path("etcd-put.lua"),
                             f"wrk.method = \"POST\"\nlocal bodies = {{\n{bodies}\n}}\n"
                             "local threads = 0\nfunction setup(thread)\n  threads = threads + 1\n"
                             "  thread:set(\"thread_number\", threads)\nend\n"
                             "function init(args)\n  math.randomseed(os.time() * 1000 + thread_number)\nend\n"
                             "function request()\n"
                             f"  return wrk.format(nil, \"/v3/kv/put\", nil, bodies[math.random(1, {OVERWRITE_KEYS})])\n"
                             "end\n")

    def rtdb_put(s, prefix, space):
        return wrk(procs, s.port, "/", secs, put_lua, f"rtdb ({s.label}) PUT /{prefix}", (prefix, space))

    # every one of the 1,000 keys written first, so that the overwrite load overwrites from its
    # first request (etcd's are written by its warm-up, nearly all of them)
    keys = [f"{i:0{KEY_DIGITS}d}" for i in range(OVERWRITE_KEYS)]
    for s in servers:
        http_call(s.port, "PUT", "/items.json", body=json.dumps({k: json.loads(PUT_BODY) for k in keys}).encode())
    procs.run(["redis-cli", "-h", "127.0.0.1", "-p", str(redis.port), "mset",
               *[x for k in keys for x in (f"items:{k}", PUT_BODY)]])
    redis_over = RedisWrites(procs, redis, OVERWRITE_KEYS, secs)
    redis_new = RedisWrites(procs, redis, INSERT_KEYS, secs)
    # warm-ups, not counted: each server's first second of the load it will get
    for s in servers:
        wrk(procs, s.port, "/", 1, put_lua, "warm-up", ("items", OVERWRITE_KEYS))
        wrk(procs, s.port, "/", 1, put_lua, "warm-up", (inserts_tag(0), INSERT_KEYS))
    redis_over.warm_up("items")
    redis_new.warm_up(inserts_tag(0))
    wrk(procs, etcd.port, "/v3/kv/put", 1, etcd_put_lua, "warm-up")

    sync50, sync99 = disk_sync_ms(procs.path("fdatasync.probe"))
    log(f"(w) one fdatasync on this disk: p50 {sync50:.2f} ms, p99 {sync99:.2f} ms")
    res.notes.append(f"(w) the disk under the temp dir: one fdatasync of a 100-byte append takes "
                     f"{sync50:.2f} ms (p50) and {sync99:.2f} ms (p99) over 200 tries before the write rounds; "
                     "no durable write (rtdb's group commit, Redis's appendfsync always, etcd's WAL) can be "
                     "answered sooner" + (", so a p99 goal below that is out of reach on this disk" if sync99 > 1.5 else ""))

    over, new = "1,000 keys", "new keys"
    contenders = []
    for s in servers:
        contenders.append((over, s.label, s.p.pid, lambda r, s=s: rtdb_put(s, "items", OVERWRITE_KEYS)))
    contenders.append((over, "redis", redis.p.pid, lambda r: redis_over.run("items")))
    contenders.append((over, "etcd", etcd.p.pid,
                       lambda r: wrk(procs, etcd.port, "/v3/kv/put", secs, etcd_put_lua, "etcd put")))
    for s in servers:
        contenders.append((new, s.label, s.p.pid, lambda r, s=s: rtdb_put(s, inserts_tag(r), INSERT_KEYS)))
    contenders.append((new, "redis", redis.p.pid, lambda r: redis_new.run(inserts_tag(r))))
    figs = interleave(cfg, "w", contenders)
    note_socket_errors(res, "w", figs)

    # the writes landed where they should, and how many of each insert run's writes made a key
    for s in servers:
        keys = rtdb_children(s.port, "/items")
        if len(keys) != OVERWRITE_KEYS:
            raise BenchError(f"rtdb serve ({s.label}): /items holds {len(keys)} keys after the overwrite load")
        got = json.loads(http_call(s.port, "GET", f"/items/{keys[0]}.json"))
        if got != json.loads(PUT_BODY):
            raise BenchError(f"rtdb serve ({s.label}): /items/{keys[0]} is {got!r} after the PUT load")
    n = json.loads(etcd.etcdctl("get", "--prefix", "items/", "--keys-only", "--limit", "1", "-w", "json"))
    n = int(n.get("count", 0))
    if not 0 < n <= OVERWRITE_KEYS:
        raise BenchError(f"etcd holds {n} keys under items/ after the put load, not 1 to {OVERWRITE_KEYS}")
    if redis_prefix_keys(procs, redis.port, "items") != OVERWRITE_KEYS:
        raise BenchError(f"Redis does not hold {OVERWRITE_KEYS} keys items:* after the overwrite load")
    # (capped at 1: the writes in flight when wrk stops may make keys without being counted)
    made = {}
    for s in servers:
        made[s.label] = [min(1, len(rtdb_children(s.port, "/" + inserts_tag(r))) / load.requests)
                         for r, load in enumerate(figs[new].runs[s.label], 1)]
    made["redis"] = [min(1, redis_prefix_keys(procs, redis.port, inserts_tag(r)) / load.requests)
                     for r, load in enumerate(figs[new].runs["redis"], 1)]

    base = "baseline" if len(servers) > 1 else None
    unit = f"{CONNECTIONS} connections, {secs} s × {cfg.rounds} rounds"

    def row(workload, title, peer, what, fmt, goal=None, absolute=None, cores=False):
        f = figs[workload]
        get = getattr(f, what)
        res.add(Row(title, peer, unit, fmt, get("rtdb"), get(base) if base else None, get(peer), goal=goal,
                    absolute=absolute,
                    cores=(f.cores("rtdb"), f.cores(base) if base else None, f.cores(peer)) if cores else None))

    p99_goal = ("<=", 1.5, "rtdb ≤ 1.5 ms")
    row(over, "durable writes, 1,000 keys at random: PUT vs SET (appendfsync always), throughput", "redis",
        "rate", f_rate, goal=(">=", 0.8), cores=True)
    row(over, "durable writes, 1,000 keys at random: PUT vs SET (appendfsync always), p99 latency", "redis",
        "p99", f_ms, absolute=p99_goal)
    row(new, "durable writes, new keys at random over 100,000: PUT vs SET (appendfsync always), throughput",
        "redis", "rate", f_rate, goal=(">=", 0.8), cores=True)
    row(new, "durable writes, new keys at random over 100,000: PUT vs SET (appendfsync always), p99 latency",
        "redis", "p99", f_ms, absolute=p99_goal)
    row(over, "durable writes, 1,000 keys at random: PUT vs etcd put (gRPC gateway), throughput", "etcd",
        "rate", f_rate, cores=True)
    row(over, "durable writes, 1,000 keys at random: PUT vs etcd put (gRPC gateway), p99 latency", "etcd",
        "p99", f_ms)
    res.notes.append(
        f"(w) every side writes the same {len(PUT_BODY)} bytes, {PUT_BODY}, to keys of {KEY_DIGITS} zero-padded "
        f"digits drawn at random (redis-benchmark's __rand_int__; wrk's Lua draws them the same way, each thread "
        f"seeded apart), from {CONNECTIONS} connections: rtdb serve PUT /items/KEY.json and Redis SET items:KEY "
        f"(KEY below {OVERWRITE_KEYS:,}, every one written before the warm-up: overwrites), and PUT /insertsR/KEY.json "
        f"and SET insertsR:KEY (KEY below {INSERT_KEYS:,}, R the round, so every run starts with none of its "
        f"keys: inserts, then more and more overwrites as the run fills the space); etcd: POST /v3/kv/put of "
        f"items/KEY below {OVERWRITE_KEYS:,} through its gRPC gateway. rtdb and etcd: wrk -t{THREADS} "
        f"-c{CONNECTIONS} -d{secs}s --latency with a Lua script; Redis: redis-benchmark -c {CONNECTIONS} "
        f"--threads {THREADS} -r SPACE -n N --csv SET PREFIX:__rand_int__ VALUE (N set so a run lasts about "
        f"{secs} s), with --appendonly yes --appendfsync always. Share of the insert runs' writes that made a "
        "new key (keys under the run's prefix afterwards ÷ requests answered, at most 100%), median: "
        + "; ".join(f"{k} {med(v):.0%}" for k, v in made.items())
        + ". Per-round req/s, 1,000 keys: " + figs[over].per_round() + "; new keys: " + figs[new].per_round())


def bench_reads(procs, res, cfg, servers, nginx, etcd, body):
    secs = cfg.seconds
    ns = f"/small.json?ns={READ_NAMESPACE}"
    etcd_get_lua = write_lua(procs.path("etcd-range.lua"),
                             f"wrk.method = \"POST\"\nwrk.body = '{json.dumps({'key': b64('small')})}'\n")
    for s in servers:
        wrk(procs, s.port, "/small.json", 1, None, "warm-up")
        wrk(procs, s.port, ns, 1, None, "warm-up")
    wrk(procs, nginx.port, "/small.json", 1, None, "warm-up")
    wrk(procs, etcd.port, "/v3/kv/range", 1, etcd_get_lua, "warm-up")

    plain, named = "/small.json", ns
    contenders = []
    for s in servers:
        contenders.append((plain, s.label, s.p.pid,
                           lambda r, s=s: wrk(procs, s.port, plain, secs, None, f"rtdb ({s.label}) GET")))
        contenders.append((named, s.label, s.p.pid,
                           lambda r, s=s: wrk(procs, s.port, named, secs, None, f"rtdb ({s.label}) GET ?ns=")))
    contenders.append((plain, "nginx", nginx.p.pid,
                       lambda r: wrk(procs, nginx.port, "/small.json", secs, None, "nginx read")))
    contenders.append((plain, "etcd", etcd.p.pid,
                       lambda r: wrk(procs, etcd.port, "/v3/kv/range", secs, etcd_get_lua, "etcd read")))
    figs = interleave(cfg, "r", contenders)
    note_socket_errors(res, "r", figs)
    # nginx is measured once a round, against both of rtdb's reads
    figs[named].runs["nginx"] = figs[plain].runs["nginx"]

    base = "baseline" if len(servers) > 1 else None
    unit = f"{CONNECTIONS} keep-alive connections, {secs} s × {cfg.rounds} rounds"

    def row(workload, title, peer, what, fmt, goal=None, cores=False):
        f = figs[workload]
        get = getattr(f, what)
        res.add(Row(title, peer, unit, fmt, get("rtdb"), get(base) if base else None, get(peer), goal=goal,
                    cores=(f.cores("rtdb"), f.cores(base) if base else None, f.cores(peer)) if cores else None))

    row(plain, f"small reads: GET /small.json ({len(body)} bytes) vs static file, throughput", "nginx", "rate",
        f_rate, goal=(">=", 0.9), cores=True)
    row(plain, "small reads: GET /small.json vs static file, p99 latency", "nginx", "p99", f_ms)
    row(named, f"small reads: GET {named} vs static file, throughput", "nginx", "rate", f_rate,
        goal=(">=", 0.9), cores=True)
    row(named, f"small reads: GET {named} vs static file, p99 latency", "nginx", "p99", f_ms)
    row(plain, "small reads: GET /small.json vs etcd range (gRPC gateway), throughput", "etcd", "rate", f_rate,
        cores=True)
    res.notes.append(f"(r) wrk -t{THREADS} -c{CONNECTIONS} -d{secs}s --latency for all; rtdb serve answers "
                     f"/small.json and {named} ({READ_NAMESPACE} names the one file serve was started on, "
                     f"which holds {body.decode()}); nginx serves those bytes as a file, worker_processes auto "
                     f"({nginx.workers()} workers here) as Debian ships it, no access log, one run a round "
                     "compared with both of rtdb's reads; etcd answers POST /v3/kv/range of one key holding the "
                     "same bytes (linearizable, its default). Per-round req/s, /small.json: "
                     + figs[plain].per_round() + f"; {named}: "
                     + "; ".join(f"{k} " + "/".join(f"{x.rate:,.0f}" for x in v)
                                 for k, v in figs[named].runs.items() if k != "nginx"))


def bench_serve(procs, res, cfg, bins, writes, reads):
    small = {"name": "Ada", "age": 36}
    servers = []
    for label, binary in bins:
        db = procs.path(f"serve-{label}.db")
        procs.run([binary, "--db", db, "set", "/small", json.dumps(small), "-q"])
        servers.append(RtdbServer(procs, label, binary, db).start())
    body = http_call(servers[0].port, "GET", "/small.json")
    for s in servers:
        got = http_call(s.port, "GET", f"/small.json?ns={READ_NAMESPACE}")
        if got != body:
            raise BenchError(f"rtdb serve ({s.label}): /small.json?ns={READ_NAMESPACE} is {got!r}, not {body!r}")
    redis = Redis(procs).start() if writes else None
    nginx = Nginx(procs, {"small.json": body}).start() if reads else None
    etcd = Etcd(procs).start()
    etcd.etcdctl("put", "small", body.decode())
    try:
        if writes:
            bench_writes(procs, res, cfg, servers, redis, etcd)
        if reads:
            bench_reads(procs, res, cfg, servers, nginx, etcd, body)
    finally:
        for s in servers + [x for x in (redis, nginx, etcd) if x]:
            s.stop()
    res.notes.append("(w/r) cores: the CPU time (user + system, all threads, from /proc/PID/stat) the server's "
                     "processes used during the load (for nginx its master and workers) ÷ the load's duration, "
                     f"median over the rounds; the load generators ran on the same {os.cpu_count()} cores")


# ---------------------------------------------------------------------------------------------
# f: one write to 1,000 subscribers

def bench_fanout(procs, res, cfg, bins):
    targets = [FanRtdb(procs, label, binary) for label, binary in bins] + [FanRedis(procs), FanEtcd(procs)]
    slow = {t.label: [] for t in targets}
    mid = {t.label: [] for t in targets}
    grow = {t.label: [] for t in targets}
    for r in range(cfg.rounds):
        for t in targets:
            s, spread, g = fanout_once(t, SUBSCRIBERS, cfg.fan_writes)
            slow[t.label].append(med(s))
            mid[t.label].append(med([p50 for _, p50 in spread]))
            grow[t.label].append(g / SUBSCRIBERS)
        log(f"(f) round {r + 1}: " + ", ".join(f"{k} slowest {slow[k][-1]:.2f} ms, {grow[k][-1]:.1f} KB/subscriber"
                                               for k in slow))
    base = "baseline" if len(bins) > 1 else None
    unit = f"{SUBSCRIBERS:,} subscribers, median of {cfg.fan_writes} writes × {cfg.rounds} rounds"
    for peer, goal in (("redis", ("<=", 1.0)), ("etcd", None)):
        what = "pub/sub" if peer == "redis" else "watch"
        res.add(Row(f"fan-out: one write → slowest subscriber, SSE vs {what}", peer, unit, f_ms,
                    med(slow["rtdb"]), med(slow[base]) if base else None, med(slow[peer]), goal=goal))
        res.add(Row(f"fan-out: server RSS growth per subscriber, SSE vs {what}", peer,
                    f"{SUBSCRIBERS:,} subscribers", f_kb, med(grow["rtdb"]), med(grow[base]) if base else None,
                    med(grow[peer]), goal=goal))
    res.notes.append(f"(f) each round starts each server afresh, reads its RSS (/proc/PID/status VmRSS), opens "
                     f"{SUBSCRIBERS:,} subscribers (rtdb: SSE GET /live.json; Redis: SUBSCRIBE live; etcd: POST "
                     "/v3/watch through the gRPC gateway), sends one write at a time from another connection (rtdb "
                     "PUT /live.json, durable; Redis PUBLISH, not stored; etcd put, durable) and times it until "
                     "the last subscriber has it; the RSS is read again after the writes. The subscribers are "
                     "read by one Python epoll loop, so each delay includes reading the other 999 sockets first. "
                     "Per-round slowest (ms): " + "; ".join(f"{k} " + "/".join(f"{x:.2f}" for x in v)
                                                          for k, v in slow.items())
                     + ". The median subscriber's delay (median over the writes and rounds): "
                     + "; ".join(f"{k} {med(v):.2f} ms" for k, v in mid.items())
                     + ". Per-round KB per subscriber: " + "; ".join(f"{k} " + "/".join(f"{x:.1f}" for x in v)
                                                                     for k, v in grow.items()))


# ---------------------------------------------------------------------------------------------

def version(text):
    """The first dotted version number in a tool's version line."""
    m = re.search(r"\d+\.\d+(\.\d+)?", text)
    return m.group(0) if m else text


def versions(rtdb):
    def first(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return ((p.stdout or "") + (p.stderr or "")).strip().splitlines()[0]
        except Exception:
            return "?"
    host = describe()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": f"{os.cpu_count()} cores, {host['cpu']}, {host['mem']}, {host['os']}, kernel {host['kernel']}",
        "rtdb": first([rtdb, "--version"]),
        "peers": ", ".join(f"{name} {version(first(cmd))}" for name, cmd in (
            ("Redis", ["redis-server", "--version"]), ("etcd", ["etcd", "--version"]),
            ("nginx", ["nginx", "-v"]), ("sqlite3", ["sqlite3", "--version"]))),
        "tools": ", ".join([first(["wrk", "-v"]).split(" [")[0], first(["hyperfine", "--version"]),
                            first(["valgrind", "--version"]), "Python " + platform.python_version()]),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rtdb")
    ap.add_argument("work")
    ap.add_argument("--baseline", help="a second rtdb binary, measured in the same rounds")
    ap.add_argument("--quick", action="store_true", help="one round, 1 s per load")
    ap.add_argument("--only", default="gwrf", help="subset of g (get), w (writes), r (reads), f (fan-out)")
    ap.add_argument("--markdown", help="also write the machine, the table and the notes as Markdown here")
    args = ap.parse_args()

    class Cfg:
        rounds = 1 if args.quick else 5
        seconds = 1 if args.quick else 5
        get_runs = 10 if args.quick else 50
        fan_writes = 3 if args.quick else 10
    bins = [("rtdb", os.path.abspath(args.rtdb))]
    if args.baseline:
        bins.append(("baseline", os.path.abspath(args.baseline)))
    procs = Procs(args.work)

    def on_signal(sig, _frame):
        procs.stop_all()
        sys.exit(130)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4 * SUBSCRIBERS:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8 * SUBSCRIBERS), hard))

    info = versions(bins[0][1])
    if args.baseline:
        info["rtdb baseline"] = versions(bins[1][1])["rtdb"] + f" ({bins[1][1]})"
    info["rtdb"] += f" ({bins[0][1]})"
    load0 = loadavg()
    res = Results(has_base=len(bins) > 1)
    started = time.monotonic()
    failed = None
    try:
        if "g" in args.only:
            log("(g) one-shot get vs sqlite3")
            bench_get(procs, res, Cfg, bins)
        if "w" in args.only or "r" in args.only:
            log("(w/r) durable writes and small reads")
            bench_serve(procs, res, Cfg, bins, "w" in args.only, "r" in args.only)
        if "f" in args.only:
            log("(f) fan-out to 1,000 subscribers")
            bench_fanout(procs, res, Cfg, bins)
    except BenchError as e:
        failed = str(e)
    finally:
        procs.stop_all()
    load1 = loadavg()
    total = time.monotonic() - started
    info["load average (1, 5, 15 min)"] = f"{load0} before, {load1} after"
    info["run"] = (f"{Cfg.rounds} round(s), {Cfg.seconds} s per load, {total:.0f} s in all"
                   + (" (PEERS_QUICK)" if args.quick else ""))

    print()
    for k, v in info.items():
        print(f"{k}: {v}")
    print()
    print(res.table())
    print()
    for n in res.notes:
        print("note: " + n)
    goals = [r.ok() for r in res.rows if r.ok() is not None]
    print(f"\n{sum(1 for g in goals if g)} of {len(goals)} goals pass (rtdb); run took {total:.0f} s")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in info.items()) + "\n\n")
            f.write(res.table(markdown=True) + "\n\n" + "\n".join(f"- {n}" for n in res.notes) + "\n")
    if failed:
        print(f"\nharness error: {failed}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
