#!/usr/bin/env bash
# The whole test suite, from a fresh checkout: formatting and lints, every Rust test (unit,
# property, integration), then end-to-end tests that drive a real `strata` through boto3 and the
# aws cli on 127.0.0.1. Python tools are installed into ./.venv on first use.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
# Real servers the tests start (Debian's packages): NATS for notifications, Prometheus for
# MinIO's dashboard queries, Chromium for the console's browser tests. The container image test needs podman, which
# scripts/build-image.sh installs; Helm is built by scripts/install-helm.sh.
missing=()
command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet
# The binary's path comes from cargo: CARGO_TARGET_DIR may put it anywhere.
STRATA_BIN="$(scripts/build-strata.sh)"
export STRATA_BIN
export PATH="$PWD/.venv/bin:$PATH"
.venv/bin/python -m pytest -q tests/e2e
