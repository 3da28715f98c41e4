#!/usr/bin/env bash
# The 4-node figures in docs/bench: four release `strata` processes on this machine (ports on
# 127.0.0.1, two drive folders each, one set of 8 drives, EC 4+4), driven by `strata bench` at
# 16 concurrent clients spread over all four endpoints. NODES=1 runs the baseline instead: one
# process over the same 8 folders (same EC 4+4, same bytes to the disk).
# Usage: scripts/bench-cluster.sh [OUTDIR]
# (STRATA_BIN=path uses that binary instead of building one: for before/after comparisons.)
#
# Round trips: each run's `rpc.txt` line divides the node-to-node requests all nodes sent
# (`strata_node_rpc_requests_total`, summed) by the S3 operations they served in that run. A GET
# run also prepares its objects with PUTs first; its GET-only figure subtracts those PUTs at the
# rate the PUT run of the same size measured just before (PUT runs leave their objects: their
# clean-up would be counted as theirs).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-cluster}
nodes=${NODES:-4}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
source scripts/cluster-up.sh
cluster_up "$bin" "$nodes" "$out"
# Sum of a counter over every node (label filter as a regular expression on the line).
counter() {
    for h in "${hosts[@]}"; do curl -sf "http://$h/metrics"; done |
        awk -v m="$1" -v f="${2:-}" '$1 ~ "^"m"({|$)" && $0 ~ f { s += $NF } END { printf "%d\n", s }'
}
declare -A rpc_per_put
run() {
    local name=$1 size=$4; shift
    local rpc0 puts0 gets0 rpc1 puts1 gets1
    rpc0=$(counter strata_node_rpc_requests_total)
    puts0=$(counter strata_s3_requests_total 'api="PutObject"')
    gets0=$(counter strata_s3_requests_total 'api="GetObject"')
    "$bin" bench "$@" --host "$host_list" --access-key benchadmin --secret-key benchadmin-secret \
        --concurrent 16 --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
    rpc1=$(counter strata_node_rpc_requests_total)
    puts1=$(counter strata_s3_requests_total 'api="PutObject"')
    gets1=$(counter strata_s3_requests_total 'api="GetObject"')
    python3 - "$name" "$size" $((rpc1 - rpc0)) $((puts1 - puts0)) $((gets1 - gets0)) \
        "${rpc_per_put[$size]:-}" <<'PY' | tee -a "$out/rpc.txt"
import sys
name, size, rpc, puts, gets, put_rate = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6]
if gets == 0:
    print(f"{name}: {rpc} node requests / {puts} PUTs = {rpc / max(puts, 1):.2f} per PUT")
else:
    own = rpc - puts * float(put_rate or 0)
    print(f"{name}: {rpc} node requests / {gets} GETs (+{puts} preparing PUTs at {put_rate or 0} each)"
          f" = {own / gets:.2f} per GET")
PY
    if [ "$1" = put ]; then
        rpc_per_put[$size]=$(python3 -c "print(round(($rpc1 - $rpc0) / max($puts1 - $puts0, 1), 3))")
    fi
}
: > "$out/rpc.txt"
run put-4KiB put --obj.size 4KiB --duration 15s --no-clear
run get-4KiB get --obj.size 4KiB --objects 2000 --duration 15s
run put-1MiB put --obj.size 1MiB --duration 15s --no-clear
run get-1MiB get --obj.size 1MiB --objects 200 --duration 15s
