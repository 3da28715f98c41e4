#!/bin/bash
cd /work/main
for round in $(seq ${ROUNDS:-4}); do
  for bin in before after; do
    for kind in plain s3 kms; do
      echo "== round $round $bin $kind $SIZE"
      BIN=/tmp/strata-$bin SIZE=$SIZE OBJECTS=$OBJECTS docs/bench/2026-11-26-sse-blocks/ab-get.sh $kind 10 stat
      grep -E "task-clock|sys_enter|context" /tmp/prof/stat-$kind.txt | awk '{print "   stat", $1, $2}'
    done
  done
done
