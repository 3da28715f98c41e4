#!/usr/bin/env bash
# perf record of the server (pinned to CPU 0) during warp GET 1 MiB (pinned to CPU 1), over plain
# HTTP and over TLS; writes perf reports (flat, by symbol) to OUT/{http,tls}.txt.
# usage: BIN=target/release/strata OUT=/tmp/prof docs/bench/raw-tls/profile.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
bin=${BIN:-target/release/strata}
out=${OUT:-/tmp/prof}; mkdir -p "$out"
warp=$(scripts/install-warp.sh)
data=$(mktemp -d /tmp/warp-prof.XXXX)
mkdir -p "$data/certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$data/certs/private.key" -out "$data/certs/public.crt" 2>/dev/null
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
hp=$((20000 + RANDOM % 10000)); tp=$((hp + 1))
taskset -c 0 "$bin" server --address "127.0.0.1:$hp" "$data/h{1...4}" > "$data/http.log" 2>&1 & h=$!
taskset -c 0 "$bin" server --address "127.0.0.1:$tp" --certs-dir "$data/certs" "$data/t{1...4}" > "$data/tls.log" 2>&1 & t=$!
trap 'kill $h $t 2>/dev/null; wait $h $t 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$hp/health/ready" >/dev/null && break; sleep 0.1; done
for _ in $(seq 100); do curl -ksf "https://127.0.0.1:$tp/health/ready" >/dev/null && break; sleep 0.1; done
prof() { # name port server-pid flags...
    local name=$1 port=$2 spid=$3; shift 3
    (cd "$data" && exec taskset -c 1 "$warp" get --host "127.0.0.1:$port" --access-key benchadmin \
        --secret-key benchadmin-secret --obj.size 1MiB --objects 200 --concurrent 16 --duration 20s \
        --noclear --quiet "$@" > "$out/$name.out" 2>&1) &
    local w=$!
    sleep 10
    perf record ${CALLGRAPH:-} -F 2000 -p "$spid" -o "$data/$name.data" -- sleep 6 >/dev/null 2>&1
    wait $w
    perf report -i "$data/$name.data" --no-children --sort symbol --stdio 2>/dev/null | grep -v '^# [^SE]' | grep -v '^$' | head -${LINES_KEPT:-60} > "$out/$name.txt" || true
    grep -oE "Average: [0-9.]+" "$out/$name.out" | head -1 || true
}
prof http $hp $h
prof tls $tp $t --tls --insecure
