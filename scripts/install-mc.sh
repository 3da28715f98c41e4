#!/usr/bin/env bash
# Builds MinIO's `mc` client (a pinned release) into ./.tools/bin/mc, unless it is there
# already, and prints its path. tests/e2e/test_listen.py runs `mc watch` against Strata's
# listen API. How: scripts/install-go-tool.sh.
#
# mc's releases are tagged RELEASE.<date>, not semantic versions, so Go names them by a
# pseudo-version: this one is RELEASE.2025-07-21T05-28-08Z, commit ee72571.
exec "$(dirname "$0")/install-go-tool.sh" mc github.com/minio/mc v0.0.0-20250721052808-ee72571936f1
