#!/usr/bin/env bash
# Runs docs/results.md's "Stragglers and churn" result set and keeps it in results/stragglers/:
# configs/scenarios/stragglers.toml under --simulate on six meshes, seeds 1 to 3 (slow-x10 also 4
# and 5), and for slow-x10, slow-20pct-x10 and churn-third the same launch with
# node.learning.staleness=none in staleness-none/. Each launch keeps its summary.csv and
# manifest.toml; each method folder of a mesh with slow nodes keeps its network.csv and its slow
# nodes' rounds.csv as slow-node-<id>.csv (results/README.md). Run folders go to a scratch folder
# and are deleted once kept. A launch whose manifest does not say `clean = true` (a build of a
# tree with uncommitted changes) stops the script before anything of it is kept.
#
#   bash scripts/keep_stragglers.sh [SCRATCH]     (default SCRATCH: /tmp/meshlearn-stragglers)
#
# MESHLEARN_LAUNCH names another build's meshlearn-launch (default: this checkout's build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
launch="${MESHLEARN_LAUNCH:-$root/build/tools/meshlearn-launch}"
scratch="${1:-/tmp/meshlearn-stragglers}"
kept="$root/results/stragglers"

# mesh name → its --set arguments (the page's commands)
declare -A mesh_sets=(
  [slow-x1]="network.slow.factor=1"
  [slow-x2]="network.slow.factor=2"
  [slow-x10]="network.slow.factor=10"
  [slow-x100]="network.slow.factor=100"
  [slow-20pct-x10]="network.slow={fraction=0.2, factor=10}"
  [churn-third]="network.churn={fraction=0.33, mean_up_s=8, mean_down_s=6}"
)
# meshes that also run without the staleness weights
staleness_meshes=" slow-x10 slow-20pct-x10 churn-third "

# Launches one run into $scratch/<rel> with the given --set arguments, then copies what is kept
# into $kept/<rel>.
run_and_keep() {
  local rel="$1"; shift
  local seed="$1"; shift
  local out="$scratch/$rel" sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  rm -rf "$out"
  mkdir -p "$(dirname "$out")"
  (cd "$root" && "$launch" configs/scenarios/stragglers.toml --simulate --threads 1 \
     --seed "$seed" --out "$out" "${sets[@]}" >"$out.log" 2>&1) || {
    echo "keep_stragglers: $rel failed; see $out.log" >&2; return 1; }
  grep -q '^clean = true$' "$out/manifest.toml" || {
    echo "keep_stragglers: $rel was not run by a clean build (see its manifest.toml)" >&2
    return 1; }
  rm -rf "$kept/$rel"
  mkdir -p "$kept/$rel"
  cp "$out/summary.csv" "$out/manifest.toml" "$kept/$rel/"
  for method_dir in "$out"/*/; do
    [[ -f "$method_dir/network.csv" ]] || continue
    local name
    name="$(basename "$method_dir")"
    # network.csv: node,...,compute_factor,...; a slow node's factor is not 1
    local slow
    slow="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "compute_factor") c = i; next }
                     c && $c + 0 != 1 { print $1 }' "$method_dir/network.csv")"
    [[ -n "$slow" ]] || continue
    mkdir -p "$kept/$rel/$name"
    cp "$method_dir/network.csv" "$kept/$rel/$name/"
    for id in $slow; do
      cp "$method_dir/node-$id/rounds.csv" "$kept/$rel/$name/slow-node-$id.csv"
    done
  done
  rm -rf "$out" "$out.log"
  echo "kept $rel"
}

mkdir -p "$scratch"
for mesh in slow-x1 slow-x2 slow-x10 slow-x100 slow-20pct-x10 churn-third; do
  seeds=(1 2 3)
  [[ "$mesh" == slow-x10 ]] && seeds=(1 2 3 4 5)
  for seed in "${seeds[@]}"; do
    run_and_keep "$mesh/seed-$seed" "$seed" "${mesh_sets[$mesh]}"
    if [[ "$staleness_meshes" == *" $mesh "* ]]; then
      run_and_keep "$mesh/seed-$seed/staleness-none" "$seed" "${mesh_sets[$mesh]}" \
        node.learning.staleness=none
    fi
  done
done
