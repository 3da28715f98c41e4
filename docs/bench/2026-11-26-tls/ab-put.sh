#!/usr/bin/env bash
# PUT 1 MiB on one fresh server, plain or encrypted: 2026-11-26-sse-blocks/ab-get.sh with OP=put.
# usage: BIN=path/to/strata docs/bench/2026-11-26-tls/ab-put.sh plain|s3|kms SECONDS [stat|perf]
OP=put exec "$(dirname "$0")/../2026-11-26-sse-blocks/ab-get.sh" "$@"
