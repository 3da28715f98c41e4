#!/usr/bin/env bash
# One `strata bench` run on four nodes (or NODES=1: one process) over the 8 folders of
# scripts/bench-cluster.sh, printing the operations per second, the servers' CPU time, and the
# node requests, index batches and index changes all servers counted during the run.
# Usage: one-run.sh BIN "BENCH ARGS"   e.g. one-run.sh target/release/strata "put --obj.size 4KiB --duration 15s --no-clear"
set -uo pipefail
bin=$1; work=$2; nodes=${NODES:-4}
cd "$(dirname "$0")/../../.."
logs=$(mktemp -d)
source scripts/cluster-up.sh
cluster_up "$bin" "$nodes" "$logs"
counters() {
    for h in "${hosts[@]}"; do curl -sf "http://$h/metrics"; done | awk '
        $1 ~ /^strata_node_rpc_requests_total/ { r += $NF }
        $1 ~ /^strata_drive_index_commits_total/ { c += $NF }
        $1 ~ /^strata_drive_index_changes_total/ { g += $NF }
        END { printf "%d %d %d\n", r, c, g }'
}
cpu() { local t=0; for p in "${pids[@]}"; do set -- $(cut -d' ' -f14,15 "/proc/$p/stat"); t=$((t + $1 + $2)); done; echo "$t"; }
read -r r0 c0 g0 < <(counters); t0=$(cpu)
"$bin" bench $work --host "$host_list" --access-key benchadmin \
    --secret-key benchadmin-secret --concurrent 16 2>/dev/null | grep -E "obj/s|latency"
read -r r1 c1 g1 < <(counters); t1=$(cpu)
echo "server CPU: $(( (t1 - t0) * 10 )) ms; node requests $((r1 - r0)); index batches $((c1 - c0)), changes $((g1 - g0))"
rm -rf "$logs"
