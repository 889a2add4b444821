#include "tools/scenario/scenario_network.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/atomic_file.h"
#include "base/csv.h"

namespace meshlearn::launch {
namespace {

using node::TableReader;

// The node ids of a [[network.partitions]] groups value: an array of arrays of node ids.
Status NodeGroups(TableReader& t, const char* key, std::vector<std::set<std::string>>* out) {
  const char* allowed = "must be an array of groups of node ids, e.g. [[\"0\", \"1\"], [\"2\"]]";
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    const toml::array* groups = n.as_array();
    if (!groups || groups->size() < 2) return t.Fail(key, n, allowed);
    for (const toml::node& g : *groups) {
      const toml::array* ids = g.as_array();
      if (!ids || ids->empty()) return t.Fail(key, n, allowed);
      std::set<std::string> group;
      for (const toml::node& id : *ids) {
        auto v = id.value<std::string>();
        if (!id.is_string() || !v) return t.Fail(key, n, allowed);
        group.insert(*v);
      }
      out->push_back(std::move(group));
    }
    return Status::Ok();
  });
}

// Reads number `key` in [min, max] (open at min with `open_min`) into `out` when present.
Status OptionalNumber(TableReader& t, const char* key, std::optional<double>* out, double min,
                      double max, bool open_min = false) {
  double value = NAN;
  MESHLEARN_RETURN_IF_ERROR(t.Number(key, &value, min, max, open_min));
  if (!std::isnan(value)) *out = value;
  return Status::Ok();
}

// kInvalidArgument "<file>: [<section>] <what>".
Status Refused(const TableReader& t, const std::string& what) {
  return Status::InvalidArgument(t.file() + ": [" + t.section() + "] " + what);
}

// A per-node factor distribution: { distribution = "lognormal", sigma = S } or
// { distribution = "uniform", min = A, max = B }.
Status ReadSpread(TableReader& t, const char* key, sim::Spread& spread) {
  return t.Table(key, [&](TableReader& d) -> Status {
    MESHLEARN_RETURN_IF_ERROR(d.Choice("distribution", &spread.kind, sim::SpreadKindNames()));
    if (spread.kind == sim::SpreadKind::kLogNormal) {
      spread.sigma = NAN;
      MESHLEARN_RETURN_IF_ERROR(d.Number("sigma", &spread.sigma, 0, 10));
      if (std::isnan(spread.sigma)) return Refused(d, "\"lognormal\" needs sigma, in [0, 10]");
    } else if (spread.kind == sim::SpreadKind::kUniform) {
      spread.min = spread.max = NAN;
      MESHLEARN_RETURN_IF_ERROR(d.Number("min", &spread.min, 0, 1e6, true));
      MESHLEARN_RETURN_IF_ERROR(d.Number("max", &spread.max, 0, 1e6, true));
      if (!(spread.min <= spread.max)) {
        return Refused(d, "\"uniform\" needs min and max, 0 < min <= max");
      }
    } else {
      return Refused(d, "needs distribution = \"lognormal\" or \"uniform\"");
    }
    return Status::Ok();
  });
}

// slow = { count = K, factor = F } or { fraction = P, factor = F }.
Status ReadSlow(TableReader& t, sim::SlowNodes& slow) {
  return t.Table("slow", [&](TableReader& s) -> Status {
    MESHLEARN_RETURN_IF_ERROR(s.Integer("count", &slow.count, 1, 1000000));
    MESHLEARN_RETURN_IF_ERROR(s.Number("fraction", &slow.fraction, 0, 1, true));
    slow.factor = NAN;
    MESHLEARN_RETURN_IF_ERROR(s.Number("factor", &slow.factor, 0, 1e6, true));
    if (std::isnan(slow.factor)) return Refused(s, "needs factor, a number > 0");
    if ((slow.count > 0) == (slow.fraction > 0)) {
      return Refused(s, "needs one of count (>= 1) and fraction (in (0, 1])");
    }
    return Status::Ok();
  });
}

