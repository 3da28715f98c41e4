#!/usr/bin/env bash
# warp GET 1 MiB (16 concurrent, 200 objects) over plain HTTP and over TLS with the server pinned
# to CPU 0 and warp to CPU 1, so each side's cost shows apart: MiB/s, and per MiB the server's
# CPU (ms), system calls and context switches (perf stat on the server for 8 s in the middle of
# a 20 s run). ROUNDS alternations.
# usage: BIN=target/release/strata ROUNDS=2 docs/bench/2026-11-26-sse/pinned.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
PIN="taskset -c 0" source docs/bench/2026-11-26-sse/servers.sh
measure() { # name port server-pid flags...
    local name=$1 port=$2 spid=$3; shift 3
    (cd "$data" && exec taskset -c 1 "$warp" get --host "127.0.0.1:$port" --access-key benchadmin \
        --secret-key benchadmin-secret --obj.size 1MiB --objects 200 --concurrent 16 --duration 20s \
        --noclear --quiet "$@" > "$data/$name.out" 2>&1) &
    local w=$!
    sleep 10
    perf stat -e task-clock,context-switches,raw_syscalls:sys_enter -p "$spid" -o "$data/$name-server.txt" -- sleep 8 >/dev/null 2>&1
    wait $w
    local rate
    rate=$(grep -oE 'Average: [0-9.]+' "$data/$name.out" | head -1 | awk '{print $2}')
    python3 - "$name" "$rate" "$data/$name-server.txt" <<'PY'
import re, sys
name, rate, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
v = {}
for line in open(path):
    m = re.match(r'\s*([\d,.]+)\s+(?:msec\s+)?(\S+)', line)
    if m:
        v[m.group(2)] = float(m.group(1).replace(',', ''))
mib = rate * 8
print(f"{name}: {rate:7.1f} MiB/s  server {v['task-clock']/mib:.3f} ms CPU/MiB  "
      f"{v['raw_syscalls:sys_enter']/mib:.1f} syscalls/MiB  {v['context-switches']/mib:.2f} switches/MiB")
PY
}
for r in $(seq "${ROUNDS:-2}"); do
    if [ -n "${TLS_ONLY:-}" ]; then measure "tls-$r" $tp $t --tls --insecure; continue; fi
    if [ $((r % 2)) = 1 ]; then measure "http-$r" $hp $h; measure "tls-$r" $tp $t --tls --insecure
    else measure "tls-$r" $tp $t --tls --insecure; measure "http-$r" $hp $h; fi
done
