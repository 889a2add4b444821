#include "tools/scenario/scenario.h"

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
#include "tools/scenario/procedure.h"
#include "tools/scenario/scenario_network.h"

namespace meshlearn::launch {
namespace {

using node::TableReader;

// The node config sections a scenario's [node] template and methods may set.
const std::vector<std::string> kNodeSections = {"model",  "training",   "learning",  "emd",
                                                "attack", "clustering", "signature", "privacy",
                                                "round",  "compression"};

constexpr NamedValue<DatasetKind> kDatasetNames[] = {
    {"fashion-mnist", DatasetKind::kFashionMnist},
    {"mnist", DatasetKind::kMnist},
    {"mnist+fashion-mnist", DatasetKind::kMnistFashionMnist},
    {"synthetic", DatasetKind::kSynthetic},
    {"idx", DatasetKind::kIdx},
    {"csv", DatasetKind::kCsv}};

constexpr NamedValue<TestSet> kTestSetNames[] = {{"per-node", TestSet::kPerNode},
                                                 {"cluster", TestSet::kCluster}};

// Keys the launcher sets per node; a scenario that sets them is told so.
const std::set<std::string> kLauncherKeys = {"learning.clusters"};

std::string ValueText(const toml::node& n) {
  std::ostringstream out;
  n.visit([&](const auto& v) { out << v; });
  return out.str();
}

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

// The node-config keys of a [node] template or a method as the scenario holds them:
// "section.key" -> its value in the scenario's parsed tree.
using NodeKeyValues = std::map<std::string, const toml::node*>;

// Reads the node-config sections of `t` into "section.key" -> value text and value (`values`),
// and where each was written into `origins`.
Status ReadSections(TableReader& t, const SetPaths& set_paths,
                    std::map<std::string, std::string>* out, NodeKeyValues* values,
                    std::map<std::string, std::string>* origins) {
  for (const std::string& section : kNodeSections) {
    MESHLEARN_RETURN_IF_ERROR(t.Table(section.c_str(), [&](TableReader& s) {
      return s.Each([&](const std::string& key, const toml::node& n) -> Status {
        std::string dotted = section + "." + key;
        if (kLauncherKeys.count(dotted)) {
          return s.Fail(key, n, "is set by the launcher from the partition; remove it");
        }
        (*out)[dotted] = ValueText(n);
        (*values)[dotted] = &n;
        (*origins)[dotted] = OriginOf(s.Qualified(key), n, t.file(), set_paths);
        return Status::Ok();
      });
    }));
  }
  return Status::Ok();
}

// The key of the node template that only the launcher reads: the share of attackers.
constexpr const char kAttackFractionKey[] = "attack.fraction";

// Reads `method`'s node keys (the template's `template_values`, then the method's own `values`)
// onto `method.node_keys` with the node config's own readers. A bad key is reported where it was
// written (MethodSpec::origins), with the method's name.
Status ReadNodeKeys(const Scenario& scenario, const NodeKeyValues& template_values,
                    const NodeKeyValues& values, MethodSpec& method) {
  NodeKeyValues keys = template_values;
  for (const auto& [dotted, value] : values) keys[dotted] = value;
  keys.erase(kAttackFractionKey);
  for (const auto& [dotted, value] : keys) {
    const size_t dot = dotted.find('.');
    toml::table section;
    section.insert(dotted.substr(dot + 1), *value);  // a copy: without the scenario's line
    const toml::table root{{dotted.substr(0, dot), std::move(section)}};
    const std::string& origin =
        method.origins.count(dotted) ? method.origins.at(dotted) : scenario.node_origins.at(dotted);
    Status read = node::ReadNodeConfigKeys(root, origin, method.node_keys);
    if (!read.ok()) {
      return Status(read.code(), read.message() + " (method '" + method.name + "')");
    }
  }
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

// Reads and validates every method's node config once, before any data is loaded: its
// attack.fraction, its node keys (`method_values[i]` over `template_values`) and the rules of a
// node config built from them.
Status ReadMethodConfigs(Scenario& s, const NodeKeyValues& template_values,
                         const std::vector<NodeKeyValues>& method_values) {
  for (size_t i = 0; i < s.methods.size(); ++i) {
    MethodSpec& method = s.methods[i];
    MESHLEARN_RETURN_IF_ERROR(AttackFraction(s, method).status());
    MESHLEARN_RETURN_IF_ERROR(ReadNodeKeys(s, template_values, method_values[i], method));
    auto config = MakeNodeConfig(s, method, "node-0", "tcp://127.0.0.1:1", "shard", "out",
                                 {{"node-1", "tcp://127.0.0.1:2"}}, {{"node-0", 0}, {"node-1", 0}},
                                 std::nullopt, /*attacker=*/true);
    if (!config.ok()) return config.status();
  }
  return Status::Ok();
}

}  // namespace

NameTable<DatasetKind> DatasetKindNames() { return kDatasetNames; }

NameTable<TestSet> TestSetNames() { return kTestSetNames; }

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

