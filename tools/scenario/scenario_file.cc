#include "tools/scenario/scenario_file.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "base/number_text.h"
#include "node/config/config_toml.h"
#include "node/config/toml_reader.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/node_keys.h"
#include "tools/scenario/procedure.h"
#include "tools/scenario/scenario_network.h"

namespace meshlearn::launch {
namespace {

using node::TableReader;

// Where scenario keys were written: the --set assignments by the dotted path they set.
using SetPaths = std::map<std::string, std::string>;

// Applies "a.b.c=value" to `root`, creating tables on the way, and records it in `set_paths`.
Status ApplySet(toml::table& root, const std::string& assignment, SetPaths& set_paths) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument("--set '" + assignment + "' must read key.path=value");
  }
  std::string path = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  // A TOML value (5, 0.1, true, "x", [1, 2]); anything else is taken as a bare string, so
  // that --set node.learning.metric=inv_loss works without shell-quoted quotes.
  std::optional<toml::table> parsed;
  try {
    parsed = toml::parse("v = " + value);
  } catch (const toml::parse_error&) {
  }
  toml::table* table = &root;
  std::istringstream parts(path);
  std::string part;
  std::vector<std::string> keys;
  while (std::getline(parts, part, '.')) keys.push_back(part);
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    toml::node* next = table->get(keys[i]);
    if (!next) {
      table->insert(keys[i], toml::table{});
      next = table->get(keys[i]);
    }
    if (!next->is_table()) {
      return Status::InvalidArgument("--set '" + assignment + "': '" + keys[i] +
                                     "' is not a table");
    }
    table = next->as_table();
  }
  if (parsed) {
    table->insert_or_assign(keys.back(), *parsed->get("v"));
  } else {
    table->insert_or_assign(keys.back(), value);
  }
  set_paths[path] = assignment;
  return Status::Ok();
}

// True when --set path `set` gave the scenario path `path`: `path` itself or a table above it.
bool Covers(const std::string& set, const std::string& path) {
  return path.rfind(set, 0) == 0 &&
         (path.size() == set.size() || path[set.size()] == '.' || path[set.size()] == '[');
}

// Where the value at scenario path `path` ("node.training.rounds", "methods[1].learning.tau")
// came from: the --set that set it or one of its tables, else `file`:`line`.
std::string OriginOf(const std::string& path, const toml::node& n, const std::string& file,
                     const SetPaths& set_paths) {
  std::string origin;
  for (const auto& [set, assignment] : set_paths) {
    if (Covers(set, path) && set.size() >= origin.size()) origin = "--set " + assignment;
  }
  if (!origin.empty()) return origin;
  int line = static_cast<int>(n.source().begin.line);
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

Status NumberList(TableReader& t, const char* key, std::vector<double>* out) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const toml::array* a = n.as_array();
    if (!a) return t.Fail(key, n, "must be an array of numbers");
    out->clear();
    for (const toml::node& v : *a) {
      if (!v.is_number()) return t.Fail(key, n, "must be an array of numbers");
      out->push_back(*v.value<double>());
    }
    return Status::Ok();
  });
}

Status IntListList(TableReader& t, const char* key, std::vector<std::vector<int64_t>>* out) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const toml::array* a = n.as_array();
    if (!a) return t.Fail(key, n, "must be an array of arrays of class labels, e.g. [[0,1],[2,3]]");
    out->clear();
    for (const toml::node& row : *a) {
      const toml::array* r = row.as_array();
      if (!r) return t.Fail(key, n, "must be an array of arrays of class labels");
      std::vector<int64_t> labels;
      for (const toml::node& v : *r) {
        if (!v.is_integer()) return t.Fail(key, n, "must hold integer class labels");
        labels.push_back(*v.value<int64_t>());
      }
      out->push_back(std::move(labels));
    }
    return Status::Ok();
  });
}

