#include "tools/scenario/procedure.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "base/number_text.h"
#include "node/config/config.h"
#include "tools/scenario/node_keys.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {
namespace {

// File 004's code: tomhagander/decentralized_deep_learning; paths are in that repository.
constexpr PresetKey kPaperCodeKeys[] = {
    // A random order per round, merging in place, then all train (also
    // utils/training_utils.py:100-103, 260); --simulate only.
    {"network.schedule", "sequential", "run_experiment.py:455-596"},
    // Every client's best model on its cluster's whole test set.
    {"data.test", "cluster", "utils/testing_utils.py:420-456", /*needs_test_pool=*/true},
    // The train and validation pools are cut once (default_rng(42)); a seed re-assigns their
    // samples to clients (random_split).
    {"data.pool_split", "fixed", "run_experiment.py:183-197, utils/initialization_utils.py:268-274",
     /*needs_test_pool=*/true},
};

const PresetNodeSetting kPaperCodeNodeSettings[] = {
    // The least similar sampled peer is the witness; its entry is copied as it is.
    {[](node::NodeConfig& c) { c.learning.two_hop = topology::TwoHopRule::kSmallest; },
     "utils/training_utils.py:186-205"},
    // A witness passes on only the peers it sampled itself, with their direct scores.
    {[](node::NodeConfig& c) { c.learning.two_hop_row = topology::TwoHopRow::kDirect; },
     "utils/training_utils.py:188"},
    // A loss is the mean of its DataLoader's batch means (the last batch shorter): the inverse
    // training loss and the validation loss of early stopping.
    {[](node::NodeConfig& c) { c.training.loss_mean = training::LossMean::kBatches; },
     "utils/classes.py:371-398"},
    // A stopped client neither samples, merges nor trains.
    {[](node::NodeConfig& c) { c.round.resting = node::RestingRule::kSilent; },
     "utils/training_utils.py:60, 107"},
    // Oracle and Random (delusion -1, the same branch) merge a stopped peer's local_model, which
    // early stopping never resets to the best (utils/classes.py:303-313); DAC merges its
    // best_model (utils/training_utils.py:123-125).
    {[](node::NodeConfig& c) { c.training.stopped_serves = node::StoppedServes::kLast; },
     "utils/training_utils.py:300-304, 326",
     {topology::SamplerKind::kOracle, topology::SamplerKind::kRandom}},
};

// The τ of the authors' runs where they differ from Table 8. Their `cosine_similarity` is the
// cosine of w - w0 (our cos_grad), `cosine_origin` that of the weights (our cos_weights), and
// "priorweight" is FedSim.
constexpr DatasetKind kBoth = DatasetKind::kMnistFashionMnist;
constexpr training::ShiftKind kDomain = training::ShiftKind::kDomain;
constexpr training::Architecture kCnn = training::Architecture::kCnn;
using enum similarity::MetricKind;
using enum training::AggregationKind;
constexpr PresetTau kPaperCodeTaus[] = {
    {kBoth, kDomain, kCnn, kCosGrad, kFedAvg, 2000, "test_multiple.py:387"},
    {kBoth, kDomain, kCnn, kCosWeights, kFedAvg, 2000, "test_multiple.py:388"},
    {kBoth, kDomain, kCnn, kInvL2, kFedAvg, 30, "test_multiple.py:389"},
    {kBoth, kDomain, kCnn, kCosGrad, kFedSim, 100, "test_multiple.py:392"},
    {kBoth, kDomain, kCnn, kCosWeights, kFedSim, 300, "test_multiple.py:393"},
    {DatasetKind::kFashionMnist, training::ShiftKind::kCovariate, kCnn, kInvL2, kFedSim, 10,
     "test_multiple.py:111-113"},
};

// The table at the dotted `path` of `root`, made (with the tables above it) when missing; nullptr
// when something other than a table is in the way (the scenario's reader reports it).
toml::table* TableAt(toml::table& root, const std::string& path) {
  toml::table* table = &root;
  std::istringstream parts(path);
  for (std::string part; std::getline(parts, part, '.');) {
    toml::node* next = table->get(part);
    if (!next) next = &table->insert(part, toml::table{}).first->second;
    table = next->as_table();
    if (!table) return nullptr;
  }
  return table;
}

// The string at `path` of `table`, when it holds one.
std::optional<std::string> StringAt(const toml::table& table, const std::string& path) {
  return table.at_path(path).value<std::string>();
}

// A value's text for a note.
std::string NoteText(const toml::node& n) {
  if (auto text = n.value<std::string>(); text && n.is_string()) return "\"" + *text + "\"";
  if (auto number = n.value<double>()) return ExactNumber(*number);
  return "another value";
}

// "methods[<i>] ('<name>')", as a note names a method.
std::string MethodLabel(const toml::table& method, size_t i) {
  return "methods[" + std::to_string(i) + "] ('" + StringAt(method, "name").value_or("") + "')";
}

// Sets `key` of `table` to `value`; adds a note to `notes` when the file gave another value.
template <class Value>
void Replace(toml::table& table, const std::string& key, const Value& value,
             const toml::node& value_node, const std::string& where, const std::string& source,
             const std::string& procedure, std::vector<std::string>& notes) {
  if (const toml::node* old = table.get(key); old && NoteText(*old) != NoteText(value_node)) {
    notes.push_back("procedure \"" + procedure + "\" sets " + where + " = " + NoteText(value_node) +
                    " (the file gave " + NoteText(*old) + "; " + source + ")");
  }
  table.insert_or_assign(key, value);
}

// Applies scenario key `key` of the preset to its table in `root`.
void ApplyKey(const PresetKey& key, const std::string& procedure, toml::table& root,
              std::vector<std::string>& notes) {
  const std::string path = key.path;
  const size_t dot = path.rfind('.');
  toml::table* table = TableAt(root, path.substr(0, dot));
  if (!table) return;  // not a table: the scenario's reader reports it
  Replace(*table, path.substr(dot + 1), std::string(key.value),
          toml::value<std::string>{std::string(key.value)}, path, key.source, procedure, notes);
}

// Where a method's node settings are recorded in `root`: its [[methods]] table, or [node] for the
// scenario's only method when it has no [[methods]]; with the method's label for a note.
std::pair<toml::table*, std::string> MethodTable(toml::table& root, size_t i) {
  if (toml::array* methods = root["methods"].as_array(); methods && i < methods->size()) {
    toml::table* method = methods->get(i)->as_table();
    return {method, method ? MethodLabel(*method, i) : ""};
  }
  return {TableAt(root, "node"), "node"};
}

// Gives method `i` of `s` the node setting `set` (from `source`), unless --set gave a key it
// changes; records it in `root` and notes each value of the file it replaced.
void ApplyNodeSetting(const std::function<void(node::NodeConfig&)>& set, const char* source,
                      Scenario& s, size_t i, toml::table& root,
                      const SetOnCommandLine& set_on_command_line,
                      std::vector<std::string>& notes) {
  MethodSpec& method = s.methods[i];
  node::NodeConfig after = method.node_keys;
  set(after);
  toml::table changed = ChangedNodeKeys(method.node_keys, after);
  for (const auto& [section, keys] : changed) {
    for (const auto& [key, value] : *keys.as_table()) {
      const std::string dotted = std::string(section.str()) + "." + std::string(key.str());
      const auto origin = method.origins.find(dotted);
      if (set_on_command_line("node." + dotted) ||
          (origin != method.origins.end() && origin->second.rfind("--set ", 0) == 0)) {
        return;
      }
    }
  }
  const toml::table old_keys = NodeKeysTable(method.node_keys);
  method.node_keys = after;
  auto [table, label] = MethodTable(root, i);
  const std::string procedure(NameOf(ProcedureNames(), s.procedure));
  for (auto& [section, keys] : changed) {
    for (auto& [key, value] : *keys.as_table()) {
      const std::string dotted = std::string(section.str()) + "." + std::string(key.str());
      if (method.origins.count(dotted)) {
        notes.push_back("procedure \"" + procedure + "\" sets " + label + " " + dotted + " = " +
                        NoteText(value) + " (the file gave " +
                        NoteText(*old_keys.at_path(dotted).node()) + "; " + source + ")");
      }
    }
    if (table) {
      toml::table* recorded = TableAt(*table, std::string(section.str()));
      if (!recorded) continue;  // not a table: the scenario's reader reported it
      for (auto& [key, value] : *keys.as_table()) recorded->insert_or_assign(key, std::move(value));
    }
  }
}

// The preset's τ for `method` of `s`, when an entry of `taus` matches it.
const PresetTau* TauOf(std::span<const PresetTau> taus, const Scenario& s,
                       const node::NodeConfig& method) {
  if (method.learning.sampler != topology::SamplerKind::kDac) return nullptr;
  for (const PresetTau& tau : taus) {
    if (s.data.dataset == tau.dataset && s.data.partition.shift == tau.shift &&
        method.model.architecture == tau.architecture && method.learning.metric == tau.metric &&
        method.learning.aggregation == tau.aggregation) {
      return &tau;
    }
  }
  return nullptr;
}

}  // namespace

