#pragma once
// The heterogeneity of a simulated mesh (sim/network_model.h; configs/README.md, [network]): each
// node's compute factor and access link, and the periods it is away (churn), drawn from the seed.
//
// Specification.
// - Every draw for a node comes from a generator seeded by the run's seed, the node's id and what
//   is drawn, never by the node's place in the list. Rationale: a node gets the same values
//   whatever the other nodes, and every method of a run sees the same mesh.
// - Compute factor of a node: the `compute` spread's draw (1 without one), times `slow.factor`
//   when it is a slow node; a [[network.nodes]] `compute` replaces both. Its round jobs take
//   round_compute_s x factor of simulated time.
// - Slow nodes: the `slow.count` nodes (when 0: round(slow.fraction x N)) whose
//   StableHash(id + "#slow", seed) is lowest.
// - Access link of a node: latency_s x the `latency` spread's draw, and bandwidth x the
//   `bandwidth` spread's draw (an infinite bandwidth stays infinite); [[network.nodes]] values
//   replace them. A message between nodes i and j takes max(latency_i, latency_j) +
//   bytes / min(bandwidth_i, bandwidth_j). Rationale: a message crosses both access links and the
//   slower end bounds it; without these keys every link is the mesh's, exactly as before.
// - Churn: a trace's periods as given. Drawn: the round(fraction x N) nodes whose
//   StableHash(id + "#churn", seed) is lowest alternate up periods (exponential, mean mean_up_s)
//   and away periods (exponential, mean mean_down_s), up from time 0, without end.
// - Draws: u = the generator's top 53 bits / 2^53; lognormal exp(sigma z) with z by Box-Muller
//   from two u; uniform min + (max - min) u; exponential -mean ln(1 - u). Rationale: the standard
//   library's distributions differ between implementations; these give the same values
//   everywhere.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/network_model.h"
#include "sim/scheduling.h"

namespace meshlearn::sim {

// What one node computes and sends with.
struct NodeProfile {
  double compute_factor = 1;         // on round_compute_s
  double latency_s = 0;              // its access link, one way
  double bandwidth_bytes_per_s = 0;  // its access link; 0: infinite
};

// The simulated seconds a message of `bytes` takes from a node of profile `from` to one of `to`.
double LinkSeconds(const NodeProfile& from, const NodeProfile& to, uint64_t bytes);

// The profile of every node of `ids` (in that order) under `network` and `seed` (specification).
// kInvalidArgument naming the node for a [[network.nodes]] entry whose node is not in `ids`, and
// for a slow count above the number of nodes.
Result<std::vector<NodeProfile>> DrawProfiles(const NetworkModel& network,
                                              const std::vector<std::string>& ids, uint64_t seed);

// When each node is away (churn; specification).
class ChurnPlan {
 public:
  // The plan of `network` for the nodes `ids` (in that order) under `seed`. kInvalidArgument
  // naming the node for a trace row whose node is not in `ids`.
  static Result<ChurnPlan> Make(const NetworkModel& network, const std::vector<std::string>& ids,
                                uint64_t seed);

  // The first period node `index` is away that begins at or after `from_s` simulated seconds;
  // nullopt when there is none.
  std::optional<Away> NextAway(size_t index, double from_s) const;

  // The number of nodes planned for.
  size_t size() const { return ids_.size(); }
  // True when some node is ever away.
  bool Churns() const;

 private:
  std::vector<std::string> ids_;
  std::vector<std::vector<Away>> trace_;  // per node, in time order
  std::vector<bool> drawn_;               // per node: it churns by draws
  DrawnChurn churn_;
  uint64_t seed_ = 0;
};

// A mesh's heterogeneity: every node's profile and its churn.
struct MeshPlan {
  std::vector<NodeProfile> profiles;
  ChurnPlan churn;
};

// DrawProfiles and ChurnPlan::Make of `network` for `ids` under `seed`; their errors.
Result<MeshPlan> PlanMesh(const NetworkModel& network, const std::vector<std::string>& ids,
                          uint64_t seed);

// Schedules on `clock` the away periods of every node of `plan`, one at a time: at the start of
// each, `leave(node index, period)` is called, and the node's next period (the first beginning
// at or after this one's end) is scheduled, until `leave` returns false (the node finished).
void ScheduleChurn(VirtualClock& clock, ChurnPlan plan,
                   std::function<bool(size_t, const Away&)> leave);

}  // namespace meshlearn::sim
