#!/usr/bin/env bash
# Reproduces docs/bench figures: a release strata over 4 folders (EC 2+2) on this machine's disk,
# driven by `strata bench` at 16 concurrent clients. Usage: scripts/bench.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-single-node}
mkdir -p "$out"
# STRATA_BIN=path uses that binary instead of building one (before/after comparisons).
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
data=$(mktemp -d "$(dirname "$bin")/bench-data.XXXX")
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
run() {
    local name=$1; shift
    "$bin" bench "$@" --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
run put-4KiB put --obj.size 4KiB --duration 15s
run get-4KiB get --obj.size 4KiB --objects 2000 --duration 15s
run put-1MiB put --obj.size 1MiB --duration 15s
run get-1MiB get --obj.size 1MiB --objects 200 --duration 15s
run put-16MiB put --obj.size 16MiB --duration 20s
run get-16MiB get --obj.size 16MiB --objects 32 --duration 20s
run list-10k list --obj.size 1KiB --objects 10000 --duration 10s
