#!/usr/bin/env bash
# The 4-node figures in docs/bench: four release `strata` processes on this machine (ports on
# 127.0.0.1, two drive folders each, one set of 8 drives, EC 4+4), driven by `strata bench` at
# 16 concurrent clients spread over all four endpoints. Usage: scripts/bench-cluster.sh [OUTDIR]
# (STRATA_BIN=path uses that binary instead of building one: for before/after comparisons.)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-cluster}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
data=$(mktemp -d "$(dirname "$bin")/bench-cluster.XXXX")
base=$((20000 + RANDOM % 10000))
args=()
hosts=()
for n in 1 2 3 4; do
    hosts+=("127.0.0.1:$((base + n))")
    for d in 1 2; do args+=("http://127.0.0.1:$((base + n))$data/n$n/d$d"); done
done
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$data"' EXIT
for n in 1 2 3 4; do
    STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
        "$bin" server --address "127.0.0.1:$((base + n))" "${args[@]}" > "$out/server$n.log" 2>&1 &
    pids+=($!)
done
for h in "${hosts[@]}"; do
    for _ in $(seq 300); do curl -sf "http://$h/health/ready" >/dev/null && break; sleep 0.1; done
done
host_list=$(IFS=,; echo "${hosts[*]}")
run() {
    local name=$1; shift
    "$bin" bench "$@" --host "$host_list" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
run put-4KiB put --obj.size 4KiB --duration 15s
run get-4KiB get --obj.size 4KiB --objects 2000 --duration 15s
run put-1MiB put --obj.size 1MiB --duration 15s
run get-1MiB get --obj.size 1MiB --objects 200 --duration 15s
