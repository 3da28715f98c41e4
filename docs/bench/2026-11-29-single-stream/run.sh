#!/usr/bin/env bash
# One large upload at a time, and 16 concurrent 1 MiB PUTs, on one server over 4 folders
# (EC 2+2, the README's default layout), release builds, fresh folders for every run.
#  - "single": `strata bench put` with one client uploading 1 GiB objects in one PUT each, 30 s;
#  - "cp": `aws s3 cp` of one 1 GiB file (the CLI's defaults: 8 MiB parts, 10 at once), timed;
#  - "put16": `strata bench put` of 1 MiB objects with 16 clients, 15 s.
# Each binary named runs each case in turn, ROUNDS rounds, alternating binaries within a round.
# Usage: docs/bench/2026-11-29-single-stream/run.sh OUTDIR ROUNDS NAME=BINARY...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$1; rounds=$2; shift 2
mkdir -p "$out"
aws=$root/.venv/bin/aws
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off
export STRATA_BENCH_ACCESS_KEY=benchadmin STRATA_BENCH_SECRET_KEY=benchadmin-secret
export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchadmin-secret AWS_DEFAULT_REGION=us-east-1
pid=; data=
src=$root/target/single-stream-1GiB.bin
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; [ -n "$data" ] && rm -rf "$data"; true; }
trap cleanup EXIT
[ -f "$src" ] || head -c $((1 << 30)) /dev/urandom > "$src"

start() {  # start BINARY
    port=$((20000 + RANDOM % 10000))
    data=$(mktemp -d "$root/target/single.XXXX")
    mkdir -p "$data"/d{1..4}
    "$1" server --address "127.0.0.1:$port" "$data/d{1...4}" >> "$out/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; rm -rf "$data"; data=; }

for round in $(seq "$rounds"); do
    for named in "$@"; do
        name=${named%%=*}; bin=${named#*=}
        start "$bin"
        "$bin" bench put --obj.size 1GiB --disable-multipart --concurrent 1 --duration 30s \
            --host "127.0.0.1:$port" --server-pid "$pid" > "$out/$name-single-$round.txt" 2>&1
        stop
        start "$bin"
        "$aws" --endpoint-url "http://127.0.0.1:$port" s3 mb s3://single-cp > /dev/null
        began=$(date +%s.%N)
        "$aws" --endpoint-url "http://127.0.0.1:$port" s3 cp "$src" s3://single-cp/one > /dev/null
        ended=$(date +%s.%N)
        python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'aws s3 cp 1 GiB: {s:.2f} s, {1024/s:.1f} MiB/s')" \
            "$began" "$ended" > "$out/$name-cp-$round.txt"
        stop
        start "$bin"
        "$bin" bench put --obj.size 1MiB --concurrent 16 --duration 15s \
            --host "127.0.0.1:$port" --server-pid "$pid" > "$out/$name-put16-$round.txt" 2>&1
        stop
        echo "$name round $round: single $(grep -m1 -o '[0-9.]* MiB/s' "$out/$name-single-$round.txt" || true)," \
            "$(cat "$out/$name-cp-$round.txt"), put16 $(grep -m1 -o '[0-9.]* MiB/s' "$out/$name-put16-$round.txt" || true)"
    done
done
