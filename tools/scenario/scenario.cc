#include "tools/scenario/scenario.h"

#include <algorithm>

namespace meshlearn::launch {
namespace {

constexpr NamedValue<DatasetKind> kDatasetNames[] = {
    {"fashion-mnist", DatasetKind::kFashionMnist},
    {"mnist", DatasetKind::kMnist},
    {"mnist+fashion-mnist", DatasetKind::kMnistFashionMnist},
    {"synthetic", DatasetKind::kSynthetic},
    {"idx", DatasetKind::kIdx},
    {"csv", DatasetKind::kCsv}};

constexpr NamedValue<Procedure> kProcedureNames[] = {{"meshlearn", Procedure::kMeshlearn},
                                                     {"paper-code", Procedure::kPaperCode}};

constexpr NamedValue<TestSet> kTestSetNames[] = {{"per-node", TestSet::kPerNode},
                                                 {"cluster", TestSet::kCluster}};

}  // namespace

NameTable<DatasetKind> DatasetKindNames() { return kDatasetNames; }

NameTable<Procedure> ProcedureNames() { return kProcedureNames; }

NameTable<TestSet> TestSetNames() { return kTestSetNames; }

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
