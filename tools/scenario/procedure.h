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
//   replaces what the scenario file gives, never what --set gives (the key, or a table above it;
//   for a method's τ: `methods` or `node.learning.tau`).
//   Rationale: the shipped scenarios set Table 8's τ per method, and a preset that yielded to them
//   would not run the authors' procedure; the command line is the user's last word, so a key can
//   be tried against the preset one at a time.
// - Every value of the file that the preset replaced by another is reported (ApplyProcedure's
//   notes, which the launcher prints).
// - A preset edits the scenario's TOML tree before the scenario is read, so its values are read
//   and checked like the file's, and the manifest's resolved scenario records them.
// - The tables below are the only place a preset's settings are written: a setting added to a
//   table is applied, reported and recorded, or it is nowhere.

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "tools/scenario/scenario.h"

namespace meshlearn::launch {

// One key a procedure sets in every scenario.
struct PresetKey {
  const char* path;    // the dotted scenario path, e.g. "node.learning.two_hop"
  const char* value;   // the string it sets
  const char* source;  // where the authors' code does so (file:line)
  // Set only when the scenario's dataset has a test pool (not "synthetic").
  bool needs_test_pool = false;
  // A node key set only in the methods whose [learning] sampler has this config name (the
  // method's own, else the [node] template's, else the default); nullptr: in every method.
  const char* only_sampler = nullptr;
};

// The τ a procedure gives every DAC method of one kind in one experiment: the scenario's
// [data] dataset and shift, the method's [model] architecture, [learning] metric and
// aggregation (config names).
struct PresetTau {
  const char* dataset;
  const char* shift;
  const char* architecture;
  const char* metric;
  const char* aggregation;
  double tau;
  const char* source;  // the authors' file:line
};

// The keys and τ of `procedure` (none for kMeshlearn).
std::span<const PresetKey> PresetKeys(Procedure procedure);
std::span<const PresetTau> PresetTaus(Procedure procedure);

// Applies `procedure` to the scenario tree `root` (the file with --set applied) by the rules
// above; `set_on_command_line(path)` says whether --set gave the dotted `path` or a table above
// it. Returns one note per value of the file replaced by another, e.g. "procedure \"paper-code\"
// sets methods[10] ('inv_l2 FedSim') learning.tau = 10 (the file gave 30; test_multiple.py:111)".
std::vector<std::string> ApplyProcedure(
    Procedure procedure, toml::table& root,
    const std::function<bool(const std::string& path)>& set_on_command_line);

}  // namespace meshlearn::launch