  Scenario s;
  s.file = path;
  s.text = text.str();
  TableReader top(root, path, "");
  if (Status read = top.Choice("procedure", &s.procedure, ProcedureNames()); !read.ok()) {
    auto set = set_paths.find("procedure");
    return set == set_paths.end() ? read : read.WithContext("--set " + set->second);
  }
  s.procedure_notes = ApplyProcedure(s.procedure, root, [&](const std::string& key) {
    return std::any_of(set_paths.begin(), set_paths.end(),
                       [&](const auto& set) { return Covers(set.first, key); });
  });
  MESHLEARN_RETURN_IF_ERROR(top.String("name", &s.name, true));
  MESHLEARN_RETURN_IF_ERROR(top.String("description", &s.description));
  MESHLEARN_RETURN_IF_ERROR(top.Integer("seed", &s.seed, 0, INT64_MAX));
  MESHLEARN_RETURN_IF_ERROR(top.Bool("security", &s.security));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("data", [&](TableReader& t) { return ParseData(t, s.data); }));
  NodeKeyValues template_values;
  std::vector<NodeKeyValues> method_values;
  MESHLEARN_RETURN_IF_ERROR(top.Table("node", [&](TableReader& t) {
    return ReadSections(t, set_paths, &s.node_template, &template_values, &s.node_origins);
  }));
  std::set<std::string> names;
  MESHLEARN_RETURN_IF_ERROR(top.TableArray("methods", [&](TableReader& t) {
    MethodSpec method;
    MESHLEARN_RETURN_IF_ERROR(t.String("name", &method.name, true));
    if (method.name.empty() || !names.insert(Slug(method.name)).second) {
      return Status::InvalidArgument(path + ": [[methods]] name '" + method.name +
                                     "' is empty or not unique");
    }
    MESHLEARN_RETURN_IF_ERROR(ReadSections(t, set_paths, &method.overrides,
                                           &method_values.emplace_back(), &method.origins));
    s.methods.push_back(std::move(method));
    return Status::Ok();
  }));
  NetworkToResolve network_later;
  MESHLEARN_RETURN_IF_ERROR(top.Table("network", [&](TableReader& t) {
    s.has_network = true;
    MESHLEARN_RETURN_IF_ERROR(t.Choice("schedule", &s.schedule, sim::ExchangeScheduleNames()));
    return ParseNetwork(t, s.network, network_later);
  }));
  MESHLEARN_RETURN_IF_ERROR(top.RejectUnknown());
  if (s.methods.empty()) {
    s.methods.push_back({"default", {}, {}, {}});
    method_values.emplace_back();
  }

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
  s.resolved = ResolvedText(root, s, overrides.nodes > 0);
  MESHLEARN_RETURN_IF_ERROR(ResolveNetwork(path, *sizes, network_later, s.network));

  MESHLEARN_RETURN_IF_ERROR(ReadMethodConfigs(s, template_values, method_values));
  return s;
}

Result<double> AttackFraction(const Scenario& scenario, const MethodSpec& method) {
  std::map<std::string, std::string> keys = scenario.node_template;
  for (const auto& [k, v] : method.overrides) keys[k] = v;
  auto it = keys.find("attack.fraction");
  if (it == keys.end()) return 0.0;
  const std::optional<double> fraction = NumberFromText<double>(it->second, {.min = 0, .max = 1});
  if (!fraction) {
    return Status::InvalidArgument(scenario.file + ": method '" + method.name +
                                   "': attack.fraction = " + it->second +
                                   " must be a number in [0, 1]");
  }
  return *fraction;
}

Result<node::NodeConfig> MakeNodeConfig(const Scenario& scenario, const MethodSpec& method,
                                        const std::string& id, const std::string& listen,
                                        const std::string& shard, const std::string& output_dir,
                                        const std::vector<node::PeerAddress>& peers,
                                        const std::vector<std::pair<std::string, int>>& clusters,
                                        const std::optional<node::SecuritySection>& security,
                                        bool attacker) {
  node::NodeConfig config = method.node_keys;
  config.id = id;
  config.listen = listen;
  config.seed = scenario.seed;
  config.output_dir = output_dir;
  config.data.shard = shard;
  config.peers = peers;
  config.security = security;
  if (!attacker) config.attack.kind = node::AttackKind::kNone;
  // Only the oracle baseline is told the ground truth, in node id order (as a config file's
  // [learning.clusters] table reads back).
  if (config.learning.sampler == topology::SamplerKind::kOracle) {
    config.learning.clusters = clusters;
    std::sort(config.learning.clusters.begin(), config.learning.clusters.end());
  }
  MESHLEARN_RETURN_IF_ERROR(
      node::CheckNodeConfig(config, scenario.file + " (method '" + method.name + "')"));
  return config;
}

}  // namespace meshlearn::launch
