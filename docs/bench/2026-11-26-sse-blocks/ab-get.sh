#!/usr/bin/env bash
# GET 1 MiB on one fresh server, plain or encrypted; optionally perf stat / perf record on it.
# usage: BIN=path/to/strata docs/bench/2026-11-26-sse-blocks/ab-get.sh plain|s3|kms SECONDS [stat|perf]
# (SIZE=bytes changes the object size, OBJECTS the object count, OP=put measures PUTs instead;
# outputs go to /tmp/prof)
set -euo pipefail
mkdir -p /tmp/prof
cd "$(dirname "$0")/../../.."
bin=${BIN:-target/release/strata}
data=$(mktemp -d /tmp/prof/data.XXXX)
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export STRATA_KMS_SECRET_KEY="bench-key:$(head -c 32 /dev/urandom | base64)"
port=$((20000 + RANDOM % 10000))
$bin server --address "127.0.0.1:$port" "$data/h{1...4}" > /tmp/prof/server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
kind=$1; dur=$2
sse=$([ "$kind" = plain ] && echo "" || echo "--sse $kind")
perfpid=
if [ "${3:-}" = stat ]; then
  ( sleep 2; perf stat -e task-clock,context-switches,raw_syscalls:sys_enter -p $pid -o /tmp/prof/stat-$kind.txt -- sleep 6 >/dev/null 2>&1 ) &
  perfpid=$!
fi
if [ "${3:-}" = perf ]; then
  ( sleep 4; perf record -F 999 -g -p $pid -o /tmp/prof/perf-$kind.data -- sleep 8 >/dev/null 2>&1 ) &
  perfpid=$!
fi
op=${OP:-get}
objects=$([ "$op" = get ] && echo "--objects ${OBJECTS:-200}" || true)
# shellcheck disable=SC2086
$bin bench $op --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret --concurrent 16 --server-pid $pid --bucket b$kind --obj.size ${SIZE:-1MiB} $objects --duration $dur $sse 2>/dev/null | grep -E "MiB/s|CPU"
[ -n "$perfpid" ] && wait $perfpid || true
