#!/usr/bin/env bash
# GET 16 MiB over TLS on one fresh server, plain or SSE-C, with perf record on the server.
# usage: [PERF=0] docs/bench/2026-11-26-sse-buffers/ab-get-tls.sh path/to/strata c|plain   (profile: /tmp/prof/perf-tls-KIND.data)
set -euo pipefail
mkdir -p /tmp/prof
bin=$1; kind=$2
data=$(mktemp -d /tmp/prof/tls.XXXX); mkdir -p $data/certs
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout $data/certs/private.key -out $data/certs/public.crt 2>/dev/null
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
port=$((20000 + RANDOM % 10000))
$bin server --address 127.0.0.1:$port --certs-dir $data/certs "$data/t{1...4}" > /tmp/prof/tls-server.log 2>&1 & pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -ksf "https://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
sse=$([ "$kind" = plain ] && echo "" || echo "--sse $kind")
( [ "${PERF:-1}" = 0 ] && exit 0; sleep 5; perf record -F 999 -g -p $pid -o /tmp/prof/perf-tls-$kind.data -- sleep 8 >/dev/null 2>&1 ) & pp=$!
$bin bench get --host 127.0.0.1:$port --access-key benchadmin --secret-key benchadmin-secret --concurrent 16 --server-pid $pid --bucket bench-tls-$kind --obj.size ${SIZE:-16MiB} --objects ${OBJECTS:-32} --duration 15s --tls --insecure $sse 2>&1 | grep -E "MiB/s|CPU|rror" || true
wait $pp
