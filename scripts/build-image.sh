#!/usr/bin/env bash
# Builds Strata's container image from a static release binary: FROM scratch, see
# deploy/container/Containerfile. The binary is glibc linked statically (`+crt-static`, a
# static-pie executable without a program interpreter): musl's allocator serialises threads and
# mimalloc on musl held four times glibc's memory under load (docs/bench/2026-11-27-deploy.md).
# Prints the image's tag on stdout (progress goes to stderr).
#
#   scripts/build-image.sh [TAG]          default localhost/strata:dev
#
# Installs podman when it is missing (apt, as root). CONTAINER_TOOL=docker uses docker instead
# of podman. Multi-arch: docs/deploy.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/strata:dev}
tool=${CONTAINER_TOOL:-podman}

case "$(uname -m)" in
    x86_64) arch=amd64 target=x86_64-unknown-linux-gnu ;;
    aarch64) arch=arm64 target=aarch64-unknown-linux-gnu ;;
    *) echo "build-image.sh: no target known for $(uname -m)" >&2; exit 1 ;;
esac

missing=()
# glibc's static archives (libc.a) come with libc6-dev, which the Rust toolchain already needs.
[ -f /usr/lib/$(uname -m)-linux-gnu/libc.a ] || missing+=(libc6-dev)
command -v "$tool" >/dev/null || missing+=("$tool")
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "build-image.sh: install ${missing[*]} first" >&2
        exit 1
    fi
    echo "installing ${missing[*]}" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

# Naming the target keeps the static flags off build scripts and away from target/release.
# A static binary cannot look glibc's getrandom() up at run time, so the getrandom crate would
# fall back to reading /dev/random, which a bare chroot lacks: it is told to call glibc's.
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static --cfg getrandom_backend=\"linux_getrandom\"" \
    cargo build --release --locked --target "$target" -p strata >&2
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
binary="$target_dir/$target/release/strata"

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
# The line tables stay in the cargo build (for profiles); the image gets a stripped copy.
strip -o "$context/strata-$arch" "$binary"
printf 'root:x:0:0:root:/:/sbin/nologin\nstrata:x:1000:1000:Strata:/data:/sbin/nologin\n' > "$context/passwd"
printf 'root:x:0:\nstrata:x:1000:\n' > "$context/group"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$context/"
else
    echo "build-image.sh: no /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates): the image trusts no roots" >&2
    : > "$context/ca-certificates.crt"
fi
mkdir "$context/data"
format=()
# podman writes OCI images unless told otherwise, and OCI images have no HEALTHCHECK.
[ "$tool" = podman ] && format=(--format docker)
"$tool" build "${format[@]}" --platform "linux/$arch" -f deploy/container/Containerfile -t "$tag" "$context" >&2
echo "$tag"
