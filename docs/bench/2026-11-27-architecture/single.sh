#!/usr/bin/env bash
# One A/B round on a single process over 4 folders: PUT 4 KiB, PUT 16 MiB, GET 1 MiB, LIST.
set -euo pipefail
out=$1; bin=$2
mkdir -p "$out"
data=$(mktemp -d /tmp/bench-ab.XXXX)
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
run() {
    local name=$1; shift
    "$bin" bench "$@" --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" 2>/dev/null > "$out/$name.txt"
}
run put-4KiB put --obj.size 4KiB --duration 15s
run put-16MiB put --obj.size 16MiB --duration 20s
run get-1MiB get --obj.size 1MiB --objects 200 --duration 15s
run list-10k list --obj.size 1KiB --objects 10000 --duration 10s
