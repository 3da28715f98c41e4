#!/usr/bin/env bash
# Builds MinIO's KES server (a pinned release) into ./.tools/bin/kes, unless it is there
# already, and prints its path. tests/e2e/test_sse_kes.py runs it as Strata's KMS. How:
# scripts/install-go-tool.sh.
exec "$(dirname "$0")/install-go-tool.sh" kes github.com/minio/kes v0.24.0 ./cmd/kes
