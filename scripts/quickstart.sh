#!/usr/bin/env bash
# Installs what the main job needs (scripts/setup.sh run), builds only meshlearn-launch and
# meshlearn-node, and runs the main job: the quickstart scenario (configs/quickstart.toml, 12
# nodes in 4 rotated Fashion-MNIST clusters), which prints the result table and the paths of
# heatmap.csv / heatmap.png. Extra arguments go to the launcher.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh run
# No tests: their libraries are not installed by the `run` profile (scripts/test.sh builds them).
bash scripts/build.sh -DMESHLEARN_BUILD_TESTS=OFF meshlearn-launch meshlearn-node
# A second quickstart replaces the first run's files (never the user's own: docs/experiments.md
# "Run folders"), unless the arguments say --resume or --force themselves.
replace=(--force)
for arg in "$@"; do
  case "$arg" in --resume | --force) replace=() ;; esac
done
build/tools/meshlearn-launch configs/quickstart.toml --out runs/quickstart "${replace[@]}" "$@"
