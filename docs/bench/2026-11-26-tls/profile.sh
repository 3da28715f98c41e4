#!/usr/bin/env bash
# perf record of the server (pinned to CPU 0) during warp GET 1 MiB (pinned to CPU 1), over plain
# HTTP and over TLS; writes perf reports (flat, by symbol) to OUT/{http,tls}.txt.
# usage: BIN=target/release/strata OUT=/tmp/prof docs/bench/2026-11-26-tls/profile.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/prof}; mkdir -p "$out"
PIN="taskset -c 0" source docs/bench/2026-11-26-tls/servers.sh
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
