#!/usr/bin/env bash
# One round on a single process over 4 folders (EC 2+2), 16 concurrent: PUT and GET of 4 KiB
# and 1 MiB objects. Usage: ab.sh OUT_FOLDER BINARY
set -euo pipefail
out=$1; bin=$2
mkdir -p "$out"
data=$(mktemp -d /tmp/bench-deploy.XXXX)
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
run() {
    local name=$1; shift
    "$bin" bench "$@" --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" 2>/dev/null > "$out/$name.txt"
}
run put-4KiB put --obj.size 4KiB --duration 10s
run get-4KiB get --obj.size 4KiB --objects 2000 --duration 10s
run put-1MiB put --obj.size 1MiB --duration 10s
run get-1MiB get --obj.size 1MiB --objects 200 --duration 10s
