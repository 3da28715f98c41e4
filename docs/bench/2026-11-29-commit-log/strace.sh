#!/usr/bin/env bash
# Counts the server's system calls for 5 s of a 16-client PUT 4 KiB run (and the index commits in
# that window, from /metrics). Usage: strace.sh BIN OUTDIR put
set -euo pipefail
bin=$1; out=$2; op=$3; mkdir -p $out
data=$(mktemp -d "$PWD/target/bench-data.XXXX")
port=$((20000 + RANDOM % 10000))
STRATA_PROMETHEUS_AUTH_TYPE=public STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
extra=""; [ "$op" = get ] && extra="--objects 2000"
"$bin" bench $op --obj.size 4KiB $extra --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" --duration 12s 2>/dev/null > "$out/$op.txt" &
b=$!
sleep 3
c1=$(curl -s "http://127.0.0.1:$port/metrics" | grep "index_commits_total{" | awk '{s+=$2} END {print s}')
timeout -s INT 5 strace -c -f -p $pid -o $out/strace.txt || true
c2=$(curl -s "http://127.0.0.1:$port/metrics" | grep "index_commits_total{" | awk '{s+=$2} END {print s}')
echo "commits in window: $((c2-c1))"
wait $b
grep -E "obj/s|per op" $out/$op.txt
head -25 $out/strace.txt
