#!/usr/bin/env bash
# Builds a Go program at a pinned module version into ./.tools/bin/NAME, unless it is there
# already, and prints its path. Usage: scripts/install-go-tool.sh NAME MODULE VERSION [PACKAGE]
# (PACKAGE: the main package's folder in the module when it is not the module's root, as
# `./cmd/helm`)
# (scripts/install-warp.sh and scripts/install-mc.sh name the tools the e2e tests run).
#
# The Go module proxy here may serve a module's release archive without its version list or a
# checksum-database entry, so `go install MODULE@VERSION` refuses it; the archive is fetched with
# the checksum database skipped for this one module (its dependencies are still verified against
# its go.sum and the database), then built from the module cache.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 module=$2 version=$3 package=${4:-.}
out="$PWD/.tools/bin/$name"
if [ -x "$out" ]; then
    echo "$out"
    exit 0
fi
if ! command -v go >/dev/null; then
    echo "install-$name: no Go toolchain on PATH; install Go (https://go.dev/dl/) or put a $name binary at $out" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
export GONOSUMDB=$module GOFLAGS=-mod=mod
dir="$(cd /tmp && go mod download -json "$module@$version" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
(cd "$dir" && go build -o "$out" "$package") >&2
echo "$out"
