#!/usr/bin/env bash
# The encrypted and TLS GET ratios of the scale-out issue, with warp: GET 1 MiB (16 concurrent,
# 200 objects) against one release strata over plain HTTP and one over TLS (4 folders each,
# EC 2+2, built-in KMS), ROUNDS rounds, the four kinds in an order that turns each round:
# plain, SSE-S3 (plain HTTP), TLS, SSE-C over TLS (warp --encrypt: a random key per object).
# usage: BIN=target/release/strata ROUNDS=3 DURATION=20s docs/bench/2026-11-29-small-ops/warp-ratios.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
export STRATA_KMS_SECRET_KEY="bench-key:$(head -c 32 /dev/urandom | base64)"
source docs/bench/2026-11-26-sse/servers.sh
run() { # name port flags...
    local name=$1 port=$2; shift 2
    (cd "$data" && "$warp" get --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret \
        --obj.size 1MiB --objects 200 --concurrent 16 --duration "${DURATION:-20s}" --quiet "$@" 2>&1) \
        | grep -E '^ *\* Average' | head -1 | sed "s/^/$name /"
}
kinds=(plain sse-s3 tls sse-c-tls)
one() {
    case $1 in
        plain) run "plain-$2" "$hp" ;;
        sse-s3) run "sse-s3-$2" "$hp" --sse-s3-encrypt ;;
        tls) run "tls-$2" "$tp" --tls --insecure ;;
        sse-c-tls) run "sse-c-tls-$2" "$tp" --tls --insecure --encrypt ;;
    esac
}
for r in $(seq "${ROUNDS:-3}"); do
    for i in 0 1 2 3; do one "${kinds[$(( (i + r - 1) % 4 ))]}" "$r"; done
done
