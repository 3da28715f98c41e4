# Sourced by the warp-over-TLS scripts (pinned.sh and warp-tls.sh in this folder) from the
# checkout's root: one release strata over plain HTTP and one over
# TLS (4 folders each, EC 2+2, a fresh self-signed certificate), ready when this returns. Sets
# bin, warp, data, hp and tp (ports), h and t (pids); PIN (e.g. "taskset -c 0") runs both servers
# under it. Both are stopped and their data removed on exit.
bin=${BIN:-target/release/strata}
warp=$(scripts/install-warp.sh)
data=$(mktemp -d /tmp/warp-tls.XXXX)
mkdir -p "$data/certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$data/certs/private.key" -out "$data/certs/public.crt" 2>/dev/null
export STRATA_ROOT_USER=benchadmin STRATA_ROOT_PASSWORD=benchadmin-secret
hp=$((20000 + RANDOM % 10000)); tp=$((hp + 1))
# shellcheck disable=SC2086
${PIN:-} "$bin" server --address "127.0.0.1:$hp" "$data/h{1...4}" > "$data/http.log" 2>&1 & h=$!
# shellcheck disable=SC2086
${PIN:-} "$bin" server --address "127.0.0.1:$tp" --certs-dir "$data/certs" "$data/t{1...4}" > "$data/tls.log" 2>&1 & t=$!
trap 'kill $h $t 2>/dev/null; wait $h $t 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$hp/health/ready" >/dev/null && break; sleep 0.1; done
for _ in $(seq 100); do curl -ksf "https://127.0.0.1:$tp/health/ready" >/dev/null && break; sleep 0.1; done
