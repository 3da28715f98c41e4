#!/usr/bin/env bash
# PUT 1 MiB on one fresh server, plain or encrypted: raw-sse-blocks/ab-get.sh with OP=put.
# usage: BIN=path/to/strata docs/bench/raw-put/ab-put.sh plain|s3|kms SECONDS [stat|perf]
OP=put exec "$(dirname "$0")/../raw-sse-blocks/ab-get.sh" "$@"
