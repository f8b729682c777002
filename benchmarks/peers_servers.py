"""Processes, servers and load generators of benchmarks/peers.sh (used by peers_bench.py and
peers_fanout.py).

Every process is started through Procs, which lists its PID in WORK/pids, sends its output to
WORK/NAME.log and stops it by PID; every server listens on a free loopback port with its files
in a folder of WORK. `measure` runs one load and reads, from /proc, the CPU time the server's
processes spent meanwhile.
"""
import base64
import http.client
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
OVERWRITE_KEYS = 1000     # the overwrite load: keys at random over this many (all there after its warm-up)
INSERT_KEYS = 100_000     # the insert load: keys at random over this many, under a prefix new to every run
KEY_DIGITS = 12           # redis-benchmark writes __rand_int__ as 12 zero-padded digits; rtdb's keys match
PUT_BODY = '{"n":1,"text":"hello"}'   # 22 bytes, the value every durable write stores, on every side


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


CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_tree(pid):
    """`pid` and its descendants as /proc lists them now (nginx's workers are its master's
    children; a process's threads are counted in its own /proc/PID/stat)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def cpu_seconds(pids):
    """User plus system CPU time of these processes so far, all their threads included."""
    ticks = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                # after the command name (which may hold spaces and parentheses) come the fields
                # from the 3rd on: utime and stime are the 14th and 15th
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks / CLK_TCK


class Load:
    """What one run of a load generator reports: requests per second, p99 latency (ms), how
    many requests in how long (s), and socket errors (text, empty when none)."""

    def __init__(self, rate, p99, requests, seconds, errors=""):
        self.rate, self.p99, self.requests, self.seconds, self.errors = rate, p99, requests, seconds, errors
        self.cores = None


def measure(server_pid, run):
    """Runs `run()` (a Load) and sets its `cores`: the CPU time the server's processes used
    meanwhile divided by the load's own duration (as the load generator reports it, so that
    its start-up, when the server idles, does not dilute the figure)."""
    pids = process_tree(server_pid)
    before = cpu_seconds(pids)
    load = run()
    load.cores = (cpu_seconds(pids) - before) / load.seconds if load.seconds > 0 else None
    return load


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
        # One worker per core, as Debian's nginx.conf has it: what users run. No access log: rtdb
        # serve logs nothing without --log. keepalive_requests raised from its default 1,000,
        # since rtdb serve never closes a kept-alive connection on its own.
        conf = f"""{'user root;' if os.geteuid() == 0 else ''}
worker_processes auto;
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
        # The port takes connections once the master listens, before it has forked its workers:
        # wait for an answer (a worker gave it) and for the number of workers to hold still.
        # Then list them, so that a trap can stop them by PID.
        answered, workers, deadline = False, [], time.monotonic() + 10
        while time.monotonic() < deadline:
            if not answered:
                try:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                    c.request("GET", "/")
                    c.getresponse().read()
                    c.close()
                    answered = True
                except (OSError, http.client.HTTPException):
                    pass
            now = process_tree(self.p.pid)[1:]
            if answered and now and now == workers:
                break
            workers = now
            time.sleep(0.2)
        else:
            raise BenchError(f"nginx did not answer with its workers started within 10 s: {self.procs.tail('nginx')}")
        for pid in workers:
            self.procs.note_pid(pid)
        return self

    def workers(self):
        return len(process_tree(self.p.pid)) - 1

    def stop(self):
        self.procs.stop(self.p)


# ---------------------------------------------------------------------------------------------
# load generators

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}


def parse_wrk(out):
    rate = p99 = requests = seconds = None
    non2xx = 0
    sock_errors = ""
    for line in out.splitlines():
        s = line.strip()
        m = re.match(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", s)
        if m:
            requests, seconds = int(m.group(1)), float(m.group(2)) * UNITS[m.group(3)] / 1000
        elif s.startswith("Requests/sec:"):
            rate = float(s.split()[1])
        elif s.startswith("99%"):
            m = re.match(r"99%\s+([\d.]+)(us|ms|s|m)$", s)
            if m:
                p99 = float(m.group(1)) * UNITS[m.group(2)]
        elif s.startswith("Non-2xx"):
            non2xx = int(s.split()[-1])
        elif s.startswith("Socket errors"):
            sock_errors = s
    return rate, p99, requests, seconds, non2xx, sock_errors


def wrk(procs, port, path, seconds, script=None, what="", script_args=()):
    cmd = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    if script:
        cmd += ["-s", script]
    cmd.append(f"http://127.0.0.1:{port}{path}")
    if script_args:
        cmd += ["--", *map(str, script_args)]
    out = procs.run(cmd, timeout=seconds + 60)
    rate, p99, requests, secs, non2xx, sock_errors = parse_wrk(out)
    if rate is None or p99 is None or not secs:
        raise BenchError(f"wrk printed no rate, p99 or duration for {what}: {out[-400:]}")
    if non2xx:
        raise BenchError(f"wrk: {non2xx} answers to {what} were not 2xx")
    return Load(rate, p99, requests, secs, sock_errors)


def random_put_lua(path):
    """A wrk script of PUTs of PUT_BODY to /PREFIX/KEY.json, KEY at random below SPACE with
    KEY_DIGITS zero-padded digits, as redis-benchmark's __rand_int__ (PREFIX and SPACE are the
    script's arguments). Each wrk thread seeds its own generator: with the default seed, both
    would write the same keys in the same order."""
    return write_lua(path, f"""wrk.method = "PUT"
wrk.body = '{PUT_BODY}'
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end
local prefix, space
function init(args)
  prefix, space = args[1], tonumber(args[2])
  math.randomseed(os.time() * 1000 + thread_number)
end
function request()
  return wrk.format(nil, string.format("/%s/%0{KEY_DIGITS}d.json", prefix, math.random(0, space - 1)))
end
""")


def redis_benchmark(procs, port, n, prefix, space):
    """n SETs of PUT_BODY (the bytes rtdb's PUTs store) to PREFIX:KEY, KEY at random below
    SPACE (redis-benchmark's __rand_int__, 12 digits), from CONNECTIONS clients."""
    out = procs.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(CONNECTIONS),
                     "--threads", str(THREADS), "-n", str(n), "-r", str(space), "--csv",
                     "SET", f"{prefix}:__rand_int__", PUT_BODY], timeout=300)
    # The first column names the command with its arguments, PUT_BODY's quotes unescaped, so
    # the line is split from the right, into as many figures as the header names.
    head = next((x for x in out.splitlines() if x.startswith('"test",')), None)
    lines = [x for x in out.splitlines() if x.startswith('"SET ')]
    if not head or not lines:
        raise BenchError(f"redis-benchmark printed no header or no SET line: {out[-400:]}")
    names = [c.strip('"') for c in head.split(",")[1:]]
    row = dict(zip(names, (c.strip('"') for c in lines[-1].rsplit(",", len(names))[1:])))
    try:
        rate, p99 = float(row["rps"]), float(row["p99_latency_ms"])
    except (KeyError, ValueError):
        raise BenchError(f"redis-benchmark printed no rps or p99_latency_ms: {out[-400:]}")
    return Load(rate, p99, n, n / rate if rate else 0)


def redis_prefix_keys(procs, port, prefix):
    """How many keys Redis holds under PREFIX: (SCAN, not KEYS, as one should on a live server)."""
    out = procs.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--scan", "--pattern", f"{prefix}:*"])
    return len(out.split())


def write_lua(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def b64(s):
    return base64.b64encode(s.encode()).decode()
