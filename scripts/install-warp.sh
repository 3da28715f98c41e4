#!/usr/bin/env bash
# Builds MinIO's `warp` benchmark client (a pinned release) into ./.tools/bin/warp, unless it is
# there already, and prints its path. The e2e tests run it against Strata with SSE-C over TLS
# and with SSE-S3, as the encryption issue asks. How: scripts/install-go-tool.sh.
exec "$(dirname "$0")/install-go-tool.sh" warp github.com/minio/warp v1.3.1
