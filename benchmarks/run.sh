#!/usr/bin/env bash
# rtdb performance benchmarks.
#
#   benchmarks/run.sh [path/to/rtdb]
#
# Without an argument, builds a release binary into .build-bench (its own scratch dir) and uses it.
# Every data set is generated (with fixed seeds) in a fresh temp dir that is removed on exit.
# Prints a table: each figure with its goal and PASS/FAIL. Exit status: 0 all goals pass,
# 1 some goal fails, 2 harness error (a command failed or timed out).
#
# Environment:
#   BENCH_MARKDOWN=FILE   also write the machine description and the table as Markdown to FILE
#   BENCH_ONLY=abcdefghrkitwoluv run only these goals (default: all; g is rtdb serve and r its
#                         security rules, both need wrk; h is rtdb --url against rtdb serve, which
#                         needs curl; k key-ordered windows, i indexes; t tx under contention; w
#                         1,000 listens over rtdb serve's realtime protocol; o the offline cache of
#                         rtdb --url against rtdb serve; l a flood of 16,000 listens and u a 90 MB
#                         PUT against rtdb serve, each with another client's reads timed; v big
#                         writes (88 MB PUTs, with arrays, a 1,000,000-child PATCH) with a stream
#                         open elsewhere or on the written path, reads timed)
#   BENCH_IO_BACKEND=posix  run every rtdb with RTDB_IO_BACKEND=posix (poll(2) and the stat
#                         check, what macOS and the BSDs fall back to); e's goals become those of
#                         the portable back-end (commit → event p50 ≤ 20 ms, 100 idle watchers
#                         ≤ 2% of a core) and every measurement is labelled "posix:"
#   TMPDIR                where the temp dir goes (default /tmp); it needs ~1 GB free
#
# Needs python3, jq and sqlite3 on PATH. Takes about 3-4 minutes on a 2-core machine.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

for tool in python3 jq sqlite3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool is required" >&2; exit 2; }
done

if [[ $# -ge 1 ]]; then
    rtdb="$1"
else
    echo "run.sh: building release binary into .build-bench ..." >&2
    static=""
    [[ "$(uname -s)" == Linux ]] && static="--static-swift-stdlib"   # as make build does
    (cd "$root" && swift build -c release $static --scratch-path .build-bench >&2)
    rtdb="$root/.build-bench/release/rtdb"
fi
[[ -x "$rtdb" ]] || { echo "run.sh: $rtdb is not an executable" >&2; exit 2; }
rtdb="$(cd "$(dirname "$rtdb")" && pwd)/$(basename "$rtdb")"

work="$(mktemp -d "${TMPDIR:-/tmp}/rtdb-bench.XXXXXX")"
harness_grace=10
# shellcheck source=harness.sh
source "$here/harness.sh"

args=("$rtdb" "$work" --only "${BENCH_ONLY:-abcdefghrkitwoluv}" --io-backend "${BENCH_IO_BACKEND:-native}")
[[ -n "${BENCH_MARKDOWN:-}" ]] && args+=(--markdown "$BENCH_MARKDOWN")

# Overall bound: coreutils `timeout` stops the harness after 15 minutes whatever happens
# (it forwards TERM; the harness then stops its watchers). Run in the background so that the
# traps above fire at once on INT/TERM.
timeout --signal=TERM --kill-after=10 900 python3 -u "$here/bench.py" "${args[@]}" &
harness=$!
status=0
wait "$harness" || status=$?
harness=""
exit "$status"
