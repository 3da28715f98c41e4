#!/usr/bin/env bash
# One process over 8 folders (EC 4+4), the same runs as bench-cluster.sh: the baseline the
# four-node figures are divided by.
set -euo pipefail
out=$1; bin=$STRATA_BIN
mkdir -p "$out"
data=$(mktemp -d /tmp/bench-one8.XXXX)
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...8}" > "$out/server.log" 2>&1 &
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
