#!/usr/bin/env bash
# rtdb against the tools people would use instead: sqlite3, Redis, nginx and etcd, on loopback.
#
#   benchmarks/peers.sh [path/to/rtdb]
#
# Without an argument (or RTDB_BIN), builds a release binary into .build-bench, as run.sh does.
# Installs what it needs from Debian when it is missing (apt-get update first, only then; sudo
# only when not root). Every server listens on a free loopback port with its files in a fresh
# temp dir that is removed on exit; every process started is stopped by its own PID on exit,
# Ctrl-C or TERM (other Redis, nginx, etcd or rtdb processes on the machine are left alone).
# Rounds alternate rtdb and each peer; figures are medians over the rounds. Prints a table with
# rtdb ÷ peer ratios, the cores each server used during each load (its CPU time, user + system,
# from /proc, ÷ the load's duration), the goals (PASS/FAIL) and the load average before and after.
# Exit status: 0 the run completed (whether or not the goals pass), 2 harness error or time-out.
#
# What it measures (32 connections for every server load):
#   g  one-shot `rtdb get` of one leaf vs `sqlite3 FILE` selecting the same row
#   w  durable writes of the same 22 bytes to keys drawn at random, the same on both sides:
#      over 1,000 keys, all present (overwrites: rtdb PUT /items/KEY.json, Redis SET items:KEY,
#      etcd put items/KEY), and over 100,000 keys under a prefix new to each run (inserts: PUT
#      /insertsR/KEY.json, SET insertsR:KEY); Redis with appendfsync always; throughput and p99
#   r  small reads: rtdb GET /small.json and /small.json?ns=bench vs nginx serving the same bytes
#      as a file (worker_processes auto, as Debian ships it) and vs etcd range
#   f  one write fanned out to 1,000 subscribers: SSE vs Redis pub/sub vs etcd watches
#
# Environment:
#   RTDB_BIN=FILE        the rtdb binary to measure (the argument wins)
#   RTDB_BASELINE=FILE   a second rtdb binary measured in the same rounds, as another column
#   PEERS_QUICK=1        smoke run: one round, 1 s per load, fewer runs (about 30 s)
#   PEERS_ONLY=gwrf      run only some parts (the letters above)
#   PEERS_MARKDOWN=FILE  also write the machine, the table and the notes as Markdown to FILE
#   TMPDIR               where the temp dir goes (default /tmp)
#
# A full run (5 rounds, 5 s per load) takes about 5 minutes on a 2-core machine and is stopped
# after 15 at most.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

# --- tools: command → Debian package -------------------------------------------------------
declare -A package=(
    [redis-server]=redis-server [redis-benchmark]=redis-tools [redis-cli]=redis-tools
    [etcd]=etcd-server [etcdctl]=etcd-client
    [nginx]=nginx [wrk]=wrk [sqlite3]=sqlite3 [valgrind]=valgrind
    [hyperfine]=hyperfine [python3]=python3
)
missing=()
for tool in "${!package[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("${package[$tool]}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    echo "peers.sh: installing from Debian: ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq >&2 || { echo "peers.sh: apt-get update failed" >&2; exit 2; }
    # Where systemd runs, Debian's postinst starts the packages' own services on their default
    # ports; this benchmark never talks to those, it starts its own on free ports.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 \
        || { echo "peers.sh: apt-get install ${missing[*]} failed" >&2; exit 2; }
fi
for tool in "${!package[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "peers.sh: $tool is still missing" >&2; exit 2; }
done

# --- the binaries ----------------------------------------------------------------------------
rtdb="${1:-${RTDB_BIN:-}}"
if [[ -z "$rtdb" ]]; then
    echo "peers.sh: building release binary into .build-bench ..." >&2
    (cd "$root" && swift build -c release --static-swift-stdlib --scratch-path .build-bench >&2) \
        || { echo "peers.sh: the build failed" >&2; exit 2; }
    rtdb="$root/.build-bench/release/rtdb"
fi
[[ -x "$rtdb" ]] || { echo "peers.sh: $rtdb is not an executable" >&2; exit 2; }
args=("$rtdb")
if [[ -n "${RTDB_BASELINE:-}" ]]; then
    [[ -x "$RTDB_BASELINE" ]] || { echo "peers.sh: RTDB_BASELINE=$RTDB_BASELINE is not an executable" >&2; exit 2; }
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/rtdb-peers.XXXXXX")"
harness_grace=50
# shellcheck source=harness.sh
source "$here/harness.sh"

args+=("$work" --only "${PEERS_ONLY:-gwrf}")
[[ -n "${RTDB_BASELINE:-}" ]] && args+=(--baseline "$RTDB_BASELINE")
[[ -n "${PEERS_MARKDOWN:-}" ]] && args+=(--markdown "$PEERS_MARKDOWN")
bound=900
if [[ "${PEERS_QUICK:-0}" != 0 ]]; then
    args+=(--quick)
    bound=300
fi

# Overall bound: `timeout` stops the harness whatever happens (it forwards TERM; the harness
# then stops its servers, and the trap above stops any it could not). In the background, so
# that the traps fire at once on INT/TERM.
timeout --signal=TERM --kill-after=15 "$bound" python3 -u "$here/peers_bench.py" "${args[@]}" &
harness=$!
status=0
wait "$harness" || status=$?
harness=""
case "$status" in
    0) exit 0 ;;
    124|137) echo "peers.sh: stopped after $bound s" >&2; exit 2 ;;
    130) exit 130 ;;
    *) exit 2 ;;
esac
