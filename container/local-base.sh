#!/usr/bin/env bash
# A Debian 12 (bookworm) base image made locally, for machines that can reach Debian's package mirror but no image
# registry (Docker Hub): debootstrap builds a minimal root file system, `podman import` (or `docker import`) turns
# it into an image. Then: make container-test CONTAINER_BASE=localhost/debian:bookworm
# Usage: container/local-base.sh [IMAGE] [MIRROR]   (default localhost/debian:bookworm, http://deb.debian.org/debian)
# Needs: root, debootstrap, and podman or docker (set CONTAINER=... to choose). One to four minutes (the mirror),
# 121 MB of image.
set -euo pipefail
image="${1:-localhost/debian:bookworm}"
mirror="${2:-http://deb.debian.org/debian}"
engine="${CONTAINER:-$(command -v podman || command -v docker || true)}"
[ -n "$engine" ] || { echo "local-base.sh: neither podman nor docker found" >&2; exit 2; }
# podman's storage under CONTAINER_STORE when set (as container/test.sh uses it)
store_args=()
if [ -n "${CONTAINER_STORE:-}" ] && [ "$(basename "$engine")" = podman ]; then
  store_args=(--root "$CONTAINER_STORE/root" --runroot "$CONTAINER_STORE/run")
fi
rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >&2
# debootstrap writes `bookworm main` only: the updates and security suites as Debian's own images have them
rm -f "$rootfs/etc/apt/sources.list"
cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | "$engine" "${store_args[@]}" import - "$image" >&2
echo "$image"
