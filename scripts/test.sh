#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite:
#   1. the full Release build and every CTest test (all labels, `engines`, `deploy` and `image`
#      included; `image` builds the container image, slow only the first time on a machine);
#   2. a sanitizer build (AddressSanitizer + UndefinedBehaviorSanitizer) of the torch-free
#      modules, running their tests (protocol, topology, similarity) again under the sanitizers;
#   3. a clang build (build-fuzz/) that fuzzes the protocol decoder for MESHLEARN_FUZZ_SECONDS (60)
#      seconds (ctest -L fuzz), skipped with a one-line reason when clang++ or libFuzzer is missing.
# Exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j2

echo "test: sanitizer build of the torch-free modules (build-asan/)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMESHLEARN_WITH_TORCH=OFF \
  -DMESHLEARN_SANITIZE=ON >/dev/null
cmake --build build-asan -j2
ctest --test-dir build-asan --output-on-failure -j2 -L "base|protocol|topology|similarity"

echo "test: fuzzing the protocol decoder (build-fuzz/)"
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
