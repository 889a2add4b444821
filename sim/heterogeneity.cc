#include "sim/heterogeneity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numbers>
#include <random>

#include "base/stable_hash.h"
#include "base/unit_uniform.h"

namespace meshlearn::sim {
namespace {

// The generator of the draw `what` for node `id` under `seed`.
std::mt19937_64 GeneratorOf(const std::string& id, const char* what, uint64_t seed) {
  return std::mt19937_64(StableHash(id + "#" + what, seed));
}

// One factor of `spread` for node `id` (1 without a spread).
double Factor(const Spread& spread, const std::string& id, const char* what, uint64_t seed) {
  std::mt19937_64 rng = GeneratorOf(id, what, seed);
  switch (spread.kind) {
    case SpreadKind::kNone:
      return 1;
    case SpreadKind::kLogNormal: {
      const double u1 = 1 - UnitUniform(rng);  // (0, 1]: its logarithm is finite
      const double u2 = UnitUniform(rng);
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
      return std::exp(spread.sigma * z);
    }
    case SpreadKind::kUniform:
      return spread.min + (spread.max - spread.min) * UnitUniform(rng);
  }
  return 1;
}

// The `count` ids of `ids` whose StableHash(id + "#" + what, seed) is lowest.
std::vector<bool> LowestHashes(const std::vector<std::string>& ids, size_t count, const char* what,
                               uint64_t seed) {
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < ids.size(); ++i) {
    order.emplace_back(StableHash(ids[i] + "#" + what, seed), i);
  }
  std::sort(order.begin(), order.end());
  std::vector<bool> chosen(ids.size(), false);
  for (size_t k = 0; k < count && k < order.size(); ++k) chosen[order[k].second] = true;
  return chosen;
}

// round(fraction x n), for the shares of nodes.
size_t ShareOf(double fraction, size_t n) {
  return static_cast<size_t>(std::llround(fraction * static_cast<double>(n)));
}

// The place of node `id` in `ids`; kInvalidArgument saying that `where` names a node not of the
// run.
Result<size_t> PlaceOf(const std::vector<std::string>& ids, const std::string& id,
                       const char* where) {
  auto it = std::find(ids.begin(), ids.end(), id);
  if (it != ids.end()) return static_cast<size_t>(it - ids.begin());
  return Status::InvalidArgument(std::string(where) + " names node '" + id +
                                 "', which is not a node of this run");
}

}  // namespace

double LinkSeconds(const NodeProfile& from, const NodeProfile& to, uint64_t bytes) {
  const double latency = std::max(from.latency_s, to.latency_s);
  double bandwidth = from.bandwidth_bytes_per_s;
  if (bandwidth <= 0 || (to.bandwidth_bytes_per_s > 0 && to.bandwidth_bytes_per_s < bandwidth)) {
    bandwidth = to.bandwidth_bytes_per_s;
  }
  return LinkTransferSeconds(latency, bandwidth, bytes);
}

Result<std::vector<NodeProfile>> DrawProfiles(const NetworkModel& network,
                                              const std::vector<std::string>& ids, uint64_t seed) {
  const size_t slow_count = network.slow.count > 0 ? static_cast<size_t>(network.slow.count)
                                                   : ShareOf(network.slow.fraction, ids.size());
  if (slow_count > ids.size()) {
    return Status::InvalidArgument("[network] slow.count = " + std::to_string(slow_count) +
                                   " is above the " + std::to_string(ids.size()) +
                                   " nodes of this run");
  }
  const std::vector<bool> slow = LowestHashes(ids, slow_count, "slow", seed);
  std::vector<NodeProfile> profiles;
  for (size_t i = 0; i < ids.size(); ++i) {
    NodeProfile p;
    p.compute_factor =
        Factor(network.compute, ids[i], "compute", seed) * (slow[i] ? network.slow.factor : 1.0);
    p.latency_s = network.latency_s * Factor(network.latency, ids[i], "latency", seed);
    p.bandwidth_bytes_per_s =
        network.bandwidth_bytes_per_s * Factor(network.bandwidth, ids[i], "bandwidth", seed);
    profiles.push_back(p);
  }
  for (const NodeNetwork& own : network.nodes) {
    Result<size_t> place = PlaceOf(ids, own.node, "[[network.nodes]]");
    if (!place.ok()) return place.status();
    NodeProfile& p = profiles[*place];
    p.compute_factor = own.compute.value_or(p.compute_factor);
    p.latency_s = own.latency_s.value_or(p.latency_s);
    p.bandwidth_bytes_per_s = own.bandwidth_bytes_per_s.value_or(p.bandwidth_bytes_per_s);
  }
  return profiles;
}

