#!/usr/bin/env bash
# The #11 IAM figures in docs/bench: (1) one release `strata` over 4 folders (EC 2+2) with 1,000
# users and 1,000 named policies loaded; GET 4 KiB at 16 concurrent by root and by a non-root user
# whose policy has conditions, in alternating rounds; (2) four nodes on 127.0.0.1: how long after
# a policy change on node 1 every node answers by the new policy (scripts/iam_propagation.py).
# Usage: scripts/bench-iam.sh [OUTDIR] [ROUNDS]   (STRATA_BIN=path: use that binary)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/bench/$(date +%F)-iam}
rounds=${2:-10}
mkdir -p "$out"
bin=${STRATA_BIN:-$(scripts/build-strata.sh --release)}
py=${PYTHON:-.venv/bin/python}
data=$(mktemp -d "$(dirname "$bin")/bench-iam.XXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$data"' EXIT
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret

wait_ready() { for _ in $(seq 300); do curl -sf "http://$1/health/ready" >/dev/null && return; sleep 0.1; done; echo "$1 not ready" >&2; exit 1; }

# --- (1) one node, 1,000 users and policies -------------------------------------------------
port=$((20000 + RANDOM % 10000))
host=127.0.0.1:$port
STRATA_SCANNER_INTERVAL=off "$bin" server --address "$host" "$data/one/d{1...4}" > "$out/server.log" 2>&1 &
pid=$!
pids+=("$pid")
wait_ready "$host"
export STRATA_ADMIN_HOST=$host
# A policy with conditions, as a team's application key would carry: source network, plain
# transport, a time window, a prefix condition on listing, and an explicit deny that does not match.
cat > "$data/bench-policy.json" <<'JSON'
{"Version": "2012-10-17", "Statement": [
  {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
   "Resource": "arn:aws:s3:::strata-bench/*",
   "Condition": {"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "127.0.0.0/8"]},
                 "Bool": {"aws:SecureTransport": "false"},
                 "DateLessThan": {"aws:CurrentTime": "2099-01-01T00:00:00Z"}}},
  {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:CreateBucket"], "Resource": "arn:aws:s3:::strata-bench",
   "Condition": {"StringLikeIfExists": {"s3:prefix": ["", "*"]}}},
  {"Effect": "Deny", "Action": "s3:*", "Resource": "*",
   "Condition": {"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8", "127.0.0.0/8"]}}}
]}
JSON
start=$(date +%s)
"$py" - "$data" <<'PY'
import json, sys
d = sys.argv[1]
for i in range(1000):
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": f"arn:aws:s3:::team-{i:04}/${{aws:username}}/*",
         "Condition": {"IpAddress": {"aws:SourceIp": "10.%d.0.0/16" % (i % 256)}}},
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::team-{i:04}",
         "Condition": {"StringLike": {"s3:prefix": "${aws:username}/*"}}}]}
    with open(f"{d}/p{i:04}.json", "w") as f:
        json.dump(doc, f)
PY
seq -f "%04g" 0 999 | xargs -P 4 -I{} "$bin" admin policy create "p{}" "$data/p{}.json" > /dev/null
seq -f "%04g" 0 999 | xargs -P 4 -I{} "$bin" admin user add "user{}" "secret-of-user{}" > /dev/null
seq -f "%04g" 0 999 | xargs -P 4 -I{} "$bin" admin policy attach "p{}" --user "user{}" > /dev/null
"$bin" admin policy create bench-policy "$data/bench-policy.json" > /dev/null
"$bin" admin user add benchuser benchuser-secret > /dev/null
"$bin" admin policy attach bench-policy --user benchuser > /dev/null
users=$("$bin" admin user list --json | "$py" -c 'import json,sys; d=json.load(sys.stdin); print(len(d if isinstance(d, list) else d.get("users", d)))')
policies=$("$bin" admin policy list --json | "$py" -c 'import json,sys; d=json.load(sys.stdin); print(len(d if isinstance(d, list) else d.get("policies", d)))')
echo "loaded: $users users, $policies policies (built-ins included) in $(( $(date +%s) - start )) s" | tee "$out/load.txt"

run() {
    local name=$1 key=$2 secret=$3
    "$bin" bench get --obj.size 4KiB --objects 2000 --duration 6s --concurrent 16 --host "$host" \
        --access-key "$key" --secret-key "$secret" --server-pid "$pid" \
        --json "$out/$name.json" 2>/dev/null | tee "$out/$name.txt"
}
# Alternating order (root first, then the user first, ...) so neither side always runs second.
for r in $(seq "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
        run "get-4KiB-root-$r" benchadmin benchadmin-secret
        run "get-4KiB-user-$r" benchuser benchuser-secret
    else
        run "get-4KiB-user-$r" benchuser benchuser-secret
        run "get-4KiB-root-$r" benchadmin benchadmin-secret
    fi
done
"$py" - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ops = lambda who, r: json.load(open(f"{out}/get-4KiB-{who}-{r}.json"))["ops"][0]["ops_per_sec"]
pairs = [(ops("root", r), ops("user", r)) for r in range(1, rounds + 1)]
for r, (root, user) in enumerate(pairs, 1):
    print(f"round {r:2}: root {root:8.0f} obj/s  user {user:8.0f} obj/s  user/root {user / root:6.3f}")
ratios = [u / r for r, u in pairs]
print(f"GET 4 KiB, 16 concurrent, {rounds} alternating rounds: root mean {statistics.mean(p[0] for p in pairs):.0f}, "
      f"user mean {statistics.mean(p[1] for p in pairs):.0f} obj/s; user/root median {statistics.median(ratios):.3f}, "
      f"of the sums {sum(p[1] for p in pairs) / sum(p[0] for p in pairs):.3f}")
PY
kill "$pid"; wait "$pid" 2>/dev/null || true

# --- (2) four nodes: a policy change reaches every node --------------------------------------
base=$((20000 + RANDOM % 10000))
args=(); hosts=()
for n in 1 2 3 4; do
    hosts+=("127.0.0.1:$((base + n))")
    for d in 1 2; do args+=("http://127.0.0.1:$((base + n))$data/four/n$n/d$d"); done
done
for n in 1 2 3 4; do
    STRATA_SCANNER_INTERVAL=off "$bin" server --address "127.0.0.1:$((base + n))" "${args[@]}" \
        > "$out/node$n.log" 2>&1 &
    pids+=($!)
done
for h in "${hosts[@]}"; do wait_ready "$h"; done
"$py" scripts/iam_propagation.py --bin "$bin" --trials 20 "${hosts[@]}" | tee "$out/propagation.txt"
