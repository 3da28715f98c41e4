#!/usr/bin/env bash
# Pools on one server: what a second pool costs a small GET and PUT, and how fast a drain moves
# objects. Every run on fresh folders under target/, release build, 16 clients, 15 s a run.
#  1. "one": one pool of 4 folders (EC 2+2); "two": that pool and a second of 4 folders. Runs of
#     GET 4 KiB and PUT 4 KiB alternate between the two layouts, ROUNDS rounds.
#  2. Drain: N4K objects of 4 KiB and N1M of 1 MiB written into one pool, a second pool added,
#     then `strata admin pool decommission 0` timed until `drained` (not paced).
# Usage: docs/bench/2026-11-28-pools/run.sh OUTDIR [ROUNDS] [N4K] [N1M]   (STRATA_BIN: a release strata)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$1; rounds=${2:-2}; n4k=${3:-5000}; n1m=${4:-500}
mkdir -p "$out"
bin=${STRATA_BIN:-$root/target/release/strata}
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off
export STRATA_ADMIN_HOST STRATA_BENCH_ACCESS_KEY=benchadmin STRATA_BENCH_SECRET_KEY=benchadmin-secret
pid=; data=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; [ -n "$data" ] && rm -rf "$data"; true; }
trap cleanup EXIT

start() {  # start POOLS...: a server over $data with these pools
    port=$((20000 + RANDOM % 10000))
    STRATA_ADMIN_HOST=127.0.0.1:$port
    local args=()
    for p in "$@"; do mkdir -p "$data/p$p"/d{1..4}; args+=("$data/p$p/d{1...4}"); done
    "$bin" server --address "127.0.0.1:$port" "${args[@]}" >> "$out/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

for round in $(seq "$rounds"); do
    for layout in one two; do
        for op in get put; do
            data=$(mktemp -d "$root/target/pools.XXXX")
            if [ "$layout" = one ]; then start 0; else start 0 1; fi
            "$bin" bench "$op" --obj.size 4KiB --concurrent 16 --duration 15s --host "127.0.0.1:$port" \
                --server-pid "$pid" > "$out/$layout-$op-4KiB-$round.txt" 2>&1
            stop; rm -rf "$data"; data=
            echo "$layout $op round $round: $(grep -m1 -E 'objects/s|obj/s' "$out/$layout-$op-4KiB-$round.txt" || true)"
        done
    done
done

data=$(mktemp -d "$root/target/pools.XXXX")
start 0
"$bin" bench list --obj.size 4KiB --objects "$n4k" --duration 1s --concurrent 16 --no-clear --bucket small \
    --host "127.0.0.1:$port" > /dev/null 2>&1
"$bin" bench list --obj.size 1MiB --objects "$n1m" --duration 1s --concurrent 16 --no-clear --bucket large \
    --host "127.0.0.1:$port" > /dev/null 2>&1
stop
start 0 1
began=$(date +%s.%N)
"$bin" admin pool decommission 0 > /dev/null
until "$bin" admin pool status --json | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["pools"][0]["state"] != "drained")'; do
    sleep 0.2
done
ended=$(date +%s.%N)
"$bin" admin pool status --json > "$out/drain-status.json"
python3 - "$out/drain-status.json" "$began" "$ended" <<'PY' | tee "$out/drain-summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))["pools"][0]["drain"]
secs = float(sys.argv[3]) - float(sys.argv[2])
print(f"drained {d['objects_moved']} objects ({d['versions_moved']} versions, {d['bytes_moved'] / 2**20:.0f} MiB) "
      f"in {secs:.1f} s: {d['objects_moved'] / secs:.0f} objects/s, {d['bytes_moved'] / 2**20 / secs:.1f} MiB/s, "
      f"{d['pass']} passes, {d['failed']} failed")
PY
