#!/usr/bin/env bash
# Encryption at rest against no encryption, in the same run on the same server: a release strata
# over 4 folders (EC 2+2) with the built-in KMS, over plain HTTP (plain, SSE-S3, SSE-KMS) and
# over TLS (plain, SSE-C), driven by `strata bench` at 16 concurrent clients.
# Each size runs ROUNDS times (default 2), encrypted and plain in alternating order, and a
# summary gives medians, each encrypted kind as a share of its plain baseline, and the server's
# CPU time per MiB.
# Usage: scripts/bench-sse.sh [OUTDIR]
# Smoke run: STRATA_BIN=target/debug/strata DURATION=2s SIZES=1MiB OBJECTS=20 ROUNDS=1 scripts/bench-sse.sh /tmp/x
# Figures are only worth keeping from a quiet machine (see docs/bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-sse}
dur=${DURATION:-15s}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
data=$(mktemp -d "$(dirname "$bin")/bench-sse.XXXX")
certs="$data/certs"
mkdir -p "$certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
    -keyout "$certs/private.key" -out "$certs/public.crt" 2>/dev/null
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export STRATA_KMS_SECRET_KEY="bench-key:$(head -c 32 /dev/urandom | base64)"
http_port=$((20000 + RANDOM % 10000))
tls_port=$((http_port + 1))
"$bin" server --address "127.0.0.1:$http_port" "$data/h{1...4}" > "$out/server-http.log" 2>&1 &
http_pid=$!
"$bin" server --address "127.0.0.1:$tls_port" --certs-dir "$certs" "$data/t{1...4}" > "$out/server-tls.log" 2>&1 &
tls_pid=$!
trap 'kill $http_pid $tls_pid 2>/dev/null; wait $http_pid $tls_pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$http_port/health/ready" >/dev/null && break; sleep 0.1; done
for _ in $(seq 100); do curl -ksf "https://127.0.0.1:$tls_port/health/ready" >/dev/null && break; sleep 0.1; done
run() {
    local name=$1 port=$2 pid=$3; shift 3
    "$bin" bench "$@" --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --server-pid "$pid" --bucket "bench-$(echo "$name" | tr "[:upper:]" "[:lower:]")" --json "$out/$name.json" 2>/dev/null \
        | tee "$out/$name.txt"
}
rounds=${ROUNDS:-2}
for r in $(seq "$rounds"); do
for size in ${SIZES:-4KiB 1MiB 16MiB}; do
    objects=${OBJECTS:-$([ "$size" = 4KiB ] && echo 2000 || { [ "$size" = 1MiB ] && echo 200 || echo 32; })}
    http_kinds=$([ $((r % 2)) = 1 ] && echo "plain s3 kms" || echo "kms s3 plain")
    tls_kinds=$([ $((r % 2)) = 1 ] && echo "plain c" || echo "c plain")
    for kind in $http_kinds; do
        sse=$([ "$kind" = plain ] && echo "" || echo "--sse $kind")
        # shellcheck disable=SC2086
        run "put-$size-http-$kind-$r" "$http_port" "$http_pid" put --obj.size "$size" --duration "$dur" $sse
        # shellcheck disable=SC2086
        run "get-$size-http-$kind-$r" "$http_port" "$http_pid" get --obj.size "$size" --objects "$objects" --duration "$dur" $sse
    done
    for kind in $tls_kinds; do
        sse=$([ "$kind" = plain ] && echo "" || echo "--sse $kind")
        # shellcheck disable=SC2086
        run "put-$size-tls-$kind-$r" "$tls_port" "$tls_pid" put --obj.size "$size" --duration "$dur" --tls --insecure $sse
        # shellcheck disable=SC2086
        run "get-$size-tls-$kind-$r" "$tls_port" "$tls_pid" get --obj.size "$size" --objects "$objects" --duration "$dur" --tls --insecure $sse
    done
done
done
python3 - "$out" "$rounds" ${SIZES:-4KiB 1MiB 16MiB} <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def med(name, pick):
    return statistics.median(pick(json.load(open(f"{out}/{name}-{r}.json"))) for r in range(1, rounds + 1))
rate = lambda d: d["ops"][0]["mib_per_sec"]
objs = lambda d: d["ops"][0]["ops_per_sec"]
cpu = lambda d: d["server"]["cpu_percent"] / 100 / max(d["ops"][0]["mib_per_sec"], 1e-9) * 1000
print(f"medians of {rounds} rounds; 16 concurrent; share = encrypted / the plain run of the same transport")
for size in sizes:
    for op in ("put", "get"):
        for transport, kinds in (("http", ("plain", "s3", "kms")), ("tls", ("plain", "c"))):
            base = med(f"{op}-{size}-{transport}-plain", rate)
            for kind in kinds:
                name = f"{op}-{size}-{transport}-{kind}"
                m, o, c = med(name, rate), med(name, objs), med(name, cpu)
                share = "" if kind == "plain" else f"  {100 * m / base:5.1f} %"
                print(f"{op.upper()} {size:>5} {transport:4} {kind:5}: {m:8.1f} MiB/s {o:9.0f} obj/s  server {c:6.3f} ms CPU/MiB{share}")
PY
