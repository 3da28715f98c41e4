#!/usr/bin/env bash
# PUT 1 MiB (16 clients, 15 s), one process over 8 folders (EC 4+4, bench-cluster NODES=1 layout).
# Usage: put-1MiB-8-folders.sh BIN OUTDIR
set -euo pipefail
bin=$1; out=$2; mkdir -p $out
data=$(mktemp -d "$PWD/target/bench-data.XXXX")
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
    "$bin" server --address "127.0.0.1:$port" "$data/n{1...4}/d{1...2}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
"$bin" bench put --obj.size 1MiB --duration 15s --no-clear --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" 2>/dev/null > "$out/put-1MiB.txt"
echo "$(grep -E 'obj/s' $out/put-1MiB.txt | head -1 | tr -s ' ') | $(grep 'CPU per op' $out/put-1MiB.txt)"
