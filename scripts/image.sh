#!/usr/bin/env bash
# Builds the meshlearn container image with podman from Containerfile (Debian 12, Debian packages
# only) and tags it localhost/meshlearn:latest.
#
#   scripts/image.sh [--binaries DIR] [TAG]
#
# Without --binaries the image compiles meshlearn from the sources. With --binaries DIR it copies
# meshlearn-node, meshlearn-launch, meshlearn-heatmap and meshlearn-keygen from DIR instead (e.g.
# build/tools of this checkout, built on this Debian 12 host), and compiles nothing.
#
# The base image, in order of preference:
#   1. localhost/meshlearn-base:bookworm, when an earlier run made it;
#   2. docker.io/library/debian:bookworm, when a registry answers within 60 s;
#   3. otherwise made here with debootstrap (minbase) from the Debian mirror this machine's apt
#      uses, with the same apt sources, and kept as localhost/meshlearn-base:bookworm (about 30 s
#      once).
# The compiler cache lives in /var/cache/meshlearn/image-ccache (override: MESHLEARN_IMAGE_CCACHE)
# and podman keeps its layers, so a rebuild of unchanged sources takes seconds and a small change
# recompiles only what it touches. podman runs with deploy/containers.conf (runc, ulimits).
# Needs: podman runc debootstrap (scripts/setup.sh installs them). Run as root.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binaries=""
if [ "${1:-}" = "--binaries" ]; then
  binaries="$(cd "${2:?usage: scripts/image.sh [--binaries DIR] [TAG]}" && pwd)"
  shift 2
fi
tag="${1:-localhost/meshlearn:latest}"
export CONTAINERS_CONF="$root/deploy/containers.conf"
base_local=localhost/meshlearn-base:bookworm
ccache_dir="${MESHLEARN_IMAGE_CCACHE:-/var/cache/meshlearn/image-ccache}"

for tool in podman debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "image: $tool not found (scripts/setup.sh installs podman runc debootstrap)" >&2
    exit 1
  }
done

# The Debian mirror of this machine's apt sources (deb822 or one-line format).
debian_mirror() {
  local uri
  uri="$(grep -hs '^URIs:' /etc/apt/sources.list.d/debian.sources | head -1 | awk '{print $2}')"
  [ -n "$uri" ] || uri="$(grep -hsE '^deb\s' /etc/apt/sources.list | awk '{print $2}' | head -1)"
  echo "${uri:-http://deb.debian.org/debian}"
}

make_base() {
  local dir mirror
  dir="$(mktemp -d /var/tmp/meshlearn-base.XXXXXX)"
  trap 'rm -rf "$dir"' RETURN
  mirror="$(debian_mirror)"
  echo "image: no registry reached; making the base with debootstrap from $mirror"
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 || {
    echo "image: debootstrap failed; see $dir.log" >&2
    return 1
  }
  rm -f "$dir.log"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    # The same suites as this machine (updates, security), so both see the same versions.
    cp /etc/apt/sources.list.d/debian.sources "$dir/etc/apt/sources.list.d/debian.sources"
    : >"$dir/etc/apt/sources.list"
  fi
  rm -rf "$dir/var/cache/apt/archives/"*.deb "$dir/var/lib/apt/lists/"*
  tar -C "$dir" -c . | podman import --quiet - "$base_local" >/dev/null
}

if podman image exists "$base_local"; then
  base="$base_local"
elif timeout 60 podman pull --quiet docker.io/library/debian:bookworm >/dev/null 2>&1; then
  base=docker.io/library/debian:bookworm
else
  make_base
  base="$base_local"
fi

if [ -n "$binaries" ]; then
  for tool in meshlearn-node meshlearn-launch meshlearn-heatmap meshlearn-keygen; do
    [ -x "$binaries/$tool" ] || {
      echo "image: $binaries/$tool not found (build it first: scripts/build.sh)" >&2
      exit 1
    }
  done
  echo "image: building $tag from $base with the binaries of $binaries"
  podman build --network host --build-arg "BASE=$base" --target prebuilt \
    --build-context "binaries=$binaries" -f "$root/Containerfile" -t "$tag" "$root"
else
  mkdir -p "$ccache_dir"
  echo "image: building $tag from $base (ccache in $ccache_dir)"
  podman build --network host --build-arg "BASE=$base" --volume "$ccache_dir:/ccache" \
    -f "$root/Containerfile" -t "$tag" "$root"
fi
echo "image: built $tag"
