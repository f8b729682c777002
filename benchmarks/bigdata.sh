#!/bin/sh
# Big-data figures for BENCHMARKS.md: a 1 GB import and export on the database file beside
# jq and Python's json module in the same run (time and peak memory by GNU time), then a
# 300 MB export and a chunked import through --url against rtdb serve with small limits, with
# the number of requests each used (counted from serve --log).
#
# usage: benchmarks/bigdata.sh [RTDB_BINARY]     (default .build/release/rtdb)
# env:   BIGDATA_DIR   work folder (default /tmp/rtdb-bigdata; needs about 8 GB free)
#        BIGDATA_SIZE  bytes of the large document (default 1000000000)
#        REMOTE_SIZE   bytes of the document read and written through --url (default 300000000)
#        BIGDATA_PARTS "local remote" (default), or one of them
set -eu

here=$(cd "$(dirname "$0")" && pwd)
rtdb=${1:-$here/../.build/release/rtdb}
rtdb=$(cd "$(dirname "$rtdb")" && pwd)/$(basename "$rtdb")
dir=${BIGDATA_DIR:-/tmp/rtdb-bigdata}
size=${BIGDATA_SIZE:-1000000000}
rsize=${REMOTE_SIZE:-300000000}
parts=${BIGDATA_PARTS:-local remote}
timer=/usr/bin/time
mkdir -p "$dir"
cd "$dir"

for tool in jq python3 "$timer"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "bigdata.sh: $tool is needed" >&2; exit 1; }
done

case " $parts " in *" local "*)
    [ -s doc.json ] && [ "$(stat -c %s doc.json)" -ge "$((size - 100))" ] || python3 "$here/bigdata_gen.py" "$size" doc.json ;;
esac
case " $parts " in *" remote "*)
    [ -s remote.json ] && [ "$(stat -c %s remote.json)" -ge "$((rsize - 100))" ] || python3 "$here/bigdata_gen.py" "$rsize" remote.json ;;
esac

# One measured run: prints "seconds peak-MiB" of COMMAND (its stdout goes to /dev/null), or
# "failed -" when it fails (its error is kept in measure.err).
measure() {
    if "$timer" -f "%e %M" -o measure.out "$@" > /dev/null 2> measure.err; then
        awk '{ printf "%s %.0f\n", $1, $2 / 1024 }' measure.out
    else
        echo "failed -"
        cat measure.err >&2
    fi
}

row() { printf '| %s | %s s | %s MiB |%s\n' "$1" "$2" "$3" "${4:-}"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | time | peak memory | requests |"
echo "|---|---|---|---|"

case " $parts " in *" local "*)
echo "(1 GB document: $(stat -c %s doc.json) bytes)" >&2
set -- $(measure jq -c . doc.json); row "jq -c . (1 GB)" "$1" "$2"
set -- $(measure python3 -c 'import json, sys; json.load(open(sys.argv[1]))' doc.json); row "python3 json.load (1 GB)" "$1" "$2"
rm -f import.db import.db-wal import.db-shm
set -- $(measure "$rtdb" --db import.db set / --file doc.json -q); row "rtdb set / --file (1 GB, one transaction)" "$1" "$2"
set -- $(measure "$rtdb" --db import.db get /); row "rtdb get / (export of 1 GB)" "$1" "$2"
set -- $(measure "$rtdb" --db import.db get / --export); row "rtdb get / --export" "$1" "$2"
set -- $(measure python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1])), sys.stdout, separators=(",", ":"))' doc.json)
row "python3 json.load + json.dump (1 GB)" "$1" "$2"
echo "(database file: $(stat -c %s import.db) bytes)" >&2
rm -f import.db import.db-wal import.db-shm
;; esac

case " $parts " in *" remote "*)
# Through --url: a server with a 16 MB answer limit and 4 MiB writes.
rm -f served.db served.db-wal served.db-shm
"$rtdb" --db served.db set / --file remote.json -q
"$rtdb" --db served.db serve --port 0 --max-response-bytes 16000000 --max-write-bytes 4194304 --log \
    > serve.out 2> serve.log &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
# The listening line names the port the system chose.
tries=0
until grep -q '"url"' serve.out 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 300 ] || { echo "bigdata.sh: rtdb serve did not start" >&2; cat serve.log >&2; exit 2; }
    sleep 0.1
done
url="$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' serve.out | head -1)?ns=bench"
before=$(wc -l < serve.log)
set -- $(measure "$rtdb" --url "$url" get /); after=$(wc -l < serve.log)
row "rtdb get / --url (300 MB, answers of at most 16 MB)" "$1" "$2" " $((after - before)) |"
before=$after
set -- $(measure "$rtdb" --url "$url" get / --export); after=$(wc -l < serve.log)
row "rtdb get / --export --url" "$1" "$2" " $((after - before)) |"
before=$after
set -- $(measure "$rtdb" --url "$url" set /copy --file remote.json --chunked); after=$(wc -l < serve.log)
row "rtdb set /copy --chunked --url (300 MB, 1 MiB chunks, 4 MiB writes)" "$1" "$2" " $((after - before)) |"
kill "$server"
wait "$server" 2>/dev/null || true
trap - EXIT
rm -f served.db served.db-wal served.db-shm
;; esac
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
