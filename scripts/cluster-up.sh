# Sourced by the cluster benchmarks (scripts/bench-cluster.sh,
# docs/bench/2026-11-29-round-trips/one-run.sh): `cluster_up BIN NODES LOGDIR` starts NODES
# `strata` processes on 127.0.0.1 over 8 drive folders (two per node, one set of 8; NODES=1: one
# process over the same 8 folders), waits until each is ready, and sets `data` (the folders'
# parent, under BIN's folder), `hosts` (host:port each), `host_list` (joined by commas) and
# `pids`. At exit the processes are stopped and the folders removed.
cluster_up() {
    local bin=$1 nodes=$2 logs=$3 base n d h
    data=$(mktemp -d "$(dirname "$bin")/bench-cluster.XXXX")
    base=$((20000 + RANDOM % 10000))
    local args=()
    hosts=()
    pids=()
    for n in 1 2 3 4; do
        for d in 1 2; do
            if [ "$nodes" = 1 ]; then args+=("$data/n$n/d$d"); mkdir -p "$data/n$n/d$d"
            else args+=("http://127.0.0.1:$((base + n))$data/n$n/d$d"); fi
        done
    done
    for n in $(seq "$nodes"); do hosts+=("127.0.0.1:$((base + n))"); done
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$data"' EXIT
    for n in $(seq "$nodes"); do
        STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
            STRATA_PROMETHEUS_AUTH_TYPE=public \
            "$bin" server --address "127.0.0.1:$((base + n))" "${args[@]}" > "$logs/server$n.log" 2>&1 &
        pids+=($!)
    done
    for h in "${hosts[@]}"; do
        for _ in $(seq 300); do curl -sf "http://$h/health/ready" >/dev/null && break; sleep 0.1; done
    done
    host_list=$(IFS=,; echo "${hosts[*]}")
}
