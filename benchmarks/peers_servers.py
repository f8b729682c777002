"""Processes, servers and load generators of benchmarks/peers.sh (used by peers_bench.py and
peers_fanout.py).

Every process is started through Procs, which lists its PID in WORK/pids, sends its output to
WORK/NAME.log and stops it by PID; every server listens on a free loopback port with its files
in a folder of WORK.
"""
import base64
import csv
import http.client
import io
import json
import os
import re
import select
import socket
import subprocess
import sys
import time

DEVNULL = subprocess.DEVNULL
CONNECTIONS = 32          # wrk -c and redis-benchmark -c
THREADS = 2               # wrk -t and redis-benchmark --threads
KEYS = 1000               # writes rotate over this many keys
PUT_BODY = '{"n":1,"text":"hello"}'   # 22 bytes, the value every durable write stores


class BenchError(Exception):
    pass


def log(msg):
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for PID {pid}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env():
    """The environment of every child: none of rtdb's own settings, so both rtdb binaries and
    the peers see the same variables."""
    drop = ("FIREBASE_DATABASE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS")
    return {k: v for k, v in os.environ.items() if not k.startswith("RTDB_") and k not in drop}


# ---------------------------------------------------------------------------------------------
# processes: every one started here is listed in WORK/pids and stopped by PID

class Procs:
    def __init__(self, work):
        self.work = work
        self.env = child_env()
        self.live = []
        self.pidfile = os.path.join(work, "pids")

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def note_pid(self, pid):
        with open(self.pidfile, "a") as f:
            f.write(f"{pid}\n")

    def run(self, cmd, timeout=120, capture=True, stdin=None):
        try:
            p = subprocess.run(cmd, stdin=stdin if stdin is not None else DEVNULL,
                               stdout=subprocess.PIPE if capture else DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout, env=self.env)
        except subprocess.TimeoutExpired:
            raise BenchError(f"timed out after {timeout} s: {' '.join(map(str, cmd))}")
        if p.returncode != 0:
            raise BenchError(f"exit {p.returncode}: {' '.join(map(str, cmd))}: "
                             f"{(p.stderr or b'').decode(errors='replace')[:400]}")
        return (p.stdout or b"").decode(errors="replace")

    def spawn(self, name, cmd, stdout_pipe=False):
        """Starts a server; its output goes to WORK/NAME.log (a pipe nobody reads would block it)."""
        logf = open(self.path(f"{name}.log"), "ab")
        p = subprocess.Popen(cmd, stdin=DEVNULL, stdout=subprocess.PIPE if stdout_pipe else logf,
                             stderr=logf, env=self.env, bufsize=0)
        logf.close()
        p.name = name
        self.live.append(p)
        self.note_pid(p.pid)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        if p.stdout:
            p.stdout.close()
        if p in self.live:
            self.live.remove(p)

    def stop_all(self):
        for p in list(self.live):
            try:
                self.stop(p)
            except Exception:
                pass

    def tail(self, name):
        try:
            with open(self.path(f"{name}.log"), "rb") as f:
                return f.read()[-400:].decode(errors="replace")
        except OSError:
            return ""


