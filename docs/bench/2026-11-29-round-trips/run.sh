#!/usr/bin/env bash
# Before/after of the fewer node round trips (2026-11-29): four nodes and one process
# (scripts/bench-cluster.sh), the two builds alternating: four nodes before, after, before,
# after; then one process before, after.
# Usage: run.sh BEFORE_BIN AFTER_BIN [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
before=$1; after=$2
out=${3:-docs/bench/2026-11-29-round-trips/raw}
for r in 1 2; do
    STRATA_BIN=$before scripts/bench-cluster.sh "$out/four-before-$r"
    STRATA_BIN=$after scripts/bench-cluster.sh "$out/four-after-$r"
done
STRATA_BIN=$before NODES=1 scripts/bench-cluster.sh "$out/one-before"
STRATA_BIN=$after NODES=1 scripts/bench-cluster.sh "$out/one-after"