Status SwapLists(TableReader& t, const char* key,
                 std::vector<std::vector<std::pair<int64_t, int64_t>>>* out) {
  const char* allowed = "must be one array per cluster of [a, b] label pairs, e.g. [[], [[1, 2]]]";
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const toml::array* a = n.as_array();
    if (!a) return t.Fail(key, n, allowed);
    out->clear();
    for (const toml::node& cluster : *a) {
      const toml::array* pairs = cluster.as_array();
      if (!pairs) return t.Fail(key, n, allowed);
      std::vector<std::pair<int64_t, int64_t>> swaps;
      for (const toml::node& pair : *pairs) {
        const toml::array* p = pair.as_array();
        if (!p || p->size() != 2 || !p->get(0)->is_integer() || !p->get(1)->is_integer()) {
          return t.Fail(key, n, allowed);
        }
        swaps.emplace_back(*p->get(0)->value<int64_t>(), *p->get(1)->value<int64_t>());
      }
      out->push_back(std::move(swaps));
    }
    return Status::Ok();
  });
}

// The node keys of a [node] template or a method as the scenario gives them: its node config
// sections (copies of the scenario's values) and where each key was written, by dotted key.
struct NodeSettings {
  toml::table sections;
  std::map<std::string, std::string> origins;
};

// Reads the node config sections of `t` into `out`.
Status ReadSections(TableReader& t, const SetPaths& set_paths, NodeSettings& out) {
  const node::NodeConfig defaults;
  // The key the launcher sets per node itself.
  const std::string launcher_key = NodeKeyName(defaults, defaults.learning.clusters);
  for (const std::string& section : ScenarioNodeSections()) {
    MESHLEARN_RETURN_IF_ERROR(t.Table(section.c_str(), [&](TableReader& s) {
      return s.Each([&](const std::string& key, const toml::node& n) -> Status {
        const std::string dotted = section + "." + key;
        if (dotted == launcher_key) {
          return s.Fail(key, n, "is set by the launcher from the partition; remove it");
        }
        toml::node& keys = out.sections.insert(section, toml::table{}).first->second;
        keys.as_table()->insert_or_assign(key, n);
        out.origins[dotted] = OriginOf(s.Qualified(key), n, t.file(), set_paths);
        return Status::Ok();
      });
    }));
  }
  return Status::Ok();
}

// The [attack] key only the launcher reads: the share of each cluster's nodes that attack.
constexpr const char kAttackFractionKey[] = "fraction";

// Reads `method`'s node settings: the template's keys (`node_template`) with the method's own
// (`own`) merged into one table, read once by the node config's own reader onto
// `method.node_keys`, and the launcher's [attack] fraction. A bad key is reported where it was
// written, with the method's name.
Status ReadNodeSettings(const Scenario& scenario, const NodeSettings& node_template,
                        const NodeSettings& own, MethodSpec& method) {
  toml::table merged = node_template.sections;
  method.origins = node_template.origins;
  for (const auto& [section, keys] : own.sections) {
    toml::node& into = merged.insert(section, toml::table{}).first->second;
    for (const auto& [key, value] : *keys.as_table()) into.as_table()->insert_or_assign(key, value);
  }
  for (const auto& [dotted, origin] : own.origins) method.origins[dotted] = origin;
  TableReader::Origins origins;
  for (const auto& [section, keys] : merged) {
    for (const auto& [key, value] : *keys.as_table()) {
      origins[&value] =
          method.origins.at(std::string(section.str()) + "." + std::string(key.str()));
    }
  }
  const std::string in_method = " (method '" + method.name + "')";
  const node::NodeConfig defaults;
  if (toml::table* attack = merged.get_as<toml::table>(NodeKeyName(defaults, defaults.attack))) {
    TableReader reader(*attack, scenario.file, NodeKeyName(defaults, defaults.attack), &origins);
    Status read = reader.Number(kAttackFractionKey, &method.attack_fraction, 0, 1);
    if (!read.ok()) return Status(read.code(), read.message() + in_method);
    if (const toml::node* fraction = attack->get(kAttackFractionKey)) origins.erase(fraction);
    attack->erase(kAttackFractionKey);
  }
  Status read = node::ReadNodeConfigKeys(merged, scenario.file, method.node_keys, &origins);
  if (!read.ok()) return Status(read.code(), read.message() + in_method);
  return Status::Ok();
}

