#include "tools/scenario/procedure.h"

#include <optional>
#include <sstream>

#include "base/number_text.h"
#include "node/config/config.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {
namespace {

constexpr NamedValue<Procedure> kProcedureNames[] = {{"meshlearn", Procedure::kMeshlearn},
                                                     {"paper-code", Procedure::kPaperCode}};

// File 004's code: tomhagander/decentralized_deep_learning; paths are in that repository.
constexpr PresetKey kPaperCodeKeys[] = {
    // The least similar sampled peer is the witness; its entry is copied as it is.
    {"node.learning.two_hop", "smallest", "utils/training_utils.py:186-205"},
    // A witness passes on only the peers it sampled itself, with their direct scores.
    {"node.learning.two_hop_row", "direct", "utils/training_utils.py:188"},
    // A stopped client neither samples, merges nor trains.
    {"node.round.resting", "silent", "utils/training_utils.py:60, 107"},
    // A random order per round, merging in place, then all train (also
    // utils/training_utils.py:100-103, 260); --simulate only.
    {"network.schedule", "sequential", "run_experiment.py:455-596"},
    // Every client's best model on its cluster's whole test set.
    {"data.test", "cluster", "utils/testing_utils.py:420-456", /*needs_test_pool=*/true},
    // Oracle merges a stopped peer's local_model, which early stopping never resets to the best
    // (utils/classes.py:303-313); DAC merges its best_model (utils/training_utils.py:123-125).
    {"node.training.stopped_serves", "last", "utils/training_utils.py:326",
     /*needs_test_pool=*/false, /*only_sampler=*/"oracle"},
};

// The τ of the authors' runs where they differ from Table 8. Their `cosine_similarity` is the
// cosine of w - w0 (our cos_grad), `cosine_origin` that of the weights (our cos_weights), and
// "priorweight" is FedSim.
constexpr PresetTau kPaperCodeTaus[] = {
    {"mnist+fashion-mnist", "domain", "cnn", "cos_grad", "fedavg", 2000, "test_multiple.py:387"},
    {"mnist+fashion-mnist", "domain", "cnn", "cos_weights", "fedavg", 2000, "test_multiple.py:388"},
    {"mnist+fashion-mnist", "domain", "cnn", "inv_l2", "fedavg", 30, "test_multiple.py:389"},
    {"mnist+fashion-mnist", "domain", "cnn", "cos_grad", "fedsim", 100, "test_multiple.py:392"},
    {"mnist+fashion-mnist", "domain", "cnn", "cos_weights", "fedsim", 300, "test_multiple.py:393"},
    {"fashion-mnist", "covariate", "cnn", "inv_l2", "fedsim", 10, "test_multiple.py:111-113"},
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

// The value of a method's node key `in_method` ("learning.metric"): the method's, else the
// [node] template's, else `fallback` (the node config's default).
std::string MethodValue(const toml::table& root, const toml::table& method,
                        const std::string& in_method, std::string_view fallback) {
  if (auto own = StringAt(method, in_method)) return *own;
  return StringAt(root, "node." + in_method).value_or(std::string(fallback));
}

// Applies `key` of the preset: to its table, and for a node key to every method that sets it;
// a key with `only_sampler` to each method of that sampler instead, in the method's own table.
void ApplyKey(const PresetKey& key, const std::string& procedure, toml::table& root,
              std::vector<std::string>& notes) {
  const std::string path = key.path;
  const size_t dot = path.rfind('.');
  const std::string name = path.substr(dot + 1);
  const toml::value<std::string> value{std::string(key.value)};
  toml::table* table = key.only_sampler ? nullptr : TableAt(root, path.substr(0, dot));
  if (table) {
    Replace(*table, name, std::string(key.value), value, path, key.source, procedure, notes);
  }
  if (path.rfind("node.", 0) != 0) return;
  const std::string in_method = path.substr(5);  // "learning.two_hop"
  const std::string section_name = in_method.substr(0, in_method.find('.'));
  const std::string default_sampler(
      NameOf(topology::SamplerKindNames(), node::LearningSection{}.sampler));
  toml::array* methods = root["methods"].as_array();
  for (size_t i = 0; methods && i < methods->size(); ++i) {
    toml::table* method = methods->get(i)->as_table();
    if (!method) continue;
    if (key.only_sampler) {
      if (MethodValue(root, *method, "learning.sampler", default_sampler) != key.only_sampler) {
        continue;
      }
      if (!method->contains(section_name)) method->insert(section_name, toml::table{});
    } else if (!method->at_path(in_method)) {
      continue;
    }
    toml::table* section = method->at_path(section_name).as_table();
    if (section) {
      Replace(*section, name, std::string(key.value), value,
              MethodLabel(*method, i) + " " + in_method, key.source, procedure, notes);
    }
  }
}

// Sets the τ of every DAC method of `root` that an entry of `taus` matches.
void ApplyTaus(std::span<const PresetTau> taus, const std::string& procedure, toml::table& root,
               std::vector<std::string>& notes) {
  const DataSpec data_defaults;
  const std::string dataset =
      StringAt(root, "data.dataset")
          .value_or(std::string(NameOf(DatasetKindNames(), data_defaults.dataset)));
  const std::string shift = StringAt(root, "data.shift").value_or("");
  const node::LearningSection learning;
  const node::ModelSection model;
  toml::array* methods = root["methods"].as_array();
  for (size_t i = 0; methods && i < methods->size(); ++i) {
    toml::table* method = methods->get(i)->as_table();
    if (!method) continue;
    auto value = [&](const char* key, std::string_view fallback) {
      return MethodValue(root, *method, key, fallback);
    };
    if (value("learning.sampler", NameOf(topology::SamplerKindNames(), learning.sampler)) !=
        NameOf(topology::SamplerKindNames(), topology::SamplerKind::kDac)) {
      continue;
    }
    const std::string architecture =
        value("model.architecture", NameOf(training::ArchitectureNames(), model.architecture));
    const std::string metric =
        value("learning.metric", NameOf(similarity::MetricKindNames(), learning.metric));
    const std::string aggregation = value(
        "learning.aggregation", NameOf(training::AggregationKindNames(), learning.aggregation));
    for (const PresetTau& tau : taus) {
      if (dataset != tau.dataset || shift != tau.shift || architecture != tau.architecture ||
          metric != tau.metric || aggregation != tau.aggregation) {
        continue;
      }
      if (!method->contains("learning")) method->insert("learning", toml::table{});
      toml::table* section = (*method)["learning"].as_table();
      if (!section) continue;  // not a table: the scenario's reader reports it
      Replace(*section, "tau", tau.tau, toml::value<double>{tau.tau},
              MethodLabel(*method, i) + " learning.tau", tau.source, procedure, notes);
    }
  }
}

}  // namespace

NameTable<Procedure> ProcedureNames() { return kProcedureNames; }

std::span<const PresetKey> PresetKeys(Procedure procedure) {
  if (procedure == Procedure::kPaperCode) return kPaperCodeKeys;
  return {};
}

std::span<const PresetTau> PresetTaus(Procedure procedure) {
  if (procedure == Procedure::kPaperCode) return kPaperCodeTaus;
  return {};
}

std::vector<std::string> ApplyProcedure(
    Procedure procedure, toml::table& root,
    const std::function<bool(const std::string& path)>& set_on_command_line) {
  std::vector<std::string> notes;
  const std::string name(NameOf(ProcedureNames(), procedure));
  const bool synthetic = StringAt(root, "data.dataset") ==
                         std::string(NameOf(DatasetKindNames(), DatasetKind::kSynthetic));
  for (const PresetKey& key : PresetKeys(procedure)) {
    if (set_on_command_line(key.path) || (key.needs_test_pool && synthetic)) continue;
    ApplyKey(key, name, root, notes);
  }
  if (!set_on_command_line("methods") && !set_on_command_line("node.learning.tau")) {
    ApplyTaus(PresetTaus(procedure), name, root, notes);
  }
  return notes;
}

}  // namespace meshlearn::launch