std::span<const PresetKey> PresetKeys(Procedure procedure) {
  if (procedure == Procedure::kPaperCode) return kPaperCodeKeys;
  return {};
}

std::span<const PresetNodeSetting> PresetNodeSettings(Procedure procedure) {
  if (procedure == Procedure::kPaperCode) return kPaperCodeNodeSettings;
  return {};
}

std::span<const PresetTau> PresetTaus(Procedure procedure) {
  if (procedure == Procedure::kPaperCode) return kPaperCodeTaus;
  return {};
}

std::vector<std::string> ApplyPresetKeys(Procedure procedure, toml::table& root,
                                         const SetOnCommandLine& set_on_command_line) {
  std::vector<std::string> notes;
  const std::string name(NameOf(ProcedureNames(), procedure));
  const bool synthetic = StringAt(root, "data.dataset") ==
                         std::string(NameOf(DatasetKindNames(), DatasetKind::kSynthetic));
  for (const PresetKey& key : PresetKeys(procedure)) {
    if (set_on_command_line(key.path) || (key.needs_test_pool && synthetic)) continue;
    ApplyKey(key, name, root, notes);
  }
  return notes;
}

std::vector<std::string> ApplyPresetNodeSettings(Scenario& scenario, toml::table& root,
                                                 const SetOnCommandLine& set_on_command_line) {
  std::vector<std::string> notes;
  for (const PresetNodeSetting& setting : PresetNodeSettings(scenario.procedure)) {
    for (size_t i = 0; i < scenario.methods.size(); ++i) {
      const topology::SamplerKind sampler = scenario.methods[i].node_keys.learning.sampler;
      if (!setting.only_samplers.empty() &&
          std::find(setting.only_samplers.begin(), setting.only_samplers.end(), sampler) ==
              setting.only_samplers.end()) {
        continue;
      }
      ApplyNodeSetting(setting.set, setting.source, scenario, i, root, set_on_command_line, notes);
    }
  }
  for (size_t i = 0; i < scenario.methods.size(); ++i) {
    const PresetTau* tau =
        TauOf(PresetTaus(scenario.procedure), scenario, scenario.methods[i].node_keys);
    if (!tau) continue;
    ApplyNodeSetting([&](node::NodeConfig& c) { c.learning.tau = tau->tau; }, tau->source, scenario,
                     i, root, set_on_command_line, notes);
  }
  return notes;
}

}  // namespace meshlearn::launch