def wait_port(procs, p, port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise BenchError(f"{p.name} exited with {p.returncode}: {procs.tail(p.name)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"{p.name} did not listen on port {port} within {timeout} s")


def http_call(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if r.status >= 300:
            raise BenchError(f"{method} {path} on port {port}: HTTP {r.status}: {data[:200]!r}")
        return data
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------
# servers

class RtdbServer:
    def __init__(self, procs, label, binary, db):
        self.procs, self.label, self.binary, self.db = procs, label, binary, db

    def start(self):
        self.p = self.procs.spawn(f"serve-{self.label}", [self.binary, "--db", self.db, "serve", "--port", "0"],
                                  stdout_pipe=True)
        r, _, _ = select.select([self.p.stdout], [], [], 30)
        line = self.p.stdout.readline() if r else b""
        if not line:
            raise BenchError(f"rtdb serve ({self.label}) printed no listening line: {self.procs.tail(self.p.name)}")
        self.port = int(json.loads(line)["url"].rsplit(":", 1)[1])
        return self

    def stop(self):
        self.procs.stop(self.p)


class Redis:
    label = "redis"

    def __init__(self, procs):
        self.procs = procs

    def start(self):
        self.port = free_port()
        d = self.procs.path(f"redis-{self.port}")
        os.makedirs(d)
        self.p = self.procs.spawn("redis", [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", d,
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
            "--maxclients", "4000", "--logfile", ""])
        wait_port(self.procs, self.p, self.port)
        return self

    def stop(self):
        self.procs.stop(self.p)


class Etcd:
    label = "etcd"

    def __init__(self, procs):
        self.procs = procs

    def start(self):
        self.port, peer = free_port(), free_port()
        d = self.procs.path(f"etcd-{self.port}")
        cu, pu = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer}"
        self.p = self.procs.spawn("etcd", [
            "etcd", "--name", "bench", "--data-dir", d,
            "--listen-client-urls", cu, "--advertise-client-urls", cu,
            "--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
            "--initial-cluster", f"bench={pu}", "--initial-cluster-state", "new"])
        wait_port(self.procs, self.p, self.port)
        deadline = time.monotonic() + 30
        while True:   # the port opens before the member has elected itself leader
            try:
                if b'"true"' in http_call(self.port, "GET", "/health"):
                    break
            except (OSError, BenchError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"etcd not healthy within 30 s: {self.procs.tail('etcd')}")
            time.sleep(0.1)
        return self

    def etcdctl(self, *args):
        return self.procs.run(["etcdctl", "--endpoints", f"http://127.0.0.1:{self.port}", *args],
                              timeout=30)

    def stop(self):
        self.procs.stop(self.p)


class Nginx:
    label = "nginx"

    def __init__(self, procs, files):
        self.procs, self.files = procs, files

    def start(self):
        self.port = free_port()
        prefix = self.procs.path(f"nginx-{self.port}")
        www = os.path.join(prefix, "www")
        os.makedirs(www)
        for name, data in self.files.items():
            with open(os.path.join(www, name), "wb") as f:
                f.write(data)
        temps = "\n".join(f"  {k}_temp_path {prefix}/{k};" for k in
                          ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        # One worker: rtdb serve and Redis answer from one thread as well. No access log: rtdb
        # serve logs nothing without --log. keepalive_requests raised from its default 1,000,
        # since rtdb serve never closes a kept-alive connection on its own.
        conf = f"""{'user root;' if os.geteuid() == 0 else ''}
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  default_type application/json;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
{temps}
  server {{
    listen 127.0.0.1:{self.port};
    root {www};
  }}
}}
"""
        cf = os.path.join(prefix, "nginx.conf")
        with open(cf, "w") as f:
            f.write(conf)
        self.p = self.procs.spawn("nginx", ["nginx", "-p", prefix, "-c", cf, "-e", f"{prefix}/error.log"])
        wait_port(self.procs, self.p, self.port)
        # the worker is a child of the master: list it too, so that a trap can stop it by PID
        try:
            with open(f"/proc/{self.p.pid}/task/{self.p.pid}/children") as f:
                for pid in f.read().split():
                    self.procs.note_pid(int(pid))
        except OSError:
            pass
        return self

    def stop(self):
        self.procs.stop(self.p)


# ---------------------------------------------------------------------------------------------
# load generators

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}


def parse_wrk(out):
    rate = p99 = None
    non2xx = 0
    sock_errors = ""
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("Requests/sec:"):
            rate = float(s.split()[1])
        elif s.startswith("99%"):
            m = re.match(r"99%\s+([\d.]+)(us|ms|s|m)$", s)
            if m:
                p99 = float(m.group(1)) * UNITS[m.group(2)]
        elif s.startswith("Non-2xx"):
            non2xx = int(s.split()[-1])
        elif s.startswith("Socket errors"):
            sock_errors = s
    return rate, p99, non2xx, sock_errors


def wrk(procs, port, path, seconds, script=None, what=""):
    cmd = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = procs.run(cmd + [f"http://127.0.0.1:{port}{path}"], timeout=seconds + 60)
    rate, p99, non2xx, sock_errors = parse_wrk(out)
    if rate is None or p99 is None:
        raise BenchError(f"wrk printed no rate or p99 for {what}: {out[-400:]}")
    if non2xx:
        raise BenchError(f"wrk: {non2xx} answers to {what} were not 2xx")
    return rate, p99, sock_errors


def redis_benchmark(procs, port, n):
    out = procs.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(CONNECTIONS),
                     "--threads", str(THREADS), "-n", str(n), "-r", str(KEYS), "-d", str(len(PUT_BODY)),
                     "-t", "set", "--csv"], timeout=300)
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] == "SET"]
    if not rows:
        raise BenchError(f"redis-benchmark printed no SET line: {out[-400:]}")
    head = next(r for r in csv.reader(io.StringIO(out)) if r and r[0] == "test")
    row = dict(zip(head, rows[-1]))
    return float(row["rps"]), float(row["p99_latency_ms"])


def write_lua(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def b64(s):
    return base64.b64encode(s.encode()).decode()
