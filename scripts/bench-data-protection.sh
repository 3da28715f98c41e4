#!/usr/bin/env bash
# The #13 figures in docs/bench: one release `strata` over 4 folders (EC 2+2), `strata bench` at
# 16 concurrent, in alternating rounds so neither side always runs second:
#  (1) PUT and GET 4 KiB on a versioning-enabled bucket against an unversioned one;
#  (2) PUT 4 KiB into a bucket whose every ObjectCreated event goes to a webhook target against
#      one without notifications (the added PUT latency), and the delivery rate to the webhook
#      (scripts/webhook_sink.py), with the time the queue needed to drain after each round.
# Usage: scripts/bench-data-protection.sh [OUTDIR] [ROUNDS]   (STRATA_BIN=path: use that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-data-protection}
rounds=${2:-4}
dur=${DURATION:-10s}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
py=${PYTHON:-.venv/bin/python}
aws=${AWS:-.venv/bin/aws}
data=$(mktemp -d "$(dirname "$bin")/bench-dp.XXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$data"' EXIT
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchadmin-secret AWS_DEFAULT_REGION=us-east-1

port=$((20000 + RANDOM % 10000))
sink_port=$((port + 1))
host=127.0.0.1:$port
"$py" scripts/webhook_sink.py "$sink_port" &
pids+=("$!")
STRATA_SCANNER_INTERVAL=off STRATA_PROMETHEUS_AUTH_TYPE=public \
    MINIO_NOTIFY_WEBHOOK_ENABLE_bench=on MINIO_NOTIFY_WEBHOOK_ENDPOINT_bench="http://127.0.0.1:$sink_port/" \
    "$bin" server --address "$host" "$data/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 300); do curl -sf "http://$host/health/ready" >/dev/null && break; sleep 0.1; done
s3api() { "$aws" --endpoint-url "http://$host" s3api "$@" > /dev/null; }
for b in plain versioned notified; do s3api create-bucket --bucket "$b"; done
s3api put-bucket-versioning --bucket versioned --versioning-configuration Status=Enabled
s3api put-bucket-notification-configuration --bucket notified --notification-configuration \
    '{"QueueConfigurations": [{"Id": "all", "QueueArn": "arn:minio:sqs::bench:webhook", "Events": ["s3:ObjectCreated:*"]}]}'

run() {
    local name=$1 bucket=$2; shift 2
    "$bin" bench "$@" --obj.size 4KiB --duration "$dur" --concurrent 16 --host "$host" \
        --access-key benchadmin --secret-key benchadmin-secret --server-pid "$pid" --bucket "$bucket" \
        --no-clear --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
depth() {
    curl -sf "http://$host/metrics" | awk '/^strata_notify_queue_depth/ {s += $NF} END {print s + 0}'
}
# Delivery: events the sink received in the round, over the time from the first to the last, and
# how long after the PUTs ended the queue was empty.
delivered() {
    local name=$1 ended=$2
    for _ in $(seq 6000); do [ "$(depth)" = 0 ] && break; sleep 0.05; done
    local drained
    drained=$("$py" -c "import time; print(f'{time.time() - $ended:.2f}')")
    curl -sf "http://127.0.0.1:$sink_port/" | "$py" -c "
import json, sys
s = json.load(sys.stdin)
span = (s['last'] - s['first']) if s['first'] else 0
rate = s['events'] / span if span else 0
print(f'$name: {s[\"events\"]} events delivered in {span:.2f} s = {rate:.0f} events/s; queue empty {$drained} s after the PUTs ended')
" | tee "$out/$name-delivery.txt"
}
for r in $(seq "$rounds"); do
    for side in $([ $((r % 2)) = 1 ] && echo "plain versioned" || echo "versioned plain"); do
        run "put-4KiB-$side-$r" "$side" put
        run "get-4KiB-$side-$r" "$side" get --objects 2000
    done
    for side in $([ $((r % 2)) = 1 ] && echo "plain notified" || echo "notified plain"); do
        curl -sf -X POST -H 'X-Sink-Reset: 1' -H 'Content-Length: 0' "http://127.0.0.1:$sink_port/" || true
        run "put-4KiB-notify-$side-$r" "$side" put
        ended=$("$py" -c 'import time; print(time.time())')
        if [ "$side" = notified ]; then delivered "delivery-$r" "$ended"; fi
    done
done
"$py" - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def op(name):
    return json.load(open(f"{out}/{name}.json"))["ops"][0]
def median(prefix, side, pick):
    return statistics.median(pick(op(f"{prefix}-{side}-{r}")) for r in range(1, rounds + 1))
def show(label, prefix, base, other):
    a = median(prefix, base, lambda o: o["ops_per_sec"])
    b = median(prefix, other, lambda o: o["ops_per_sec"])
    print(f"{label}: {b:,.0f} vs {a:,.0f} obj/s (medians of {rounds} rounds) = {100 * b / a:.1f} %")
    for q in ("p50", "p99"):
        la = median(prefix, base, lambda o: o["latency_ms"][q])
        lb = median(prefix, other, lambda o: o["latency_ms"][q])
        print(f"  latency {q}: {lb:.2f} vs {la:.2f} ms ({lb - la:+.2f} ms)")
show("PUT 4 KiB versioned vs unversioned", "put-4KiB", "plain", "versioned")
show("GET 4 KiB versioned vs unversioned", "get-4KiB", "plain", "versioned")
show("PUT 4 KiB with notifications vs without", "put-4KiB-notify", "plain", "notified")
PY
