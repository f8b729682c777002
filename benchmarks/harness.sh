# Sourced by run.sh and peers.sh once they have made their temp dir `$work`: on exit, Ctrl-C
# or TERM, stops the Python harness (its PID in `$harness` while it runs: TERM, then KILL after
# `harness_grace` checks 0.2 s apart) and every process it listed in `$work/pids`, one PID a
# line (TERM, then KILL), by PID only, then removes `$work`.
harness=""
harness_grace=${harness_grace:-10}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n "$harness" ]] && kill -0 "$harness" 2>/dev/null; then
        kill -TERM "$harness" 2>/dev/null || true
        for _ in $(seq "$harness_grace"); do kill -0 "$harness" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$harness" 2>/dev/null || true
    fi
    if [[ -f "$work/pids" ]]; then
        while read -r pid; do
            [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null || true
        done < "$work/pids"
        sleep 0.5
        while read -r pid; do
            [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null || true
        done < "$work/pids"
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
