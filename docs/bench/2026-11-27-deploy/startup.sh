#!/usr/bin/env bash
# Start-to-ready time of a strata binary: from exec to the first 200 on /minio/health/ready, over
# four fresh drive folders (first start: formatting) and again over the same folders (restart).
# Five rounds; prints one line per start. Usage: startup.sh BINARY LABEL
set -euo pipefail
bin=$1 label=$2
for round in 1 2 3 4 5; do
    data=$(mktemp -d /tmp/bench-start.XXXX)
    for start in first restart; do
        port=$((20000 + RANDOM % 10000))
        t0=$(date +%s%N)
        STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
            "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > /dev/null 2>&1 &
        pid=$!
        until curl -sf -o /dev/null "http://127.0.0.1:$port/minio/health/ready"; do sleep 0.005; done
        t1=$(date +%s%N)
        echo "$label round $round $start: $(( (t1 - t0) / 1000000 )) ms"
        kill -TERM $pid; wait $pid || true
    done
    rm -rf "$data"
done
