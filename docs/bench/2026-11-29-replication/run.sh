#!/usr/bin/env bash
# Bucket replication's cost on the source and its backlog: one server over 4 folders (release
# build), 16 clients writing 64 KiB objects for DURATION, into a versioned bucket without
# replication and into one replicating everything to a second bucket, alternated ROUNDS times.
# While each run goes, the replication backlog (strata_replication_queue_depth) is sampled every
# 0.25 s; after it, the time until the backlog is empty. Usage: run.sh BIN [ROUNDS] [DURATION]
set -euo pipefail
BIN=${1:?strata binary}
ROUNDS=${2:-3}
DURATION=${3:-15s}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
port=9311
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_PROMETHEUS_AUTH_TYPE=public
"$BIN" server --address 127.0.0.1:$port "$work/d{1...4}" >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health/ready >/dev/null && break; sleep 0.1; done
py() { "$here/../../../.venv/bin/python" - "$@"; }
py $port <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", aws_access_key_id="benchadmin",
                  aws_secret_access_key="benchadmin-secret", region_name="us-east-1")
for b in ["plain", "replicated", "copy"]:
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
s3.put_bucket_replication(Bucket="replicated", ReplicationConfiguration={"Role": "", "Rules": [{
    "ID": "all", "Priority": 1, "Status": "Enabled", "Filter": {"Prefix": ""},
    "DeleteMarkerReplication": {"Status": "Disabled"}, "Destination": {"Bucket": "arn:aws:s3:::copy"}}]})
PY
depth() { curl -s http://127.0.0.1:$port/metrics | awk '/^strata_replication_queue_depth /{print $2}'; }
for r in $(seq "$ROUNDS"); do
  for bucket in plain replicated; do
    : >"$work/depth"
    ( while :; do depth >>"$work/depth"; sleep 0.25; done ) & sampler=$!
    "$BIN" bench put --host 127.0.0.1:$port --access-key benchadmin --secret-key benchadmin-secret \
      --bucket $bucket --obj.size 64KiB --concurrent 16 --duration "$DURATION" --no-clear \
      --server-pid $pid --json "$work/$bucket-$r.json" >"$work/$bucket-$r.txt"
    kill $sampler; wait $sampler 2>/dev/null || true
    start=$(date +%s.%N)
    while [ "$(depth)" != "0" ]; do sleep 0.05; done
    drained=$(echo "$(date +%s.%N) - $start" | bc)
    ops=$(grep -m1 -oE '[0-9.]+ obj/s' "$work/$bucket-$r.txt" | head -1)
    max=$(sort -n "$work/depth" | tail -1)
    p99=$(sort -n "$work/depth" | awk '{a[NR]=$1} END {print a[int(NR*0.99)+(NR*0.99>int(NR*0.99))]}')
    echo "round $r $bucket: $ops; backlog samples max $max p99 $p99; empty ${drained}s after the run"
  done
done
