#!/usr/bin/env bash
# Syscalls of the server during a 10 s PUT 4 KiB run (strace -c -f), and the ops done.
set -euo pipefail
out=$1; bin=$2
data=$(mktemp -d /tmp/bench-sys.XXXX)
port=$((20000 + RANDOM % 10000))
STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret STRATA_SCANNER_INTERVAL=off STRATA_LIFECYCLE_INTERVAL=off \
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" > /dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
strace -c -f -p $pid -o "$out.strace" &
st=$!
sleep 0.5
"$bin" bench put --obj.size 4KiB --duration 10s --host "127.0.0.1:$port" --access-key benchadmin \
    --secret-key benchadmin-secret --concurrent 16 2>/dev/null > "$out.txt"
kill -INT $st; wait $st 2>/dev/null || true
grep -E "put " "$out.txt" | tail -1
grep -E "fdatasync|fsync|write|futex|epoll_wait|sendto|recvfrom|total" "$out.strace" | head -12
