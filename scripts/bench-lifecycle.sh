#!/usr/bin/env bash
# The lifecycle pass's cost per object and its effect on foreground reads, all on one server
# instance: one release `strata` over 4 folders (EC 2+2) with passes every second
# (STRATA_LIFECYCLE_INTERVAL=1s), a bucket filled with 4 KiB objects by `strata bench put`
# (FILL seconds at 16 concurrent), and a lifecycle rule that matches every object but expires
# none (Days 36500: each version is listed and judged, nothing is removed).
#
# A pass does work only while the bucket has the rule, and stops at its next page when the rule
# goes, so the rule switches the pass on and off without a restart. For each of ROUNDS rounds:
# GET 1 MiB at 16 concurrent for DURATION without the rule (no pass), then with it (a pass
# running throughout, which the scanned-versions counter shows). Then whole passes with no
# foreground load: at normal priority (paced) and at high priority (the work alone).
# Usage: scripts/bench-lifecycle.sh [OUTDIR]   (STRATA_BIN=path: use that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-lifecycle}
fill=${FILL:-40s}
dur=${DURATION:-15s}
rounds=${ROUNDS:-2}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
aws=${AWS:-.venv/bin/aws}
data=$(mktemp -d "$(dirname "$bin")/bench-lc.XXXX")
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchadmin-secret AWS_DEFAULT_REGION=us-east-1
port=$((20000 + RANDOM % 10000))
host=127.0.0.1:$port
STRATA_SCANNER_INTERVAL=off STRATA_PROMETHEUS_AUTH_TYPE=public STRATA_LIFECYCLE_INTERVAL=1s \
    "$bin" server --address "$host" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 300); do curl -sf "http://$host/health/ready" >/dev/null && break; sleep 0.1; done
metric() { curl -sf "http://$host/metrics" | awk -v m="$1" '$1 == m {print $NF}'; }
scanned() { metric strata_lifecycle_objects_scanned_total; }
s3api() { "$aws" --endpoint-url "http://$host" s3api "$@"; }
rule_on() {
    s3api put-bucket-lifecycle-configuration --bucket lcbench --lifecycle-configuration \
        '{"Rules": [{"ID": "far", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 36500}}]}'
}
# Waits until the pass has judged $1 more versions than $2.
wait_scanned() {
    while [ $(($(scanned) - $2)) -lt "$1" ]; do sleep 0.2; done
}
bench() {
    local name=$1; shift
    "$bin" bench "$@" --duration "$dur" --concurrent 16 --host "$host" --access-key benchadmin \
        --secret-key benchadmin-secret --server-pid "$pid" --no-clear --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
s3api create-bucket --bucket lcbench > /dev/null
"$bin" bench put --obj.size 4KiB --duration "$fill" --concurrent 16 --host "$host" --access-key benchadmin \
    --secret-key benchadmin-secret --bucket lcbench --no-clear 2>/dev/null | tail -3 | tee "$out/fill.txt"
objects=$(sed -n 's/.*(\([0-9]*\) ops.*/\1/p' "$out/fill.txt")
s3api create-bucket --bucket reads > /dev/null
: > "$out/pass.txt"
for r in $(seq "$rounds"); do
    bench "get-1MiB-no-pass-$r" get --obj.size 1MiB --objects 200 --bucket reads
    before=$(scanned)
    rule_on
    wait_scanned 1000 "$before"
    from=$(scanned)
    bench "get-1MiB-during-pass-$r" get --obj.size 1MiB --objects 200 --bucket reads
    echo "round $r: the pass judged $(($(scanned) - from)) versions during the GET run" | tee -a "$out/pass.txt"
    s3api delete-bucket-lifecycle --bucket lcbench
    # The pass stops at its next page: wait until the counter stands still.
    last=-1
    while [ "$(scanned)" != "$last" ]; do last=$(scanned); sleep 2; done
done
whole_pass() {
    local before t0 t1
    before=$(scanned)
    t0=$(date +%s.%N)
    rule_on
    wait_scanned "$objects" "$before"
    t1=$(date +%s.%N)
    s3api delete-bucket-lifecycle --bucket lcbench
    echo "whole pass at $1 priority, no foreground load: $objects versions in $(echo "$t1 - $t0" | bc) s ($(echo "($t1 - $t0) * 1000000 / $objects" | bc) us a version)" | tee -a "$out/pass.txt"
    local last=-1
    while [ "$(scanned)" != "$last" ]; do last=$(scanned); sleep 2; done
}
whole_pass normal
"$bin" admin heal priority high --host "$host" > /dev/null
whole_pass high
"$bin" admin heal priority normal --host "$host" > /dev/null
