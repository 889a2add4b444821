#pragma once
// Procedures: named presets of scenario keys, chosen by a scenario's top-level `procedure`
// (Procedure, scenario.h; docs/experiments.md "Procedures" lists each setting with its source).
//
//   "meshlearn"   the default: nothing is changed.
//   "paper-code"  every setting in which file 004's code (tomhagander/decentralized_deep_learning)
//                 differs from meshlearn's defaults: the two-hop rule and rows, what a stopped
//                 node does and (Oracle) serves, the full-test-set evaluation, and the τ its runs
//                 used where they differ from the paper's Table 8.
//
// Rules:
// - Precedence: --set > the procedure > the scenario file > the defaults. A preset's value
//   replaces what the scenario file gives, never what --set gives: the scenario key or a table
//   above it; for a node setting, the key in [node] or a table above it, or the method's own key
//   (`--set methods=[...]`).
//   Rationale: the shipped scenarios set Table 8's τ per method, and a preset that yielded to them
//   would not run the authors' procedure; the command line is the user's last word, so a key can
//   be tried against the preset one at a time.
// - Every value of the file that the preset replaced by another is reported (the notes of
//   ApplyPresetKeys and ApplyPresetNodeSettings, which the launcher prints).
// - A preset's settings are values. Its node settings set members of each method's NodeConfig
//   once the scenario is read (the key they change is named by the node's own key descriptions,
//   tools/scenario/node_keys.h); its few scenario keys ([data], [network]: the launcher's own)
//   edit the scenario's TOML tree before it is read. Both are recorded in the resolved scenario
//   (the manifest's): a node setting in the method it changed ([node] when the scenario has no
//   [[methods]]).
// - The tables in procedure.cc are the only place a preset's settings are written: a setting
//   added to a table is applied, reported and recorded, or it is nowhere.

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "node/config/config.h"
#include "similarity/metric.h"
#include "tools/scenario/scenario.h"
#include "topology/sampler_factory.h"
#include "training/aggregation.h"
#include "training/model.h"
#include "training/partition.h"

namespace meshlearn::launch {

// One scenario key (not a node key) a procedure sets in every scenario.
struct PresetKey {
  const char* path;    // the dotted scenario path, e.g. "data.test"
  const char* value;   // the string it sets
  const char* source;  // where the authors' code does so (file:line)
  // Set only when the scenario's dataset has a test pool (not "synthetic").
  bool needs_test_pool = false;
};

// One node setting a procedure gives the methods of every scenario.
struct PresetNodeSetting {
  void (*set)(node::NodeConfig& config);  // gives `config` the setting
  const char* source;                     // where the authors' code does so (file:line)
  // Only in the methods of these samplers; empty: in every method.
  std::vector<topology::SamplerKind> only_samplers = {};
};

// The τ a procedure gives every DAC method of one kind in one experiment: the scenario's
// [data] dataset and shift, the method's [model] architecture, [learning] metric and
// aggregation.
struct PresetTau {
  DatasetKind dataset;
  training::ShiftKind shift;
  training::Architecture architecture;
  similarity::MetricKind metric;
  training::AggregationKind aggregation;
  double tau;
  const char* source;  // the authors' file:line
};

// The settings of `procedure` (none for kMeshlearn).
std::span<const PresetKey> PresetKeys(Procedure procedure);
std::span<const PresetNodeSetting> PresetNodeSettings(Procedure procedure);
std::span<const PresetTau> PresetTaus(Procedure procedure);

// Whether --set gave the dotted scenario `path` or a table above it.
using SetOnCommandLine = std::function<bool(const std::string& path)>;

// Applies the scenario keys of `procedure` to the scenario tree `root` (the file with --set
// applied, before it is read) by the rules above. Returns one note per value of the file replaced
// by another, e.g. "procedure \"paper-code\" sets data.test = \"cluster\" (the file gave
// \"per-node\"; utils/testing_utils.py:420-456)".
std::vector<std::string> ApplyPresetKeys(Procedure procedure, toml::table& root,
                                         const SetOnCommandLine& set_on_command_line);

// Applies the node settings and τ of `procedure` to the methods of `scenario` (read from `root`),
// and records them in `root`, by the rules above. Returns one note per value of the file replaced,
// e.g. "procedure \"paper-code\" sets methods[10] ('inv_l2 FedSim') learning.tau = 10 (the file
// gave 30; test_multiple.py:111-113)".
std::vector<std::string> ApplyPresetNodeSettings(Scenario& scenario, toml::table& root,
                                                 const SetOnCommandLine& set_on_command_line);

}  // namespace meshlearn::launch
