#!/usr/bin/env bash
# The lifecycle pass's cost per object: one release `strata` over 4 folders (EC 2+2), a bucket
# filled with OBJECTS-ish 4 KiB objects by `strata bench put` (FILL seconds at 16 concurrent),
# a lifecycle rule that matches every object but expires none (Days 36500: each object is
# looked at and judged, nothing is removed), then passes every INTERVAL; the pass's own
# duration and object count come from the strata_lifecycle_* metrics. Then GET 1 MiB at 16
# concurrent for DURATION with no pass running, and again while passes run back to back.
# Usage: scripts/bench-lifecycle.sh [OUTDIR]   (STRATA_BIN=path: use that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/raw-lifecycle}
fill=${FILL:-40s}
dur=${DURATION:-15s}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
aws=${AWS:-.venv/bin/aws}
data=$(mktemp -d "$(dirname "$bin")/bench-lc.XXXX")
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchadmin-secret AWS_DEFAULT_REGION=us-east-1
port=$((20000 + RANDOM % 10000))
host=127.0.0.1:$port
start() {
    STRATA_SCANNER_INTERVAL=off STRATA_PROMETHEUS_AUTH_TYPE=public STRATA_LIFECYCLE_INTERVAL=$1 \
        "$bin" server --address "$host" "$data/d{1...4}" >> "$out/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do curl -sf "http://$host/health/ready" >/dev/null && break; sleep 0.1; done
}
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$data"' EXIT
metric() { curl -sf "http://$host/metrics" | awk -v m="$1" '$1 == m {print $NF}'; }
bench() {
    local name=$1; shift
    "$bin" bench "$@" --duration "$dur" --concurrent 16 --host "$host" --access-key benchadmin \
        --secret-key benchadmin-secret --server-pid "$pid" --no-clear --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
start off
"$aws" --endpoint-url "http://$host" s3api create-bucket --bucket lcbench > /dev/null
"$bin" bench put --obj.size 4KiB --duration "$fill" --concurrent 16 --host "$host" --access-key benchadmin \
    --secret-key benchadmin-secret --bucket lcbench --no-clear 2>/dev/null | tail -3 | tee "$out/fill.txt"
"$aws" --endpoint-url "http://$host" s3api put-bucket-lifecycle-configuration --bucket lcbench --lifecycle-configuration \
    '{"Rules": [{"ID": "far", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 36500}}]}'
"$aws" --endpoint-url "http://$host" s3api create-bucket --bucket reads > /dev/null
bench get-1MiB-quiet get --obj.size 1MiB --objects 200 --bucket reads
kill "$pid"; wait "$pid" 2>/dev/null || true
# Passes back to back (a pass at start, then every second).
start 1s
for _ in $(seq 600); do [ "$(metric strata_lifecycle_passes_total)" -ge 1 ] 2>/dev/null && break; sleep 0.5; done
echo "first pass: $(metric strata_lifecycle_objects_scanned_total) versions in $(metric strata_lifecycle_last_pass_seconds) s" | tee "$out/pass.txt"
bench get-1MiB-during-passes get --obj.size 1MiB --objects 200 --bucket reads
echo "after the GET run: $(metric strata_lifecycle_passes_total) passes, $(metric strata_lifecycle_objects_scanned_total) versions scanned, last pass $(metric strata_lifecycle_last_pass_seconds) s" | tee -a "$out/pass.txt"
