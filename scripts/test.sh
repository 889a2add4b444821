#!/usr/bin/env bash
# Installs everything (scripts/setup.sh test), builds everything, and runs the whole test suite,
# in phases:
#   install     scripts/setup.sh test;
#   build       the full Release build in build/, tests included;
#   ctest       every CTest test of that build but the `image` label (`engines`, `deploy`,
#               `browser` and the rest included);
#   sanitizers  an AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) of the
#               torch-free modules, running their tests (base, protocol, topology, similarity)
#               and the documents' (docs) again under the sanitizers;
#   fuzz        a clang build (build-fuzz/) that fuzzes the protocol decoder for
#               MESHLEARN_FUZZ_SECONDS (60) seconds (ctest -L fuzz), skipped with a one-line
#               reason when clang++ or libFuzzer is missing;
#   sim-fuzz    the simulator as a fault fuzzer (docs/development.md "The fault fuzzer"): seeds 1
#               to MESHLEARN_SIM_FUZZ_SEEDS (60) of `meshlearn-launch fuzz` must keep every
#               invariant, and its canary must be caught within 3 seeds;
#   image       the `image` label: the container image, made from build/'s binaries, runs a
#               three-container mesh (tests/deploy/container_test.py).
# At the end (also after a failure) it prints each phase's wall time. Exits non-zero on any
# failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/phases.sh
source scripts/phases.sh
phases_start test passed

phases_begin install
bash scripts/setup.sh test

phases_begin build
bash scripts/build.sh -DMESHLEARN_BUILD_TESTS=ON

phases_begin ctest
ctest --test-dir build --output-on-failure -j2 -LE image

phases_begin sanitizers
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMESHLEARN_WITH_TORCH=OFF \
  -DMESHLEARN_SANITIZE=ON >/dev/null
cmake --build build-asan -j2
ctest --test-dir build-asan --output-on-failure -j2 -L "base|protocol|topology|similarity|docs"

phases_begin fuzz
fuzz_skip=""
if ! command -v clang++ >/dev/null 2>&1; then
  fuzz_skip="clang++ not found (scripts/setup.sh installs clang)"
else
  fuzz_probe="$(mktemp -d)"
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' \
    >"$fuzz_probe/probe.cc"
  if ! clang++ -fsanitize=fuzzer "$fuzz_probe/probe.cc" -o "$fuzz_probe/probe" >/dev/null 2>&1; then
    fuzz_skip="clang++ cannot link -fsanitize=fuzzer (scripts/setup.sh installs libclang-rt-14-dev)"
  fi
  rm -rf "$fuzz_probe"
fi
if [ -n "$fuzz_skip" ]; then
  echo "test: fuzz step skipped: $fuzz_skip"
else
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMESHLEARN_WITH_TORCH=OFF -DMESHLEARN_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j2 --target protocol_decode_fuzzer
  ctest --test-dir build-fuzz --output-on-failure -L fuzz
fi

phases_begin sim-fuzz
sim_fuzz_out="build/sim-fuzz"
rm -rf "$sim_fuzz_out" && mkdir -p "$sim_fuzz_out"
build/tools/meshlearn-launch fuzz --seeds "${MESHLEARN_SIM_FUZZ_SEEDS:-60}" --from 1 \
  --out "$sim_fuzz_out" | grep -v ': ok ('
if build/tools/meshlearn-launch fuzz --seeds 3 --from 1 --canary --no-reduce \
  --determinism-every 0 --out "$sim_fuzz_out/canary" >"$sim_fuzz_out/canary.log"; then
  echo "test: the fuzzer's canary was not caught in seeds 1-3 (see $sim_fuzz_out/canary.log)"
  exit 1
fi
grep '^fuzz: rounds-contiguous failed' "$sim_fuzz_out/canary.log" | sed 's/^fuzz:/fuzz canary:/'

phases_begin image
ctest --test-dir build --output-on-failure -L image
