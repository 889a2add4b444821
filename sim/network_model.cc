#include "sim/network_model.h"

#include "base/unit_uniform.h"

namespace meshlearn::sim {

NameTable<OutageKind> OutageKindNames() {
  static constexpr NamedValue<OutageKind> kNames[] = {{"death", OutageKind::kDeath},
                                                      {"pause", OutageKind::kPause}};
  return kNames;
}

NameTable<SpreadKind> SpreadKindNames() {
  static constexpr NamedValue<SpreadKind> kNames[] = {{"lognormal", SpreadKind::kLogNormal},
                                                      {"uniform", SpreadKind::kUniform}};
  return kNames;
}

double LinkTransferSeconds(double latency_s, double bandwidth_bytes_per_s, uint64_t bytes) {
  return latency_s +
         (bandwidth_bytes_per_s > 0 ? static_cast<double>(bytes) / bandwidth_bytes_per_s : 0.0);
}

double NetworkModel::TransferSeconds(uint64_t bytes) const {
  return LinkTransferSeconds(latency_s, bandwidth_bytes_per_s, bytes);
}

namespace {

// True with probability `p`, drawn from `rng` (nothing is drawn when `p` is 0).
bool Chance(double p, std::mt19937_64& rng) { return p > 0 && UnitUniform(rng) < p; }

}  // namespace

Damaged NetworkModel::Damage(std::vector<Frame>& frames, std::mt19937_64& rng) const {
  Damaged done;
  if (frames.empty()) return done;
  if (Chance(corrupt, rng)) {
    done.corrupted = true;
    Frame& body = frames[frames.size() > 1 ? 1 : 0];
    std::vector<uint8_t> bytes(body.data(), body.data() + body.size());
    if (!bytes.empty()) bytes[0] = static_cast<uint8_t>(~bytes[0]);
    body = Frame(std::move(bytes));
  }
  if (Chance(truncate, rng)) {
    done.truncated = true;
    Frame& last = frames.back();
    last = Frame::CopyOf(last.data(), last.size() / 2);
  }
  return done;
}

bool NetworkModel::Duplicates(std::mt19937_64& rng) const { return Chance(duplicate, rng); }

bool NetworkModel::Cut(const std::string& from, const std::string& to, int64_t round) const {
  for (const Partition& p : partitions) {
    if (round < p.from_round || round >= p.to_round) continue;
    int from_group = -1, to_group = -1;
    for (size_t g = 0; g < p.groups.size(); ++g) {
      if (p.groups[g].contains(from)) from_group = static_cast<int>(g);
      if (p.groups[g].contains(to)) to_group = static_cast<int>(g);
    }
    if (from_group < 0 || to_group < 0 || from_group == to_group) continue;
    if (!p.one_way || from_group == 0) return true;
  }
  return false;
}

}  // namespace meshlearn::sim