Status ParseData(TableReader& t, DataSpec& d) {
  MESHLEARN_RETURN_IF_ERROR(t.Choice("dataset", &d.dataset, DatasetKindNames()));
  training::PartitionConfig& p = d.partition;
  p.shift = d.dataset == DatasetKind::kSynthetic ? training::ShiftKind::kSynthetic
                                                 : training::ShiftKind::kNone;
  MESHLEARN_RETURN_IF_ERROR(t.Choice("shift", &p.shift, training::ShiftKindNames()));
  MESHLEARN_RETURN_IF_ERROR(t.Integer("clients", &p.num_clients, 1, 100000));
  MESHLEARN_RETURN_IF_ERROR(t.Integer("clusters", &p.num_clusters, 0, 100000));
  MESHLEARN_RETURN_IF_ERROR(NumberList(t, "cluster_sizes", &p.cluster_sizes));
  MESHLEARN_RETURN_IF_ERROR(NumberList(t, "rotations", &p.rotations_deg));
  MESHLEARN_RETURN_IF_ERROR(t.Choice("pixel_range", &p.pixel_range, training::PixelRangeNames()));
  MESHLEARN_RETURN_IF_ERROR(
      t.Choice("interpolation", &p.interpolation, training::InterpolationNames()));
  MESHLEARN_RETURN_IF_ERROR(IntListList(t, "label_sets", &p.label_sets));
  MESHLEARN_RETURN_IF_ERROR(SwapLists(t, "label_swaps", &p.label_swaps));
  MESHLEARN_RETURN_IF_ERROR(t.Integer("train_per_client", &p.train_per_client, 1, 1 << 24));
  MESHLEARN_RETURN_IF_ERROR(
      t.Integer("validation_per_client", &p.validation_per_client, 1, 1 << 24));
  MESHLEARN_RETURN_IF_ERROR(t.Integer("test_per_client", &p.test_per_client, 1, 1 << 24));
  MESHLEARN_RETURN_IF_ERROR(t.Choice("test", &d.test, TestSetNames()));
  MESHLEARN_RETURN_IF_ERROR(t.Bool("allow_overlap", &p.allow_overlap));
  MESHLEARN_RETURN_IF_ERROR(t.Choice("pool_split", &p.pool_split, training::PoolSplitNames()));
  MESHLEARN_RETURN_IF_ERROR(
      t.Number("test_holdout_fraction", &p.test_holdout_fraction, 0, 0.9, true));
  MESHLEARN_RETURN_IF_ERROR(t.Integer("synthetic_dim", &p.synthetic_dim, 1, 100000));
  MESHLEARN_RETURN_IF_ERROR(t.Number("synthetic_noise_std", &p.synthetic_noise_std, 0, 1e6));
  MESHLEARN_RETURN_IF_ERROR(t.String("images", &d.images));
  MESHLEARN_RETURN_IF_ERROR(t.String("labels", &d.labels));
  MESHLEARN_RETURN_IF_ERROR(t.String("test_images", &d.test_images));
  MESHLEARN_RETURN_IF_ERROR(t.String("test_labels", &d.test_labels));
  MESHLEARN_RETURN_IF_ERROR(t.String("csv", &d.csv_path));
  MESHLEARN_RETURN_IF_ERROR(t.String("label_column", &d.label_column));
  MESHLEARN_RETURN_IF_ERROR(t.Choice("task", &d.task, training::TaskNames()));
  if (d.dataset == DatasetKind::kIdx && (d.images.empty() || d.labels.empty())) {
    return Status::InvalidArgument(t.file() +
                                   ": [data] dataset = \"idx\" needs 'images' and "
                                   "'labels' (IDX files, plain or .gz)");
  }
  if ((d.dataset == DatasetKind::kCsv || d.dataset == DatasetKind::kSynthetic) &&
      p.pixel_range != training::PixelRange::kUnit) {
    return Status::InvalidArgument(t.file() +
                                   ": [data] pixel_range applies to image datasets "
                                   "(fashion-mnist, mnist, mnist+fashion-mnist, idx), not to \"" +
                                   std::string(NameOf(DatasetKindNames(), d.dataset)) + "\"");
  }
  if (d.dataset == DatasetKind::kSynthetic && d.test == TestSet::kCluster) {
    return Status::InvalidArgument(t.file() +
                                   ": [data] test = \"cluster\" needs a test pool to test on, "
                                   "and \"synthetic\" has none (its test samples are drawn per "
                                   "client); use test = \"per-node\"");
  }
  if (d.dataset == DatasetKind::kCsv && (d.csv_path.empty() || d.label_column.empty())) {
    return Status::InvalidArgument(t.file() +
                                   ": [data] dataset = \"csv\" needs 'csv' and 'label_column'");
  }
  return Status::Ok();
}

