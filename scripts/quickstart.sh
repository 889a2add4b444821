#!/usr/bin/env bash
# Installs what is missing, builds meshlearn, and runs the main job: the quickstart scenario
# (configs/quickstart.toml, 12 nodes in 4 rotated Fashion-MNIST clusters), which prints the
# result table and the paths of heatmap.csv / heatmap.png. Extra arguments go to the launcher.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh
# A second quickstart replaces the first run's files (never the user's own: README "Run folders"),
# unless the arguments say --resume or --force themselves.
replace=(--force)
for arg in "$@"; do
  case "$arg" in --resume | --force) replace=() ;; esac
done
build/tools/meshlearn-launch configs/quickstart.toml --out runs/quickstart "${replace[@]}" "$@"
