#!/usr/bin/env bash
# One PUT 4 KiB run (15 s, 16 concurrent) on a fresh single process over 4 folders.
set -euo pipefail
out=$1; bin=$2
data=$(mktemp -d /tmp/bench-put.XXXX)
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > /dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
"$bin" bench put --obj.size 4KiB --duration 15s --host "127.0.0.1:$port" --access-key benchadmin \
    --secret-key benchadmin-secret --concurrent 16 --server-pid "$pid" 2>/dev/null > "$out"
