#!/usr/bin/env bash
# Installs what the main job needs (scripts/setup.sh run), builds only meshlearn-launch and
# meshlearn-node, and runs the main job: the quickstart scenario (configs/quickstart.toml, 12
# nodes in 4 rotated Fashion-MNIST clusters), which prints the result table and the paths of
# heatmap.csv / heatmap.png, then the wall time of each phase (install, build, run). Extra arguments
# go to the launcher.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=scripts/phases.sh
source scripts/phases.sh
phases_start quickstart done

phases_begin install
bash scripts/setup.sh run
# No tests: their libraries are not installed by the `run` profile (scripts/test.sh builds them).
phases_begin build
bash scripts/build.sh -DMESHLEARN_BUILD_TESTS=OFF meshlearn-launch meshlearn-node
# A second quickstart replaces the first run's files (never the user's own: docs/experiments.md
# "Run folders"), unless the arguments say --resume or --force themselves.
replace=(--force)
for arg in "$@"; do
  case "$arg" in --resume | --force) replace=() ;; esac
done
phases_begin run
build/tools/meshlearn-launch configs/quickstart.toml --out runs/quickstart "${replace[@]}" "$@"
