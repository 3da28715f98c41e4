#!/usr/bin/env bash
# The import benchmark: a real MinIO (MINIO_BIN, built from source with the Go toolchain)
# filled by load.py, stopped, then imported by STRATA_BIN with --parallel 1 and 32 from the
# same pristine copy. Usage: run.sh OUTDIR [SMALL LARGE MULTIPART VERSIONED]
set -euo pipefail
out=$1; shift
counts=("${@:-20000 100 4 2000}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
data=${DATA:-/tmp/strata-import-bench}
mkdir -p "$out"
rm -rf "$data" && mkdir -p "$data"/d{1..4}
# MINIO_CI_CD: MinIO refuses folders on the root file system otherwise ("drive not found").
MINIO_CI_CD=1 MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret "$MINIO_BIN" server --quiet \
  --address 127.0.0.1:9400 "$data"/d{1...4} > "$out/minio.log" 2>&1 &
minio=$!
trap 'kill $minio 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:9400/minio/health/ready >/dev/null && break; sleep 0.2; done
ENDPOINT=http://127.0.0.1:9400 KEY=benchadmin SECRET=benchadmin-secret \
  "$root/.venv/bin/python" "$here/load.py" ${counts[@]} | tee "$out/load.txt"
kill "$minio"; wait "$minio" || true
# The import refuses drives a MinIO wrote to in the last minute.
sleep 61
du -sh "$data" | tee "$out/size.txt"
# Timed without strace (which slows a syscall-heavy process several fold), then again under
# strace for the sync counts. The import never changes MinIO's files: removing .strata.sys puts
# the drives back as MinIO left them.
for p in 1 32; do
  rm -rf "$data"/d*/.strata.sys && sync
  start=$(date +%s.%N)
  "$STRATA_BIN" import minio --parallel "$p" --json "$data"/d{1...4} > "$out/import-parallel-$p.json" 2> /dev/null
  end=$(date +%s.%N)
  echo "parallel $p: $(echo "$end - $start" | bc) s" | tee -a "$out/times.txt"
  rm -rf "$data"/d*/.strata.sys && sync
  strace -c -f -e trace=fsync,fdatasync,sync_file_range -o "$out/syncs-parallel-$p.txt" \
    "$STRATA_BIN" import minio --parallel "$p" --json "$data"/d{1...4} > /dev/null 2>&1
done
