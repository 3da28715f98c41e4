#!/usr/bin/env bash
# Before/after of the second trust round (ended operations, sync watch, HTTP/2 pacing, checked stamps): two release binaries, alternated, each over
# 4 fresh folders (EC 2+2), `strata bench` at 16 concurrent clients. Usage: run.sh BEFORE AFTER
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
round() {
    local bin=$1 tag=$2
    local data port pid
    data=$(mktemp -d /tmp/bench-data.XXXX)
    port=$((20000 + RANDOM % 10000))
    STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
        "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$here/raw/$tag.server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
    for spec in "${SPECS[@]}"; do
        set -- $spec
        local name=$1; shift
        "$bin" bench "$@" --duration 8s --host "127.0.0.1:$port" --access-key benchadmin \
            --secret-key benchadmin-secret --concurrent 16 --json "$here/raw/$tag.$name.json" >/dev/null 2>&1
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
}
# ONLY=get-4KiB (or another name) runs that one alone, ROUNDS=N rounds (3), FIRST=K numbers
# them from K (1).
SPECS=("put-4KiB put --obj.size 4KiB" "get-4KiB get --obj.size 4KiB --objects 2000"
       "put-1MiB put --obj.size 1MiB" "get-1MiB get --obj.size 1MiB --objects 200")
if [ -n "${ONLY:-}" ]; then
    for s in "${SPECS[@]}"; do [ "${s%% *}" = "$ONLY" ] && SPECS=("$s") && break; done
fi
first=${FIRST:-1}
for r in $(seq "$first" $((first + ${ROUNDS:-3} - 1))); do
    round "$1" "before-r$r"
    round "$2" "after-r$r"
done