// Sets the number of clients of `p` to `nodes` (--nodes). Cluster sizes given as node counts that
// no longer add up become the proportions they were.
void SetNodeCount(int nodes, training::PartitionConfig& p) {
  std::vector<double>& sizes = p.cluster_sizes;
  double total = 0;
  bool counts = !sizes.empty();
  for (double v : sizes) {
    total += v;
    counts = counts && v == std::floor(v);
  }
  if (counts && total > 0 && std::llround(total) != nodes) {
    for (double& v : sizes) v /= total;  // keep the proportions for the new node count
  }
  p.num_clients = nodes;
}

// The scenario as run, for the run's manifest and --resume's check: `root` (the file with --set
// applied) with the seed of `s` and, when --nodes was given (`nodes_set`), its clients and cluster
// sizes.
std::string ResolvedText(toml::table& root, const Scenario& s, bool nodes_set) {
  root.insert_or_assign("seed", static_cast<int64_t>(s.seed));
  if (nodes_set) {
    toml::table* data = root.get_as<toml::table>("data");
    if (!data) data = root.insert_or_assign("data", toml::table{}).first->second.as_table();
    data->insert_or_assign("clients", static_cast<int64_t>(s.data.partition.num_clients));
    if (!s.data.partition.cluster_sizes.empty()) {
      toml::array sizes_array;
      for (double v : s.data.partition.cluster_sizes) sizes_array.push_back(v);
      data->insert_or_assign("cluster_sizes", std::move(sizes_array));
    }
  }
  std::ostringstream resolved;
  resolved << root << "\n";
  return resolved.str();
}

// Checks every method's node config once, before any data is loaded: the rules of a node config
// built from its settings (MakeNodeConfig's) for a node of a two-node mesh.
Status CheckMethodConfigs(const Scenario& s) {
  for (const MethodSpec& method : s.methods) {
    auto config = MakeNodeConfig(s, method, "node-0", "tcp://127.0.0.1:1", "check.shard", "out",
                                 {{"node-1", "tcp://127.0.0.1:2"}}, {{"node-0", 0}, {"node-1", 0}},
                                 std::nullopt, /*attacker=*/true);
    if (!config.ok()) return config.status();
  }
  return Status::Ok();
}

