#!/bin/sh
# Big reads against rtdb serve: a 300 MB database (bigdata_gen.py) served with the default
# 256 MiB answer limit. Measures how long `GET /.json` takes to be refused, how long one-leaf
# GETs wait meanwhile, a walked `rtdb --url … get /` with the default --timeout (time, peak
# memory, requests counted from serve --log), and the same probes while /posts (about half the
# document, within the limit) is rendered and sent whole.
#
# usage: benchmarks/big-reads.sh [RTDB_BINARY]     (default .build/release/rtdb)
# env:   BIGREADS_DIR   work folder (default /tmp/rtdb-big-reads; needs about 2 GB free)
#        BIGREADS_SIZE  bytes of the document (default 300000000)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
rtdb=${1:-$here/../.build/release/rtdb}
rtdb=$(cd "$(dirname "$rtdb")" && pwd)/$(basename "$rtdb")
dir=${BIGREADS_DIR:-/tmp/rtdb-big-reads}
size=${BIGREADS_SIZE:-300000000}
timer=/usr/bin/time
mkdir -p "$dir"
cd "$dir"

for tool in curl python3 "$timer"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "big-reads.sh: $tool is needed" >&2; exit 1; }
done

[ -s doc.json ] && [ "$(stat -c %s doc.json)" -ge "$((size - 100))" ] || python3 "$here/bigdata_gen.py" "$size" doc.json
if [ ! -s served.db ]; then
    "$rtdb" --db served.db set / --file doc.json -q
    "$rtdb" --db served.db set /probe '"leaf"' -q
fi

servers=""
trap 'for p in $servers; do kill "$p" 2>/dev/null || true; done' EXIT

# Starts rtdb serve on served.db with ARGS; sets $url.
serve() {
    name=$1; shift
    rm -f "$name.out"
    "$rtdb" --db served.db serve --port 0 --log "$@" > "$name.out" 2> "$name.log" &
    servers="$servers $!"
    tries=0
    until grep -q '"url"' "$name.out" 2>/dev/null; do
        tries=$((tries + 1))
        [ "$tries" -lt 300 ] || { echo "big-reads.sh: rtdb serve did not start" >&2; cat "$name.log" >&2; exit 2; }
        sleep 0.1
    done
    url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$name.out" | head -1)
}

# One-leaf GETs every 50 ms until the file $1 exists; prints "count p50-ms max-ms".
probe_until() {
    : > probes.txt
    while [ ! -e "$1" ]; do
        curl -s -o /dev/null -w '%{time_total}\n' "$url/probe.json" >> probes.txt
        sleep 0.05
    done
    sort -n probes.txt | awk '{ v[NR] = $1 * 1000 } END { if (NR == 0) { print "0 - -"; exit }
        printf "%d %.1f %.1f\n", NR, v[int((NR + 1) / 2)], v[NR] }'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(document: $(stat -c %s doc.json) bytes; database file: $(stat -c %s served.db) bytes)"
echo

serve limited
curl -s -o /dev/null "$url/probe.json"    # the file opened
echo "| run | result | time | one-leaf GETs meanwhile (n, p50, max) |"
echo "|---|---|---|---|"
rm -f refused.done
{ curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$url/.json" > refused.txt; touch refused.done; } &
job=$!
set -- $(probe_until refused.done)
wait "$job" || true
read -r code secs < refused.txt
printf '| GET /.json (300 MB, limit 256 MiB) | %s | %.0f ms | %s, %s ms, %s ms |\n' "$code" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')" "$1" "$2" "$3"

# The walk with the default --timeout (10 s a page); its requests are the log's new lines
# less the probes'.
before=$(grep -c '"method"' limited.log || true)
rm -f walk.done
# (The status is caught with `if`: under `set -e` a failed walk would end the subshell before it
# wrote walk.done, and the probes would go on forever.)
{ if "$timer" -f "%e %M" -o walk.time "$rtdb" --url "$url" get / > walk.json 2> walk.err; then s=0; else s=$?; fi; echo "$s" > walk.done; } &
job=$!
set -- $(probe_until walk.done)
wait "$job" || true
if [ "$(cat walk.done)" = 0 ]; then status=ok; else status="failed: $(tail -c 200 walk.err)"; fi
read -r wsecs wkb < walk.time
requests=$(( $(grep -c '"method"' limited.log || true) - before - $1 ))
printf '| rtdb --url get / (walked, default --timeout) | %s, %s bytes, %s requests, peak %.0f MiB | %s s | %s, %s ms, %s ms |\n' \
    "$status" "$(stat -c %s walk.json)" "$requests" "$(awk -v k="$wkb" 'BEGIN { print k / 1024 }')" "$wsecs" "$1" "$2" "$3"

# A read within the limit: /posts, about half the document, rendered and sent whole.
rm -f whole.done
{ curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' "$url/posts.json" > whole.txt; touch whole.done; } &
job=$!
set -- $(probe_until whole.done)
wait "$job" || true
read -r code secs bytes < whole.txt
printf '| GET /posts.json (%s bytes, within the limit) | %s | %s s | %s, %s ms, %s ms |\n' "$bytes" "$code" "$secs" "$1" "$2" "$3"
