#!/usr/bin/env bash
# A/B of two release builds on warp GET 1 MiB over plain HTTP and TLS: ROUNDS alternations of
# the pinned harness (server on CPU 0, warp on CPU 1: pinned.sh) and of the unpinned one
# (2026-11-26-sse-buffers/warp-tls.sh), each build's servers started afresh every time.
# usage: ROUNDS=3 docs/bench/2026-11-26-tls/ab.sh BEFORE_BIN AFTER_BIN > docs/bench/2026-11-26-tls/ab.txt
set -euo pipefail
cd "$(dirname "$0")/../../.."
before=$1 after=$2
for r in $(seq "${ROUNDS:-3}"); do
    for b in before after; do
        bin=$before; [ $b = after ] && bin=$after
        BIN=$bin ROUNDS=1 docs/bench/2026-11-26-tls/pinned.sh 2>&1 | grep -E '^(http|tls)' | sed "s/^/pinned $b $r /"
    done
done
for r in $(seq "${ROUNDS:-3}"); do
    for b in before after; do
        bin=$before; [ $b = after ] && bin=$after
        BIN=$bin ROUNDS=1 DURATION=15s docs/bench/2026-11-26-sse-buffers/warp-tls.sh 2>&1 | grep -E '^(http|tls)' | sed "s/^/unpinned $b $r /"
    done
done
