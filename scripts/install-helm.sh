#!/usr/bin/env bash
# Builds Helm (a pinned release) into ./.tools/bin/helm, unless it is there already, and prints
# its path. tests/e2e/test_helm.py renders and lints deploy/helm/strata with it, and
# scripts/render-manifests.sh makes the plain manifests. How: scripts/install-go-tool.sh.
exec "$(dirname "$0")/install-go-tool.sh" helm helm.sh/helm/v3 v3.22.0 ./cmd/helm