// [network.storage]: fail, full and torn, each a probability (sim/storage_faults.h).
Status ReadStorage(TableReader& t, sim::StorageFaultRates& storage) {
  return t.Table("storage", [&](TableReader& s) -> Status {
    MESHLEARN_RETURN_IF_ERROR(s.Number("fail", &storage.fail, 0, 1));
    MESHLEARN_RETURN_IF_ERROR(s.Number("full", &storage.full, 0, 1));
    return s.Number("torn", &storage.torn, 0, 1);
  });
}

// [[network.nodes]]: one node (`node`) or every node of a cluster (`cluster`) and its values.
Status ReadNodes(TableReader& t, sim::NetworkModel& network, NetworkToResolve& later) {
  return t.TableArray("nodes", [&](TableReader& e) -> Status {
    sim::NodeNetwork own;
    int64_t cluster = -1;
    MESHLEARN_RETURN_IF_ERROR(e.String("node", &own.node));
    MESHLEARN_RETURN_IF_ERROR(e.Integer("cluster", &cluster, 0, 100000));
    MESHLEARN_RETURN_IF_ERROR(OptionalNumber(e, "compute", &own.compute, 0, 1e6, true));
    std::optional<double> latency_ms, bandwidth_mbit_s;
    MESHLEARN_RETURN_IF_ERROR(OptionalNumber(e, "latency_ms", &latency_ms, 0, 3600e3));
    MESHLEARN_RETURN_IF_ERROR(OptionalNumber(e, "bandwidth_mbit_s", &bandwidth_mbit_s, 0, 1e9));
    if (latency_ms) own.latency_s = *latency_ms / 1000.0;
    if (bandwidth_mbit_s) own.bandwidth_bytes_per_s = *bandwidth_mbit_s * 1e6 / 8;
    if (own.node.empty() == (cluster < 0)) {
      return Refused(e, "needs one of node (a node id) and cluster (a cluster index)");
    }
    if (!own.compute && !own.latency_s && !own.bandwidth_bytes_per_s) {
      return Refused(e, "sets none of compute, latency_ms and bandwidth_mbit_s");
    }
    if (cluster >= 0) {
      later.clusters.emplace_back(cluster, std::move(own));
    } else {
      network.nodes.push_back(std::move(own));
    }
    return Status::Ok();
  });
}

// [network.churn]: trace = "FILE", or fraction, mean_up_s and mean_down_s.
Status ReadChurn(TableReader& t, sim::DrawnChurn& churn, NetworkToResolve& later) {
  return t.Table("churn", [&](TableReader& c) -> Status {
    MESHLEARN_RETURN_IF_ERROR(c.String("trace", &later.trace));
    MESHLEARN_RETURN_IF_ERROR(c.Number("fraction", &churn.fraction, 0, 1, true));
    MESHLEARN_RETURN_IF_ERROR(c.Number("mean_up_s", &churn.mean_up_s, 1, 1e9));
    MESHLEARN_RETURN_IF_ERROR(c.Number("mean_down_s", &churn.mean_down_s, 1, 1e9));
    const bool drawn = churn.fraction > 0 || churn.mean_up_s > 0 || churn.mean_down_s > 0;
    if (!later.trace.empty() && drawn) {
      return Refused(c, "takes trace, or fraction, mean_up_s and mean_down_s; not both");
    }
    if (later.trace.empty() &&
        !(churn.fraction > 0 && churn.mean_up_s > 0 && churn.mean_down_s > 0)) {
      return Refused(c, "needs trace (a CSV file), or fraction, mean_up_s and mean_down_s");
    }
    return Status::Ok();
  });
}

