#!/usr/bin/env bash
# Builds the `strata` binary and prints its path, as cargo reports it, so callers work wherever
# the target directory is (CARGO_TARGET_DIR, a `build.target-dir` setting, or ./target).
# Usage: scripts/build-strata.sh [--release]   (diagnostics go to stderr)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p strata --bin strata "$@" --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
paths = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m.get("executable")]
if not paths:
    sys.exit("cargo reported no strata executable")
print(paths[-1])
'
