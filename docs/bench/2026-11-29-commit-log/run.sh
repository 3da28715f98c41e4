#!/usr/bin/env bash
# Before/after of the index's commit log: PUT and GET 4 KiB (16 clients, 10 s) on one server over
# 4 folders (EC 2+2), the two builds alternating, a fresh server per run, server CPU per operation
# from `strata bench --server-pid`.
# Usage: run.sh BEFORE_BIN AFTER_BIN ROUNDS [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
before=$1; after=$2; rounds=$3
out=${4:-docs/bench/2026-11-29-commit-log/raw}
mkdir -p "$out"
one() {
    local bin=$1 tag=$2
    local data port pid
    data=$(mktemp -d "$PWD/target/bench-data.XXXX")
    port=$((20000 + RANDOM % 10000))
    STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
        "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/$tag-server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
    for w in "put-4KiB put --obj.size 4KiB" "get-4KiB get --obj.size 4KiB --objects 2000"; do
        set -- $w
        local name=$1; shift
        "$bin" bench "$@" --duration 10s --host "127.0.0.1:$port" --access-key benchadmin \
            --secret-key benchadmin-secret --concurrent 16 --server-pid "$pid" 2>/dev/null > "$out/$tag-$name.txt"
        echo "$tag $name: $(grep -E 'obj/s' "$out/$tag-$name.txt" | head -1 | tr -s ' ') | $(grep 'CPU per op' "$out/$tag-$name.txt" | tr -s ' ')"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
}
for r in $(seq "$rounds"); do
    one "$before" "r$r-before"
    one "$after" "r$r-after"
done