// kInvalidArgument unless `id` is one of the `clients` node ids "0".."N-1".
Status CheckNodeId(const std::string& where, const std::string& id, int clients) {
  const bool number =
      !id.empty() && id.find_first_not_of("0123456789") == std::string::npos && id.size() <= 9;
  if (number && std::stoi(id) < clients) return Status::Ok();
  return Status::InvalidArgument(where + " names node '" + id +
                                 "'; the nodes of this run are \"0\" to \"" +
                                 std::to_string(clients - 1) + "\"");
}

// Reads the churn trace at `path`: node,leave_s,return_s rows for the nodes "0".."N-1".
Result<std::vector<sim::Away>> ReadChurnTrace(const std::string& path, int clients) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    return Status::NotFound("[network.churn] trace '" + path +
                            "' cannot be read: " + text.status().message());
  }
  auto records = ParseCsv(*text, path);
  if (!records.ok()) return records.status();
  const std::vector<std::string> header = {"node", "leave_s", "return_s"};
  if (records->empty() || records->front().fields != header) {
    return Status::Malformed(path + " line 1: the header must be node,leave_s,return_s");
  }
  std::vector<sim::Away> trace;
  std::map<std::string, double> last_return;
  const NumberForm seconds{.min = 0, .max = 1e9};
  for (size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& row = (*records)[r];
    const std::string line = path + " line " + std::to_string(row.line);
    if (row.fields.size() != 3) {
      return Status::Malformed(line + ": expected 3 cells (node,leave_s,return_s), found " +
                               std::to_string(row.fields.size()));
    }
    MESHLEARN_RETURN_IF_ERROR(CheckNodeId(line + ":", row.fields[0], clients));
    auto leave = CsvNumber<double>(path, row, 1, "leave_s", seconds);
    if (!leave.ok()) return leave.status();
    auto back = CsvNumber<double>(path, row, 2, "return_s", seconds);
    if (!back.ok()) return back.status();
    if (!(*back > *leave)) return Status::Malformed(line + ": return_s must be after leave_s");
    auto before = last_return.find(row.fields[0]);
    if (before != last_return.end() && *leave < before->second) {
      return Status::Malformed(line + ": node " + row.fields[0] +
                               " leaves before it returned from its row above; give each "
                               "node's periods in time order, not overlapping");
    }
    last_return[row.fields[0]] = *back;
    trace.push_back({row.fields[0], *leave, *back});
  }
  return trace;
}

}  // namespace