Result<ChurnPlan> ChurnPlan::Make(const NetworkModel& network, const std::vector<std::string>& ids,
                                  uint64_t seed) {
  ChurnPlan plan;
  plan.ids_ = ids;
  plan.seed_ = seed;
  plan.churn_ = network.churn;
  plan.trace_.resize(ids.size());
  for (const Away& away : network.churn_trace) {
    Result<size_t> place = PlaceOf(ids, away.node, "[network.churn] trace");
    if (!place.ok()) return place.status();
    plan.trace_[*place].push_back(away);
  }
  for (std::vector<Away>& periods : plan.trace_) {
    std::sort(periods.begin(), periods.end(),
              [](const Away& a, const Away& b) { return a.leave_s < b.leave_s; });
  }
  const bool drawn = network.churn.fraction > 0 && network.churn.mean_up_s > 0;
  plan.drawn_ =
      LowestHashes(ids, drawn ? ShareOf(network.churn.fraction, ids.size()) : 0, "churn", seed);
  return plan;
}

std::optional<Away> ChurnPlan::NextAway(size_t index, double from_s) const {
  for (const Away& away : trace_[index]) {
    if (away.leave_s >= from_s) return away;
  }
  if (!drawn_[index]) return std::nullopt;
  // The node's periods from time 0, drawn in order until one begins at or after from_s.
  std::mt19937_64 rng = GeneratorOf(ids_[index], "churn", seed_);
  double t = 0;
  for (;;) {
    Away away{ids_[index], 0, 0};
    away.leave_s = t - churn_.mean_up_s * std::log(1 - UnitUniform(rng));
    away.return_s = away.leave_s - churn_.mean_down_s * std::log(1 - UnitUniform(rng));
    if (away.leave_s >= from_s) return away;
    t = away.return_s;
  }
}

bool ChurnPlan::Churns() const {
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (drawn_[i] || !trace_[i].empty()) return true;
  }
  return false;
}

Result<MeshPlan> PlanMesh(const NetworkModel& network, const std::vector<std::string>& ids,
                          uint64_t seed) {
  auto profiles = DrawProfiles(network, ids, seed);
  if (!profiles.ok()) return profiles.status();
  auto churn = ChurnPlan::Make(network, ids, seed);
  if (!churn.ok()) return churn.status();
  return MeshPlan{std::move(*profiles), std::move(*churn)};
}

namespace {

// Schedules the first away period of node `index` of `plan` from `from_s` on (ScheduleChurn).
void ScheduleAway(VirtualClock& clock, std::shared_ptr<const ChurnPlan> plan,
                  std::shared_ptr<std::function<bool(size_t, const Away&)>> leave, size_t index,
                  double from_s) {
  std::optional<Away> away = plan->NextAway(index, from_s);
  if (!away) return;
  const auto at = node::TimePoint{} + std::chrono::duration_cast<node::Clock::duration>(
                                          std::chrono::duration<double>(away->leave_s));
  clock.At(at, [&clock, plan, leave, index, a = *away] {
    if ((*leave)(index, a)) ScheduleAway(clock, plan, leave, index, a.return_s);
  });
}

}  // namespace

void ScheduleChurn(VirtualClock& clock, ChurnPlan plan,
                   std::function<bool(size_t, const Away&)> leave) {
  auto shared_plan = std::make_shared<const ChurnPlan>(std::move(plan));
  auto shared_leave = std::make_shared<std::function<bool(size_t, const Away&)>>(std::move(leave));
  for (size_t i = 0; i < shared_plan->size(); ++i) {
    ScheduleAway(clock, shared_plan, shared_leave, i, 0);
  }
}

}  // namespace meshlearn::sim
