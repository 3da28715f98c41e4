#!/usr/bin/env bash
# Healing figures for docs/bench: refill of a replaced drive (10,000 small objects; 200 large
# ones), and foreground GET latency while a refill runs at low and at high priority.
# A release strata over 4 folders (EC 2+2) on this machine. Usage: scripts/bench-heal.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-healing}
mkdir -p "$out"
bin=$(scripts/build-strata.sh --release)
data=$(mktemp -d "$(dirname "$bin")/heal-bench.XXXX")
port=$((20000 + RANDOM % 10000))
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
export STRATA_SCANNER_INTERVAL=off STRATA_DRIVE_CHECK_INTERVAL=1h
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$data"' EXIT
start() {
    "$bin" server --address "127.0.0.1:$port" "$data/d{1...4}" >> "$out/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && return; sleep 0.1; done
    echo "server did not start" >&2; exit 1
}
bench() { "$bin" bench "$@" --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret; }
status() { "$bin" admin heal status --json --host "127.0.0.1:$port" --access-key benchadmin --secret-key benchadmin-secret; }
wait_idle() {
    sleep 1
    until status | python3 -c 'import json,sys; s=json.load(sys.stdin)["scan"]; sys.exit(0 if s["state"]=="idle" and s["finished"] else 1)'; do sleep 0.5; done
}
wipe_and_restart() { stop; rm -rf "$data/d2"; mkdir "$data/d2"; start; }

parts=${HEAL_BENCH_PARTS:-12}
# 1. Refill: 10,000 objects of 4 KiB, then 200 of 16 MiB (separate deployments).
[[ $parts == *1* ]] && for spec in "small 4KiB 10000" "large 16MiB 200"; do
    set -- $spec
    rm -rf "$data"/d*; start
    bench get --obj.size "$2" --objects "$3" --duration 1s --no-clear --bucket "heal-$1" --concurrent 16 >/dev/null 2>&1
    STRATA_HEAL_PRIORITY=high wipe_and_restart
    wait_idle
    status > "$out/refill-$1.json"
    python3 - "$out/refill-$1.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["scan"]
secs = max(s["finished"] - s["started"], 1)
print(f"refill {s['objects_healed']} objects, {s['bytes_healed']/2**20:.0f} MiB rebuilt in {secs} s: "
      f"{s['objects_healed']/secs:.0f} objects/s, {s['bytes_healed']/2**20/secs:.1f} MiB/s "
      f"(failed {s['objects_failed']}, remaining {s['objects_remaining']})")
PY
    stop
done | tee "$out/refill.txt"

# 2. Foreground GET 1 MiB (8 concurrent) with no healing, then during a refill of 200 x 16 MiB.
[[ $parts == *2* ]] || exit 0
rm -rf "$data"/d*; start
bench get --obj.size 16MiB --objects 200 --duration 1s --no-clear --bucket heal-large --concurrent 16 >/dev/null 2>&1
bench get --obj.size 1MiB --objects 200 --duration 15s --concurrent 8 --bucket fg-bench --json "$out/get-baseline.json" \
    2>/dev/null | grep -E "get|latency" | tee "$out/get-baseline.txt"
for prio in low high; do
    export STRATA_HEAL_PRIORITY=$prio
    wipe_and_restart
    bench get --obj.size 1MiB --objects 200 --duration 15s --concurrent 8 --bucket fg-bench --json "$out/get-during-$prio.json" \
        2>/dev/null | grep -E "get|latency" | tee "$out/get-during-$prio.txt"
    status > "$out/heal-during-$prio.json"
    wait_idle
    status > "$out/heal-after-$prio.json"
done