// Reads the scenario's keys from `top` into `s`, and the node settings of its [node] template and
// of each method (one per method of `s`) into `node_template` and `method_settings`, to be read
// onto the methods once the scenario's other keys are checked; what of [network] needs the
// cluster sizes into `network_later`.
Status ReadKeys(TableReader& top, const SetPaths& set_paths, Scenario& s,
                NodeSettings& node_template, std::vector<NodeSettings>& method_settings,
                NetworkToResolve& network_later) {
  MESHLEARN_RETURN_IF_ERROR(top.String("name", &s.name, true));
  MESHLEARN_RETURN_IF_ERROR(top.String("description", &s.description));
  MESHLEARN_RETURN_IF_ERROR(top.Integer("seed", &s.seed, 0, INT64_MAX));
  MESHLEARN_RETURN_IF_ERROR(top.Bool("security", &s.security));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("data", [&](TableReader& t) { return ParseData(t, s.data); }));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("node", [&](TableReader& t) { return ReadSections(t, set_paths, node_template); }));
  std::set<std::string> names;
  MESHLEARN_RETURN_IF_ERROR(top.TableArray("methods", [&](TableReader& t) {
    MethodSpec method;
    MESHLEARN_RETURN_IF_ERROR(t.String("name", &method.name, true));
    if (method.name.empty() || !names.insert(Slug(method.name)).second) {
      return Status::InvalidArgument(t.file() + ": [[methods]] name '" + method.name +
                                     "' is empty or not unique");
    }
    MESHLEARN_RETURN_IF_ERROR(ReadSections(t, set_paths, method_settings.emplace_back()));
    s.methods.push_back(std::move(method));
    return Status::Ok();
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("network", [&](TableReader& t) {
    s.has_network = true;
    MESHLEARN_RETURN_IF_ERROR(t.Choice("schedule", &s.schedule, sim::ExchangeScheduleNames()));
    return ParseNetwork(t, s.network, network_later);
  }));
  MESHLEARN_RETURN_IF_ERROR(top.RejectUnknown());
  if (s.methods.empty()) {
    s.methods.push_back({.name = "default"});
    method_settings.emplace_back();
  }
  return Status::Ok();
}
}  // namespace

Result<Scenario> LoadScenario(const std::string& path, const ScenarioOverrides& overrides) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("scenario file '" + path + "' does not exist or is unreadable");
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.source().begin.line) +
                                   ": TOML syntax error: " + std::string(e.description()));
  }
  SetPaths set_paths;
  for (const std::string& assignment : overrides.set) {
    MESHLEARN_RETURN_IF_ERROR(ApplySet(root, assignment, set_paths));
  }
  const SetOnCommandLine set_on_command_line = [&](const std::string& key) {
    return std::any_of(set_paths.begin(), set_paths.end(),
                       [&](const auto& set) { return Covers(set.first, key); });
  };

  Scenario s;
  s.file = path;
  s.text = text.str();
  TableReader top(root, path, "");
  if (Status read = top.Choice("procedure", &s.procedure, ProcedureNames()); !read.ok()) {
    auto set = set_paths.find("procedure");
    return set == set_paths.end() ? read : read.WithContext("--set " + set->second);
  }
  s.procedure_notes = ApplyPresetKeys(s.procedure, root, set_on_command_line);
  NodeSettings node_template;
  std::vector<NodeSettings> method_settings;
  NetworkToResolve network_later;
  MESHLEARN_RETURN_IF_ERROR(
      ReadKeys(top, set_paths, s, node_template, method_settings, network_later));

  if (overrides.seed) s.seed = *overrides.seed;
  s.data.partition.seed = s.seed;
  if (overrides.nodes > 0) SetNodeCount(overrides.nodes, s.data.partition);
  if (s.data.partition.num_clients < 2) {
    return Status::InvalidArgument(path +
                                   ": [data] clients must be at least 2 (a mesh needs "
                                   "peers); use --nodes N");
  }
  auto sizes = training::ResolveClusterSizes(s.data.partition);
  if (!sizes.ok()) return sizes.status().WithContext(path + ": [data] cluster_sizes");
  MESHLEARN_RETURN_IF_ERROR(ResolveNetwork(path, *sizes, network_later, s.network));

  for (size_t i = 0; i < s.methods.size(); ++i) {
    MESHLEARN_RETURN_IF_ERROR(ReadNodeSettings(s, node_template, method_settings[i], s.methods[i]));
  }
  for (std::string& note : ApplyPresetNodeSettings(s, root, set_on_command_line)) {
    s.procedure_notes.push_back(std::move(note));
  }
  MESHLEARN_RETURN_IF_ERROR(CheckMethodConfigs(s));
  s.resolved = ResolvedText(root, s, overrides.nodes > 0);
  return s;
}
}  // namespace meshlearn::launch
