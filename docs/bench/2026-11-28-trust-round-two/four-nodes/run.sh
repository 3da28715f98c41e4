#!/usr/bin/env bash
# Four nodes, before and after, alternated round by round (scripts/bench-cluster.sh each time,
# fresh folders). Usage: run.sh BEFORE_BIN AFTER_BIN ROUNDS
set -euo pipefail
cd "$(dirname "$0")"
before=$1 after=$2 rounds=${3:-3}
for r in $(seq "$rounds"); do
    for side in before after; do
        bin=$before; [ "$side" = after ] && bin=$after
        STRATA_BIN=$bin ../../../../scripts/bench-cluster.sh "$PWD/raw/$side-$r" > /dev/null
    done
done
