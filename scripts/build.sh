#!/usr/bin/env bash
# Configures and builds meshlearn in build/ (Release, Ninja, ccache when installed, -j2).
# Arguments that start with -D go to CMake's configure step; the others name the targets to build
# (default: all of them, the tests included).
#
#   scripts/build.sh [-DOPTION=VALUE ...] [TARGET ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
options=()
targets=()
for arg in "$@"; do
  case "$arg" in
    -D*) options+=("$arg") ;;
    *) targets+=(--target "$arg") ;;
  esac
done
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${options[@]}" >/dev/null
cmake --build "$root/build" -j2 "${targets[@]}"
