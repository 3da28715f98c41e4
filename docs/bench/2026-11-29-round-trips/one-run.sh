#!/usr/bin/env bash
# One `strata bench` run on four nodes (or NODES=1: one process) over the 8 folders of
# scripts/bench-cluster.sh, printing the operations per second, the servers' CPU time, and the
# node requests, index batches and index changes all servers counted during the run.
# Usage: one-run.sh BIN "BENCH ARGS"   e.g. one-run.sh target/release/strata "put --obj.size 4KiB --duration 15s --no-clear"
set -uo pipefail
bin=$1; work=$2; nodes=${NODES:-4}
cd "$(dirname "$0")/../../.."
data=$(mktemp -d "$PWD/target/one-run.XXXX")
base=$((20000 + RANDOM % 10000))
args=(); hosts=(); pids=()
for n in 1 2 3 4; do for d in 1 2; do
    if [ "$nodes" = 1 ]; then args+=("$data/n$n/d$d"); mkdir -p "$data/n$n/d$d"
    else args+=("http://127.0.0.1:$((base + n))$data/n$n/d$d"); fi
done; done
for n in $(seq "$nodes"); do hosts+=("127.0.0.1:$((base + n))"); done
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$data"' EXIT
for n in $(seq "$nodes"); do
    STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
        STRATA_PROMETHEUS_AUTH_TYPE=public \
        "$bin" server --address "127.0.0.1:$((base + n))" "${args[@]}" > "$data.server$n.log" 2>&1 &
    pids+=($!)
done
for h in "${hosts[@]}"; do
    for _ in $(seq 300); do curl -sf "http://$h/health/ready" >/dev/null && break; sleep 0.1; done
done
counters() {
    for h in "${hosts[@]}"; do curl -sf "http://$h/metrics"; done | awk '
        $1 ~ /^strata_node_rpc_requests_total/ { r += $NF }
        $1 ~ /^strata_drive_index_commits_total/ { c += $NF }
        $1 ~ /^strata_drive_index_changes_total/ { g += $NF }
        END { printf "%d %d %d\n", r, c, g }'
}
cpu() { local t=0; for p in "${pids[@]}"; do set -- $(cut -d' ' -f14,15 "/proc/$p/stat"); t=$((t + $1 + $2)); done; echo "$t"; }
read -r r0 c0 g0 < <(counters); t0=$(cpu)
"$bin" bench $work --host "$(IFS=,; echo "${hosts[*]}")" --access-key benchadmin \
    --secret-key benchadmin-secret --concurrent 16 2>/dev/null | grep -E "obj/s|latency"
read -r r1 c1 g1 < <(counters); t1=$(cpu)
echo "server CPU: $(( (t1 - t0) * 10 )) ms; node requests $((r1 - r0)); index batches $((c1 - c0)), changes $((g1 - g0))"
rm -f "$data".server*.log
