#pragma once
// A scenario's [network] section (configs/README.md, "[network]"): the network model of a
// --simulate run (sim/network_model.h), read in two steps. The section is read with the rest of
// the file; what needs the run's nodes (the nodes of a cluster, the churn trace's node ids) is
// resolved once the number of clients and the cluster sizes are known (--nodes may change them).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "node/config/toml_reader.h"
#include "sim/network_model.h"

namespace meshlearn::launch {

// What [network] leaves to resolve once the run's nodes are known.
struct NetworkToResolve {
  // [[network.nodes]] entries given by `cluster`: the cluster and the values for each of its nodes.
  std::vector<std::pair<int64_t, sim::NodeNetwork>> clusters;
  std::string trace;  // [network.churn] trace: the CSV file's path ("" without)
};

// Reads the [network] table `t` into `network` and `later` (configs/README.md). Errors name the
// file, line, key, value and what is allowed.
Status ParseNetwork(node::TableReader& t, sim::NetworkModel& network, NetworkToResolve& later);

// Resolves `later` into `network` for a run of the nodes "0".."N-1" in clusters of
// `cluster_sizes` (contiguous blocks, in order): every node of a [[network.nodes]] cluster gets
// its values (a node's own entry replaces them), and the churn trace is read. kInvalidArgument
// naming `file` for a cluster or node the run does not have; the trace's errors name its file,
// line and column (a header other than node,leave_s,return_s, a cell that is not a number >= 0,
// a return not after its leave, a period that overlaps the node's one before, an unknown node);
// kNotFound for a trace that cannot be read.
Status ResolveNetwork(const std::string& file, const std::vector<int>& cluster_sizes,
                      const NetworkToResolve& later, sim::NetworkModel& network);

}  // namespace meshlearn::launch
