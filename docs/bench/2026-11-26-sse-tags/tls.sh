#!/bin/bash
cd /work/main
for round in 1 2 3; do
  for bin in before after2; do
    for kind in plain c; do
      echo "== round $round $bin $kind"
      PERF=0 docs/bench/2026-11-26-sse-buffers/ab-get-tls.sh /tmp/strata-$bin $kind
    done
  done
done
