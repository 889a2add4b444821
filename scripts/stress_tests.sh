#!/usr/bin/env bash
# Shows that the e2e tests and the tests of node/'s libraries and process/ do not fail on load:
# runs them with ctest -j2 five times in a row, then once more while a CPU burner keeps every core
# busy. Needs a build (scripts/build.sh).
# Usage: scripts/stress_tests.sh [runs (default 5)]
# Exits non-zero at the first failing pass, naming it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-5}"
labels="e2e|transport|logic|config|learner|host|process"
for ((i = 1; i <= runs; ++i)); do
  echo "stress: pass $i of $runs: ctest -j2 -L '$labels'"
  if ! ctest --test-dir "$root/build" -j2 -L "$labels" --output-on-failure >"/tmp/stress-pass-$i.log" 2>&1; then
    echo "stress: pass $i FAILED; see /tmp/stress-pass-$i.log"
    grep -E "\*\*\*Failed|\*\*\*Timeout|Failed  " "/tmp/stress-pass-$i.log" || true
    exit 1
  fi
  grep -E "tests passed" "/tmp/stress-pass-$i.log"
done
cores="$(nproc)"
echo "stress: loaded pass: ctest -j2 -L '$labels' while $cores busy loops run"
burners=()
for ((c = 0; c < cores; ++c)); do
  (while :; do :; done) &
  burners+=($!)
done
status=0
ctest --test-dir "$root/build" -j2 -L "$labels" --output-on-failure >/tmp/stress-loaded.log 2>&1 || status=$?
kill "${burners[@]}" 2>/dev/null || true
wait "${burners[@]}" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  echo "stress: loaded pass FAILED; see /tmp/stress-loaded.log"
  grep -E "\*\*\*Failed|\*\*\*Timeout|Failed  " /tmp/stress-loaded.log || true
  exit 1
fi
grep -E "tests passed" /tmp/stress-loaded.log
echo "stress: every pass passed"
