#!/usr/bin/env bash
# A bucket of N 0-byte objects on one server over 4 folders (EC 2+2), Strata and MinIO in the same
# run: the time to write them (`strata bench list --objects N`: its preparing phase, 32 clients),
# then every page of a ListObjectsV2 walk timed (list_pages.py), then the drives' bytes.
# Usage: docs/bench/2026-11-28-many-objects/run.sh N OUTDIR [strata|minio ...]
# (STRATA_BIN: a release strata; MINIO_BIN: a minio, default .tools/bin/minio)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
n=$1; out=$2; shift 2
mkdir -p "$out"
bin=${STRATA_BIN:-$root/target/release/strata}
minio=${MINIO_BIN:-$root/.tools/bin/minio}
for server in "${@:-strata minio}"; do
    data=$(mktemp -d "$root/target/many.XXXX")
    mkdir -p "$data"/d{1..4}
    port=$((20000 + RANDOM % 10000))
    if [ "$server" = strata ]; then
        STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off \
            "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > "$out/$server.log" 2>&1 &
    else
        MINIO_CI_CD=1 MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret MINIO_SCANNER_SPEED=slowest \
            "$minio" server --address "127.0.0.1:$port" --console-address "127.0.0.1:$((port + 1))" \
            "$data/d{1...4}" > "$out/$server.log" 2>&1 &
    fi
    pid=$!
    trap 'kill "$pid" 2>/dev/null; rm -rf "$data"' EXIT
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/minio/health/cluster" >/dev/null && break; sleep 0.1; done
    began=$(date +%s.%N)
    "$bin" bench list --obj.size 0B --objects "$n" --duration 1s --concurrent 32 --no-clear --bucket many \
        --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret --server-pid "$pid" \
        > "$out/$server-write.txt" 2>&1
    ended=$(date +%s.%N)
    python3 -c "print(f'$server: {$n} objects written in {$ended - $began - 1:.1f} s ({$n / ($ended - $began - 1):.0f} objects/s, bench list of 1 s included and taken off)')" | tee "$out/$server-summary.txt"
    "$root/.venv/bin/python" "$here/list_pages.py" "http://127.0.0.1:$port" many | tee -a "$out/$server-summary.txt"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    {
        echo "drive bytes (du --apparent-size / du):"
        du -sb "$data" | awk -v n="$n" '{printf "  apparent %.0f B, %.0f B per object\n", $1, $1 / n}'
        du -sk "$data" | awk -v n="$n" '{printf "  on disk %.0f KiB, %.0f B per object\n", $1, $1 * 1024 / n}'
        echo "files: $(find "$data" -type f | wc -l)"
        find "$data" -name 'index.redb' -printf '  index %s B %p\n' | sed "s|$data/||"
    } | tee -a "$out/$server-summary.txt"
    rm -rf "$data"
done
