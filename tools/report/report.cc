#include "tools/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <sstream>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "base/csv_table.h"
#include "node/host/node.h"
#include "node/host/outputs.h"
#include "similarity/clustering.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "tools/plot/render.h"
#include "tools/report/bytes_to_target.h"

namespace meshlearn::launch {
namespace {

std::string Fixed(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// The table of the methods' full-test figures ([data] test = "cluster"), or "" when none has any.
std::string FormatFullTestTable(const std::vector<MethodSummary>& summaries, int num_clusters,
                                size_t name_width) {
  int64_t images = 0;
  for (const MethodSummary& s : summaries) images = std::max(images, s.full_test_images);
  if (images == 0) return "";
  auto pad = [](const std::string& text, int width) {
    char cell[64];
    std::snprintf(cell, sizeof(cell), "%*s", width, text.c_str());
    return std::string(cell);
  };
  std::ostringstream out;
  out << "\nTest " << (summaries.front().metric == "accuracy" ? "accuracy (%)" : "MSE")
      << " of each node's best-validation model on its cluster's full test set (up to " << images
      << " images), mean per cluster:\n";
  out << std::string(name_width, ' ').replace(0, 6, "method");
  for (int c = 0; c < num_clusters; ++c) out << pad("cl " + std::to_string(c), 9);
  out << pad("mean", 9) << "\n";
  for (const MethodSummary& s : summaries) {
    out << s.name << std::string(name_width - s.name.size(), ' ');
    for (int c = 0; c < num_clusters; ++c) {
      out << pad(s.full_test_mean ? Fixed(s.full_test_per_cluster[c], 2) : "-", 9);
    }
    out << pad(s.full_test_mean ? Fixed(*s.full_test_mean, 2) : "-", 9) << "\n";
  }
  return out.str();
}

// The worse of `worst` (nullopt or NaN: none yet) and `metric`: the lower accuracy, or the higher
// MSE.
std::optional<double> Worse(std::optional<double> worst, double metric, bool accuracy) {
  if (!worst || std::isnan(*worst)) return metric;
  return accuracy ? std::min(*worst, metric) : std::max(*worst, metric);
}

// What the rounds of one honest node give its method's summary: its best-validation round, its
// seconds training and evaluating, whether it halted on a failed round, and how many of the peers
// it sampled were of its own cluster (`cluster_of`).
struct NodeRounds {
  const node::RoundRow* best = nullptr;
  double busy = 0;
  bool halted = false;
  int samples = 0, in_cluster = 0;
};

NodeRounds ReadNodeRounds(const NodeRun& n, const std::map<std::string, int>& cluster_of) {
  NodeRounds out;
  out.best = &n.rounds.front();
  for (const node::RoundRow& r : n.rounds) {
    out.halted |= r.stopped && !std::isfinite(r.val_loss);
    if (std::isfinite(r.val_loss) && !(r.val_loss >= out.best->val_loss)) out.best = &r;
    out.busy +=
        (std::isfinite(r.train_s) ? r.train_s : 0) + (std::isfinite(r.eval_s) ? r.eval_s : 0);
    for (const std::string& peer : r.peers) {
      ++out.samples;
      auto c = cluster_of.find(peer);
      out.in_cluster += c != cluster_of.end() && c->second == n.cluster;
    }
  }
  return out;
}

// The full-test-set means of `s` per cluster and overall, from each cluster's sum and count (none
// when no node was tested so).
void SetFullTestMeans(const std::vector<double>& full_sum, const std::vector<int>& full_count,
                      MethodSummary& s) {
  if (std::accumulate(full_count.begin(), full_count.end(), 0) == 0) return;
  for (size_t c = 0; c < full_count.size(); ++c) {
    s.full_test_per_cluster.push_back(full_count[c] ? full_sum[c] / full_count[c] : NAN);
  }
  s.full_test_mean = std::accumulate(full_sum.begin(), full_sum.end(), 0.0) /
                     std::accumulate(full_count.begin(), full_count.end(), 0);
}

// `text` right-aligned in `width` columns.
std::string Pad(const std::string& text, size_t width) {
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%*s", static_cast<int>(width), text.c_str());
  return std::string(cell);
}

// The columns a table of methods shows beside each cluster's and the mean figure.
struct TableColumns {
  size_t name_width = 6;
  bool any_ari = false, any_simulated = false, any_round = false, any_exchange = false;
  std::optional<double> target;
};

// The row of `s` in a table of `columns`, with its notes (interrupted, failed, halted, alone,
// attackers), without the line's end.
std::string TableRow(const MethodSummary& s, const TableColumns& columns) {
  std::ostringstream out;
  out << s.name << std::string(columns.name_width - s.name.size(), ' ');
  for (double v : s.per_cluster) out << Pad(Fixed(v, 2), 9);
  out << Pad(Fixed(s.mean, 2), 9) << Pad(Fixed(100 * s.in_cluster, 1) + "%", 12)
      << Pad(Fixed(s.wall_seconds, 0) + "s", 8);
  if (columns.any_simulated) {
    out << Pad(s.simulated_seconds ? Fixed(*s.simulated_seconds, 0) + "s" : "-", 11);
  }
  if (columns.target) {
    out << Pad(s.time_to_target_s ? Fixed(*s.time_to_target_s, 1) + "s" : "-", 11);
  }
  out << Pad(Fixed(100 * s.overhead, 1) + "%", 10);
  if (columns.any_ari) out << Pad(s.ari ? Fixed(*s.ari, 3) : "-", 7);
  if (columns.any_round) out << Pad(s.cluster_round ? Fixed(*s.cluster_round, 1) : "-", 12);
  if (columns.any_exchange) {
    out << Pad(s.exchange_seconds ? Fixed(*s.exchange_seconds, 1) + "s rounds " +
                                        RoundRangeCell{}.Write(s.exchange_rounds)
                                  : "-",
               18);
  }
  if (s.status == kInterrupted) {
    out << "  (interrupted: nodes reached rounds " << s.first_node_round << "-" << s.last_node_round
        << " of " << s.rounds << ")";
  }
  if (s.nodes_failed) out << "  (" << s.nodes_failed << " of " << s.nodes << " nodes failed)";
  if (s.nodes_halted) {
    out << "  (" << s.nodes_halted << " of " << s.nodes - s.attackers
        << " honest nodes halted on a failed round, figures from before it: see their node.log)";
  }
  if (s.nodes_alone) {
    out << "  (" << s.nodes_alone << " of " << s.nodes
        << " nodes never reached a peer: see their node.log)";
  }
  if (s.attackers) out << "  (" << s.attackers << " attackers not counted)";
  return out.str();
}

}  // namespace

double Metric(const node::RoundRow& row, bool classification) {
  return classification ? 100.0 * row.test_acc : row.test_loss;
}

std::optional<double> EstimateSecondsLeft(const std::vector<int64_t>& reached, int64_t rounds,
                                          double elapsed) {
  int64_t sum = 0;
  for (int64_t r : reached) sum += std::max<int64_t>(r, 0);
  double done = reached.empty() ? 0 : static_cast<double>(sum) / (reached.size() * (rounds + 1));
  if (done <= 0.02) return std::nullopt;
  return elapsed * (1 - done) / done;
}

MethodSummary Summarize(const MethodRun& run, const Partition& partition) {
  MethodSummary s;
  s.name = run.method.name;
  s.metric = partition.classification ? "accuracy" : "mse";
  s.wall_seconds = run.wall_seconds;
  s.simulated_seconds = run.simulated_seconds;
  s.nodes = static_cast<int>(run.nodes.size());
  std::map<std::string, int> cluster_of;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    cluster_of[partition.ids[i]] = partition.clusters[i];
  }
  std::vector<double> sum(partition.num_clusters, 0), full_sum(partition.num_clusters, 0);
  std::vector<int> count(partition.num_clusters, 0), full_count(partition.num_clusters, 0);
  double total = 0, overhead = 0, pss = 0, bytes_sent = 0;
  int measured = 0, in_cluster = 0, samples = 0, sending = 0;
  s.rounds = run.rounds;
  s.first_node_round = run.nodes.empty() ? -1 : INT64_MAX;
  for (const NodeRun& n : run.nodes) {
    int64_t reached = n.rounds.empty() ? -1 : n.rounds.back().round;
    s.first_node_round = std::min(s.first_node_round, reached);
    s.last_node_round = std::max(s.last_node_round, reached);
    s.nodes_failed += n.failure.has_value();
    Result<std::string> log = ReadWholeFile(PathIn(n.dir, kNodeLogFile));
    s.nodes_alone += log.ok() && log->find(node::kNeverReachedAPeer) != std::string::npos;
    s.peak_pss_mib_max = std::max(s.peak_pss_mib_max, n.peak_pss_mib);
    pss += n.peak_pss_mib;
    s.attackers += n.attacker;
    if (!n.rounds.empty()) {
      bytes_sent += static_cast<double>(n.rounds.back().bytes_out);
      ++sending;
    }
    if (n.full_test && !n.attacker) {
      const double metric =
          partition.classification ? 100.0 * n.full_test->accuracy : n.full_test->loss;
      full_sum[n.cluster] += metric;
      ++full_count[n.cluster];
      s.full_test_worst_node = Worse(s.full_test_worst_node, metric, partition.classification);
      s.full_test_images = std::max(s.full_test_images, n.full_test->images);
    }
    if (n.rounds.empty() || n.attacker) continue;
    const NodeRounds rounds = ReadNodeRounds(n, cluster_of);
    const node::RoundRow* best = rounds.best;
    const double busy = rounds.busy;
    samples += rounds.samples;
    in_cluster += rounds.in_cluster;
    s.nodes_halted += rounds.halted;
    if (const double spent = n.rounds.back().epsilon; std::isfinite(spent)) {
      s.epsilon = std::max(s.epsilon.value_or(spent), spent);
    }
    double metric = Metric(*best, partition.classification);
    if (std::isfinite(metric)) {
      s.worst_node = Worse(s.worst_node, metric, partition.classification).value_or(NAN);
    }
    sum[n.cluster] += metric;
    ++count[n.cluster];
    total += metric;
    ++measured;
    double wall = n.rounds.back().wall_s;
    if (wall > 0) overhead += std::max(0.0, 1.0 - busy / wall);
  }
  for (int c = 0; c < partition.num_clusters; ++c) {
    s.per_cluster.push_back(count[c] ? sum[c] / count[c] : NAN);
  }
  s.mean = measured ? total / measured : NAN;
  SetFullTestMeans(full_sum, full_count, s);
  s.overhead = measured ? overhead / measured : NAN;
  s.bytes_sent_per_node = sending ? bytes_sent / sending : 0;
  s.in_cluster = samples ? static_cast<double>(in_cluster) / samples : NAN;
  s.peak_pss_mib_mean = s.nodes ? pss / s.nodes : 0;
  if (run.process_peak_pss_mib > 0) s.peak_pss_mib_max = run.process_peak_pss_mib;
  // A method read back from its folder (meshlearn-launch report) knows no Ctrl-C: nodes that
  // stopped before the last round without failing were interrupted.
  s.status = run.interrupted                                     ? kInterrupted
             : s.nodes_failed                                    ? kFailed
             : run.rounds > 0 && s.first_node_round < run.rounds ? kInterrupted
                                                                 : kComplete;
  return s;
}

MethodRecord RecordOf(const MethodSummary& s) {
  MethodRecord r;
  r.name = s.name;
  r.status = s.status;
  r.rounds = s.rounds;
  r.first_node_round = s.first_node_round;
  r.last_node_round = s.last_node_round;
  r.nodes = s.nodes;
  r.nodes_failed = s.nodes_failed;
  r.wall_seconds = s.wall_seconds;
  r.simulated_seconds = s.simulated_seconds;
  return r;
}

std::string FormatTable(const std::vector<MethodSummary>& summaries, int num_clusters) {
  if (summaries.empty()) return "";
  bool accuracy = summaries.front().metric == "accuracy";
  TableColumns columns;
  for (const auto& s : summaries) columns.name_width = std::max(columns.name_width, s.name.size());
  auto any = [&](auto has) { return std::any_of(summaries.begin(), summaries.end(), has); };
  columns.any_ari = any([](const MethodSummary& s) { return s.ari.has_value(); });
  columns.any_simulated =
      any([](const MethodSummary& s) { return s.simulated_seconds.has_value(); });
  columns.any_round = any([](const MethodSummary& s) { return s.cluster_round.has_value(); });
  columns.any_exchange = any([](const MethodSummary& s) { return s.exchange_seconds.has_value(); });
  columns.target = summaries.front().target_acc;
  std::ostringstream out;
  out << "Test " << (accuracy ? "accuracy (%)" : "MSE")
      << " at each node's best-validation round, mean per cluster:\n";
  out << std::string(columns.name_width, ' ').replace(0, 6, "method");
  for (int c = 0; c < num_clusters; ++c) out << Pad("cl " + std::to_string(c), 9);
  out << Pad("mean", 9) << Pad("in-cluster", 12);
  if (columns.any_simulated) {
    out << Pad("real", 8) << Pad("simulated", 11);
  } else {
    out << Pad("wall", 8);
  }
  if (columns.target) out << Pad("to target", 11);
  out << Pad("overhead", 10);
  if (columns.any_ari) out << Pad("ARI", 7);
  if (columns.any_round) out << Pad("clustered@", 12);
  if (columns.any_exchange) out << Pad("exchange", 18);
  out << "\n";
  for (const MethodSummary& s : summaries) out << TableRow(s, columns) << "\n";
  bool all_simulated = std::all_of(summaries.begin(), summaries.end(), [](const MethodSummary& s) {
    return s.simulated_seconds.has_value();
  });
  out << "overhead: each node's share of its "
      << (all_simulated ? "simulated time"
          : columns.any_simulated
              ? "time (simulated time for the methods with simulated seconds, else real time)"
              : "real time")
      << " outside training and evaluation, mean over the nodes\n";
  if (columns.target) {
    out << "to target: the " << (all_simulated ? "simulated " : "")
        << "seconds (rounds.csv wall_s) until the honest nodes' mean test accuracy first reached "
        << Fixed(*columns.target, 2) << "%, the lowest final accuracy of the methods less "
        << kRunTargetPoints << " point\n";
  }
  out << FormatFullTestTable(summaries, num_clusters, columns.name_width);
  return out.str();
}

Status WriteHeatmap(const MethodRun& run, const Partition& partition, const std::string& title) {
  std::map<std::string, int> clusters;
  for (size_t i = 0; i < partition.ids.size(); ++i)
    clusters[partition.ids[i]] = partition.clusters[i];
  // In cluster order, and grouped above plot::kHeatmapMaxSide nodes.
  auto ordered = plot::MergeCommCounts(run.dir, plot::ClusterOrderedIds(partition.ids, clusters),
                                       plot::kHeatmapMaxSide);
  if (!ordered.ok()) return ordered.status();
  MESHLEARN_RETURN_IF_ERROR(plot::WriteMatrixCsv(PathIn(run.dir, kHeatmapCsvFile), *ordered));
  const std::map<std::string, int> row_clusters = plot::RowClusters(*ordered, clusters);
  plot::HeatmapOptions options;
  options.title = title;
  options.clusters = &row_clusters;
  return plot::RenderHeatmapPng(*ordered, PathIn(run.dir, kHeatmapPngFile), options);
}

Result<std::optional<EmdMatrix>> ReadEmdMatrix(const MethodRun& run, const Partition& partition) {
  size_t n = partition.ids.size();
  std::optional<std::string> first_file;
  for (size_t i = 0; i < n && i < run.nodes.size() && !first_file; ++i) {
    const std::string path = PathIn(run.nodes[i].dir, kEmdFile);
    if (std::filesystem::exists(path)) first_file = path;
  }
  if (!first_file) return std::optional<EmdMatrix>();
  if (n > kMaxEmdMatrixNodes) {
    return Status::TooLarge(*first_file + ": the EMD matrix of a run is read for at most " +
                            std::to_string(kMaxEmdMatrixNodes) + " nodes; this run has " +
                            std::to_string(n));
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index[partition.ids[i]] = i;
  EmdMatrix emd;
  emd.matrix.row_ids = emd.matrix.col_ids = partition.ids;
  emd.matrix.values.assign(n * n, NAN);
  std::vector<std::vector<bool>> accepted(n, std::vector<bool>(n, false));
  for (size_t i = 0; i < n && i < run.nodes.size(); ++i) {
    const std::string path = PathIn(run.nodes[i].dir, kEmdFile);
    auto text = ReadWholeFile(path);
    if (!text.ok()) continue;
    // peer,emd,ref,accepted,peer_accepted,mutual,...; rows that do not parse are skipped.
    auto records = ParseCsv(*text, path);
    if (!records.ok()) continue;
    for (size_t r = 1; r < records->size(); ++r) {
      const std::vector<std::string>& cells = (*records)[r].fields;
      if (cells.size() < 6 || !index.count(cells[0])) continue;
      const std::optional<double> value = NumberFromText<double>(cells[1], kExactNumberForm);
      if (!value) continue;
      size_t j = index[cells[0]];
      emd.matrix.values[i * n + j] = *value;
      accepted[i][j] = cells[5] == "1";
      // measured_round, measured_s (columns 9 and 10; absent in files of older nodes).
      const std::optional<int64_t> round =
          cells.size() >= 10 ? NumberFromText<int64_t>(cells[8]) : std::nullopt;
      const std::optional<double> seconds =
          cells.size() >= 10 ? NumberFromText<double>(cells[9]) : std::nullopt;
      if (round && seconds) {
        emd.exchange_seconds = std::max(emd.exchange_seconds.value_or(0.0), *seconds);
        emd.exchange_rounds = emd.exchange_rounds
                                  ? std::make_pair(std::min(emd.exchange_rounds->first, *round),
                                                   std::max(emd.exchange_rounds->second, *round))
                                  : std::make_pair(*round, *round);
      }
    }
  }
  emd.found = similarity::ClustersFromNeighbourhoods(accepted);
  emd.ari = similarity::AdjustedRandIndex(partition.clusters, emd.found);
  return std::optional<EmdMatrix>(std::move(emd));
}

Result<std::optional<EmdMatrix>> WriteEmdMatrix(const MethodRun& run, const Partition& partition) {
  auto read = ReadEmdMatrix(run, partition);
  if (!read.ok() || !*read) return read;
  std::optional<EmdMatrix>& emd = *read;
  std::map<std::string, int> clusters;
  for (size_t i = 0; i < partition.ids.size(); ++i)
    clusters[partition.ids[i]] = partition.clusters[i];
  plot::LabeledMatrix ordered = plot::OrderByClusters(emd->matrix, clusters);
  MESHLEARN_RETURN_IF_ERROR(plot::WriteMatrixCsv(PathIn(run.dir, kEmdMatrixCsvFile), ordered));
  plot::HeatmapOptions options;
  options.title = run.method.name + " — EMD between nodes (low = same distribution)";
  options.value_label = "EMD";
  options.row_title = "node i (its training data)";
  options.col_title = "peer j (its validation data)";
  options.clusters = &clusters;
  MESHLEARN_RETURN_IF_ERROR(
      plot::RenderHeatmapPng(ordered, PathIn(run.dir, kEmdMatrixPngFile), options));
  return read;
}

Result<std::optional<PolicyClusters>> ReadPolicyClusters(const MethodRun& run,
                                                         const Partition& partition) {
  size_t n = partition.ids.size();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index[partition.ids[i]] = i;
  PolicyClusters found;
  for (size_t i = 0; i < n; ++i) {
    std::string path = PathIn(run.nodes[i].dir, kClusterFile);
    auto text = ReadWholeFile(path);
    if (!text.ok()) continue;
    auto table = ReadCsv<node::ClusterLabelRow>(*text, path);
    if (!table.ok()) return table.status();
    std::map<std::string, int> label;
    int64_t round = 0;
    for (const node::ClusterLabelRow& row : table->rows) {
      label[row.node] = row.label;
      round = row.round;
    }
    if (!label.count(partition.ids[i])) continue;
    // This node's view: its labels of the nodes it clustered against their true clusters.
    std::vector<int> truth, labels;
    for (const auto& [id, l] : label) {
      if (!index.count(id)) continue;
      truth.push_back(partition.clusters[index[id]]);
      labels.push_back(l);
    }
    ++found.clustered_nodes;
    found.mean_round += static_cast<double>(round);
    found.ari += similarity::AdjustedRandIndex(truth, labels);
  }
  if (found.clustered_nodes == 0) return std::optional<PolicyClusters>();
  found.mean_round /= found.clustered_nodes;
  found.ari /= found.clustered_nodes;
  return std::optional<PolicyClusters>(found);
}

Status WriteCurves(const std::string& path, const std::vector<MethodRun>& runs,
                   const Partition& partition, const std::string& title) {
  std::vector<plot::Series> series;
  for (const MethodRun& run : runs) {
    std::map<int64_t, std::pair<double, int>> per_round;
    for (const NodeRun& n : run.nodes) {
      for (const node::RoundRow& r : n.rounds) {
        double v = Metric(r, partition.classification);
        if (!std::isfinite(v)) continue;
        per_round[r.round].first += v;
        ++per_round[r.round].second;
      }
    }
    plot::Series s;
    s.name = run.method.name;
    for (const auto& [round, acc] : per_round) {
      s.x.push_back(static_cast<double>(round));
      s.y.push_back(acc.first / acc.second);
    }
    series.push_back(std::move(s));
  }
  plot::ChartOptions options;
  options.title = title;
  options.y_label = partition.classification ? "mean test accuracy (%)" : "mean test MSE";
  options.log_y = !partition.classification;
  return plot::RenderCurvesPng(series, path, options);
}

// A simulation's real time over its learners' compute time per thread: 1.0 when the workers were
// never idle and nothing else cost time.
double RealOverCompute(const sim::SimulationReport& r) {
  double per_thread = r.compute_seconds / std::max(r.threads, 1);
  return per_thread > 0 ? r.real_seconds / per_thread : 0;
}

// The simulation.csv row of a simulated `run`.
SimulationRow SimulationRowOf(const MethodRun& run) {
  const sim::SimulationReport& r = *run.simulation;
  const double nodes = static_cast<double>(std::max<size_t>(run.nodes.size(), 1));
  return {.method = run.method.name,
          .simulated_s = r.simulated_seconds,
          .real_s = r.real_seconds,
          .events = r.events,
          .events_per_s = r.real_seconds > 0 ? r.events / r.real_seconds : 0,
          .messages = r.messages,
          .jobs = r.jobs,
          .compute_s = r.compute_seconds,
          .threads = r.threads,
          .real_over_compute_per_thread = RealOverCompute(r),
          .nodes = run.nodes.size(),
          .peak_rss_mib = run.simulation_peak_rss_mib,
          .peak_rss_mib_per_node = run.simulation_peak_rss_mib / nodes,
          .exchange_compute_s = r.exchange_compute_seconds,
          .earlier_real_s = r.earlier_real_seconds,
          .earlier_compute_s = r.earlier_compute_seconds};
}

Status WriteSimulationCsv(const std::string& path, const std::vector<MethodRun>& runs) {
  std::vector<SimulationRow> rows;
  // The rows an earlier launch of the run wrote for methods not simulated now stay.
  auto earlier = ReadCsvFile<SimulationRow>(path);
  for (const SimulationRow& row : earlier.ok() ? earlier->rows : std::vector<SimulationRow>()) {
    const bool simulated_now = std::any_of(runs.begin(), runs.end(), [&](const MethodRun& run) {
      return run.simulation && run.method.name == row.method;
    });
    if (!row.method.empty() && !simulated_now) rows.push_back(row);
  }
  for (const MethodRun& run : runs) {
    if (run.simulation) rows.push_back(SimulationRowOf(run));
  }
  MESHLEARN_RETURN_IF_ERROR(WriteCsvFile<SimulationRow>(path, rows));
  if (earlier.ok() || earlier.status().code() == ErrorCode::kNotFound) return Status::Ok();
  return earlier.status().WithContext("the earlier launches' rows are dropped");
}

std::string DescribeSimulation(const MethodRun& run) {
  if (!run.simulation) return "";
  const sim::SimulationReport& r = *run.simulation;
  char text[256];
  std::snprintf(text, sizeof(text),
                "simulation (%s): %.1f s simulated in %.1f s real (%.2fx the learners' compute on "
                "%d threads), %llu events (%.0fk/s), peak memory %.0f MiB (%.2f MiB per node)",
                run.method.name.c_str(), r.simulated_seconds, r.real_seconds, RealOverCompute(r),
                r.threads, static_cast<unsigned long long>(r.events),
                r.real_seconds > 0 ? r.events / r.real_seconds / 1000 : 0.0,
                run.simulation_peak_rss_mib,
                run.simulation_peak_rss_mib / std::max<size_t>(run.nodes.size(), 1));
  std::string line = text;
  if (r.exchange_compute_seconds > 0) {
    std::snprintf(text, sizeof(text), "; the EMD exchange's jobs took %.1f s of the %.1f s compute",
                  r.exchange_compute_seconds, r.compute_seconds);
    line += text;
  }
  return line;
}

}  // namespace meshlearn::launch
