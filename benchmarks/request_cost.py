#!/usr/bin/env python3
"""Instructions per request of `rtdb serve`, counted by callgrind: repeatable whatever else the
machine is doing, so two binaries can be compared on a busy machine.

    python3 benchmarks/request_cost.py RTDB [BASELINE_RTDB] [--requests N]

For each binary it runs `rtdb serve` under `valgrind --tool=callgrind` twice, once answering a
few requests and once N more, on one kept-alive connection, and reports the difference divided
by N: the cost of one request with start-up and shut-down taken out. Workloads: a small GET
(`/small.json`), the same with `?ns=`, a small durable PUT (the same key again and again, a
new key under `/items` each time, and a new key each time in a list of 500 children that grows
with them, in a file past the 64 KiB from which sizes are stored), and the GET and PUT of run.sh's
rules goal (rules_bench.py: 50 rules, a signed-in user's unsigned ID token decoded on every
request). Prints a Markdown table.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rules_bench  # noqa: E402

TOKEN = rules_bench.mock_token("bench")
# A file past the 64 KiB at which `sizes` stores a node's count (so writes keep it), holding a
# list of 500 children, about 15 KiB, that the inserts below grow.
LARGE_FILE = [("/filler", json.dumps("x" * 70_000)),
              ("/list", json.dumps({f"k{i:06d}": {"n": i, "text": "hello"} for i in range(500)}))]
# (label, method, target, body, with the 50 rules, what the file holds besides /small);
# `{n}` in a target is the request's number, so that each request writes a key of its own.
WORKLOADS = [
    ("GET /small.json", "GET", "/small.json", None, False, []),
    ("GET /small.json?ns=bench", "GET", "/small.json?ns=bench", None, False, []),
    ("PUT /w.json (durable)", "PUT", "/w.json", b'{"n":1}', False, []),
    ("PUT /items/kN.json (durable, a new key each time)", "PUT", "/items/k{n}.json", b'{"n":1}', False, []),
    ("PUT /list/nN.json (durable, a new key each time, into a list of 500+ in a file past 64 KiB)",
     "PUT", "/list/n{n}.json", b'{"n":1,"text":"hello"}', False, LARGE_FILE),
    ("GET /small.json, 50 rules, signed in", "GET", "/small.json?auth=" + TOKEN, None, True, []),
    ("PUT /items/k1.json, 50 rules, signed in", "PUT", "/items/k1.json?auth=" + TOKEN,
     b'{"n":1,"text":"hi","owner":"bench"}', True, []),
]
FEW = 20


def serve_and_count(rtdb, workdir, method, target, body, requests, rules, seed):
    """Total instructions of one serve run that answers FEW + requests requests."""
    db = os.path.join(workdir, "cost.db")
    for leftover in (db, db + "-wal", db + "-shm"):
        if os.path.exists(leftover):
            os.remove(leftover)
    subprocess.run([rtdb, "--db", db, "set", "/small", '{"a":1,"b":"two"}', "-q"], check=True)
    for path, value in seed:
        subprocess.run([rtdb, "--db", db, "set", path, "-", "-q"], input=value, text=True, check=True)
    out_file = os.path.join(workdir, "callgrind.out")
    extra = []
    if rules:
        rules_file = os.path.join(workdir, "rules.json")
        with open(rules_file, "w") as f:
            json.dump(rules_bench.rules_document(), f)
        extra = ["--rules", rules_file]
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                             rtdb, "--db", db, "serve", "--port", "0"] + extra,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = json.loads(line)["url"]
        host, port = url.split("//")[1].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for n in range(FEW + requests):
            conn.request(method, target.replace("{n}", str(n)), body=body)
            answer = conn.getresponse()
            answer.read()
            if answer.status != 200:
                raise SystemExit(f"{method} {target}: {answer.status}")
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    with open(out_file) as f:
        text = f.read()
    found = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    if not found:
        raise SystemExit("no totals in the callgrind output")
    return int(found.group(1))


def per_request(rtdb, workdir, method, target, body, requests, rules, seed):
    few = serve_and_count(rtdb, workdir, method, target, body, 0, rules, seed)
    many = serve_and_count(rtdb, workdir, method, target, body, requests, rules, seed)
    return (many - few) / requests


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rtdb")
    parser.add_argument("baseline", nargs="?")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--only", metavar="TEXT", help="only the workloads whose label contains TEXT")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("request_cost.py: valgrind is needed (apt-get install valgrind)")
    binaries = [("rtdb", os.path.abspath(args.rtdb))]
    if args.baseline:
        binaries.append(("baseline", os.path.abspath(args.baseline)))
    workdir = tempfile.mkdtemp(prefix="rtdb-cost-")
    try:
        print(f"Instructions per request (callgrind Ir, {args.requests} requests on one connection, "
              f"start-up taken out), {time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.2f}")
        print()
        header = "| request | " + " | ".join(name for name, _ in binaries) + (" | ratio |" if args.baseline else " |")
        print(header)
        print("|" + "---|" * (len(binaries) + 1 + (1 if args.baseline else 0)))
        for label, method, target, body, rules, seed in WORKLOADS:
            if args.only and args.only not in label:
                continue
            costs = [per_request(path, workdir, method, target, body, args.requests, rules, seed)
                     for _, path in binaries]
            cells = " | ".join(f"{c:,.0f}" for c in costs)
            ratio = f" | {costs[0] / costs[1]:.3f}× |" if args.baseline else " |"
            print(f"| {label} | {cells}{ratio}")
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
