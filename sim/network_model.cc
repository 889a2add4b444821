#include "sim/network_model.h"

namespace meshlearn::sim {

NameTable<OutageKind> OutageKindNames() {
  static constexpr NamedValue<OutageKind> kNames[] = {{"death", OutageKind::kDeath},
                                                      {"pause", OutageKind::kPause}};
  return kNames;
}

double NetworkModel::TransferSeconds(uint64_t bytes) const {
  double transfer =
      bandwidth_bytes_per_s > 0 ? static_cast<double>(bytes) / bandwidth_bytes_per_s : 0.0;
  return latency_s + transfer;
}

bool NetworkModel::Cut(const std::string& from, const std::string& to, int64_t round) const {
  for (const Partition& p : partitions) {
    if (round < p.from_round || round >= p.to_round) continue;
    int from_group = -1, to_group = -1;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      if (p.groups[g].contains(from)) from_group = static_cast<int>(g);
      if (p.groups[g].contains(to)) to_group = static_cast<int>(g);
    }
    if (from_group >= 0 && to_group >= 0 && from_group != to_group) return true;
  }
  return false;
}

}  // namespace meshlearn::sim