Status ParseNetwork(TableReader& t, sim::NetworkModel& net, NetworkToResolve& later) {
  double latency_ms = 0, bandwidth_mbit_s = 0;
  MESHLEARN_RETURN_IF_ERROR(t.Number("latency_ms", &latency_ms, 0, 3600e3));
  MESHLEARN_RETURN_IF_ERROR(t.Number("bandwidth_mbit_s", &bandwidth_mbit_s, 0, 1e9));
  MESHLEARN_RETURN_IF_ERROR(t.Number("loss", &net.loss, 0, 0.99));
  MESHLEARN_RETURN_IF_ERROR(t.Number("corrupt", &net.corrupt, 0, 1));
  MESHLEARN_RETURN_IF_ERROR(t.Number("truncate", &net.truncate, 0, 1));
  MESHLEARN_RETURN_IF_ERROR(t.Number("duplicate", &net.duplicate, 0, 1));
  MESHLEARN_RETURN_IF_ERROR(ReadStorage(t, net.storage));
  MESHLEARN_RETURN_IF_ERROR(t.Number("round_compute_s", &net.round_compute_s, 0, 86400));
  net.latency_s = latency_ms / 1000.0;
  net.bandwidth_bytes_per_s = bandwidth_mbit_s * 1e6 / 8;
  MESHLEARN_RETURN_IF_ERROR(ReadSpread(t, "compute", net.compute));
  MESHLEARN_RETURN_IF_ERROR(ReadSpread(t, "latency", net.latency));
  MESHLEARN_RETURN_IF_ERROR(ReadSpread(t, "bandwidth", net.bandwidth));
  MESHLEARN_RETURN_IF_ERROR(ReadSlow(t, net.slow));
  MESHLEARN_RETURN_IF_ERROR(ReadNodes(t, net, later));
  MESHLEARN_RETURN_IF_ERROR(ReadChurn(t, net.churn, later));
  MESHLEARN_RETURN_IF_ERROR(t.TableArray("outages", [&](TableReader& o) {
    sim::Outage outage;
    MESHLEARN_RETURN_IF_ERROR(o.String("node", &outage.node, true));
    MESHLEARN_RETURN_IF_ERROR(o.Choice("kind", &outage.kind, sim::OutageKindNames()));
    MESHLEARN_RETURN_IF_ERROR(o.Integer("after_round", &outage.after_round, 0, 1000000));
    MESHLEARN_RETURN_IF_ERROR(o.Number("seconds", &outage.seconds, 0, 86400, true));
    net.outages.push_back(std::move(outage));
    return Status::Ok();
  }));
  return t.TableArray("partitions", [&](TableReader& p) {
    sim::Partition partition;
    MESHLEARN_RETURN_IF_ERROR(NodeGroups(p, "groups", &partition.groups));
    MESHLEARN_RETURN_IF_ERROR(p.Integer("from_round", &partition.from_round, 0, 1000000));
    MESHLEARN_RETURN_IF_ERROR(p.Integer("to_round", &partition.to_round, 1, 1000000));
    MESHLEARN_RETURN_IF_ERROR(p.Bool("one_way", &partition.one_way));
    if (partition.to_round <= partition.from_round) {
      return Status::InvalidArgument(
          p.file() + ": [" + p.section() + "] to_round (" + std::to_string(partition.to_round) +
          ") must be above from_round (" + std::to_string(partition.from_round) + ")");
    }
    net.partitions.push_back(std::move(partition));
    return Status::Ok();
  });
}

Status ResolveNetwork(const std::string& file, const std::vector<int>& cluster_sizes,
                      const NetworkToResolve& later, sim::NetworkModel& network) {
  int clients = 0;
  for (int size : cluster_sizes) clients += size;
  auto check = [&](const std::string& id, const char* where) {
    return CheckNodeId(file + ": [network] " + where, id, clients);
  };
  for (const sim::Outage& o : network.outages) MESHLEARN_RETURN_IF_ERROR(check(o.node, "outages"));
  for (const sim::Partition& p : network.partitions) {
    for (const auto& group : p.groups) {
      for (const std::string& id : group) MESHLEARN_RETURN_IF_ERROR(check(id, "partitions"));
    }
  }
  for (const sim::NodeNetwork& own : network.nodes) {
    MESHLEARN_RETURN_IF_ERROR(check(own.node, "nodes"));
  }
  // A cluster's entries go first, so that a node's own entry, applied after, replaces them.
  std::vector<sim::NodeNetwork> expanded;
  for (const auto& [cluster, values] : later.clusters) {
    if (cluster >= static_cast<int64_t>(cluster_sizes.size())) {
      return Status::InvalidArgument(
          file + ": [network] nodes names cluster " + std::to_string(cluster) +
          "; the clusters of this run are 0 to " + std::to_string(cluster_sizes.size() - 1));
    }
    int first = 0;
    for (int64_t c = 0; c < cluster; ++c) first += cluster_sizes[c];
    for (int i = first; i < first + cluster_sizes[cluster]; ++i) {
      sim::NodeNetwork own = values;
      own.node = std::to_string(i);
      expanded.push_back(std::move(own));
    }
  }
  network.nodes.insert(network.nodes.begin(), expanded.begin(), expanded.end());
  if (later.trace.empty()) return Status::Ok();
  auto trace = ReadChurnTrace(later.trace, clients);
  if (!trace.ok()) return trace.status();
  network.churn_trace = std::move(*trace);
  return Status::Ok();
}

}  // namespace meshlearn::launch
