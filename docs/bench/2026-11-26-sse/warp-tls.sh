#!/usr/bin/env bash
# warp GET 1 MiB (16 concurrent, 200 objects) over plain HTTP and over TLS against one release
# strata each (4 folders, EC 2+2), alternating, ROUNDS times: the yardstick of the encryption
# issue ("warp GET 1 MiB over TLS reaches 59 % of plain HTTP here").
# With `cpu`: CPU per MiB of warp (the client) and of strata (the server), perf stat on both
# processes for 8 s in the middle of a 25 s run, two rounds.
# usage: BIN=target/release/strata ROUNDS=3 DURATION=20s docs/bench/2026-11-26-sse/warp-tls.sh [cpu]
set -euo pipefail
cd "$(dirname "$0")/../../.."
source docs/bench/2026-11-26-sse/servers.sh
run() { # name port flags...
    local name=$1 port=$2; shift 2
    (cd "$data" && "$warp" get --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --obj.size 1MiB --objects 200 --concurrent 16 --duration "${DURATION:-20s}" --noclear --quiet "$@" 2>&1) \
        | grep -E '^ *\* Average' | head -1 | sed "s/^/$name /"
}
measure() { # name port server-pid flags...
    local name=$1 port=$2 spid=$3; shift 3
    (cd "$data" && exec "$warp" get --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --obj.size 1MiB --objects 200 --concurrent 16 --duration 25s --noclear --quiet "$@" > "$data/$name.out" 2>&1) &
    local w=$!
    sleep 12
    perf stat -e task-clock -p "$spid" -o "$data/$name-server.txt" -- sleep 8 >/dev/null 2>&1 &
    local p=$!
    perf stat -e task-clock -p "$(pgrep -P $w -x warp || echo $w)" -o "$data/$name-client.txt" -- sleep 8 >/dev/null 2>&1
    wait $p; wait $w
    local rate server client
    rate=$(grep -oE 'Average: [0-9.]+' "$data/$name.out" | head -1 | awk '{print $2}')
    server=$(awk '/task-clock/{print $1}' "$data/$name-server.txt" | tr -d ,)
    client=$(awk '/task-clock/{print $1}' "$data/$name-client.txt" | tr -d ,)
    python3 -c "r,s,c=$rate,$server,$client; print(f'$name: {r:7.1f} MiB/s  server {s/8/r:.3f} ms CPU/MiB  warp {c/8/r:.3f} ms CPU/MiB')"
}
if [ "${1:-}" = cpu ]; then
    for r in 1 2; do
        measure "http-$r" $hp $h
        measure "tls-$r" $tp $t --tls --insecure
    done
    exit 0
fi
for r in $(seq "${ROUNDS:-3}"); do
    if [ $((r % 2)) = 1 ]; then run "http-$r" $hp; run "tls-$r" $tp --tls --insecure
    else run "tls-$r" $tp --tls --insecure; run "http-$r" $hp; fi
done
