#pragma once
// Results of a launcher run: the paper-style table (file 004, Tables 2/3), summary.csv, the
// per-method heatmaps and the curves picture.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tools/plot/matrix_csv.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/run_types.h"
#include "tools/scenario/summary_csv.h"

namespace meshlearn::launch {

// What the clustering policies (samplers louvain and temperature) found.
struct PolicyClusters {
  double ari = 0;           // mean over clustered nodes of their partition's ARI
  double mean_round = 0;    // mean over clustered nodes of the round of their last clustering
  int clustered_nodes = 0;  // nodes that wrote cluster.csv
};

// Computes the summary of `run` over its honest nodes (attackers are only counted). A node's test
// metric is the one of its best-validation round.
MethodSummary Summarize(const MethodRun& run, const Partition& partition);

// The manifest record of a method summarized as `summary` (times are the caller's).
MethodRecord RecordOf(const MethodSummary& summary);

// The table printed at the end of a run, one row per method; a method that did not complete
// says so, with the rounds its nodes reached. When a method was simulated, the `wall` column
// becomes two, `real` and `simulated` seconds. With a target, a `to target` column has each
// method's time to target. Lines under the table say which clock the overhead column measures
// and what the target is. When a method has full-test figures, a second table gives them per
// cluster.
std::string FormatTable(const std::vector<MethodSummary>& summaries, int num_clusters);

// Writes "<run.dir>/heatmap.csv" (ordered by cluster) and "<run.dir>/heatmap.png".
Status WriteHeatmap(const MethodRun& run, const Partition& partition, const std::string& title);

// The test metric of a round in the unit the tables use: accuracy in percent, or the MSE.
double Metric(const node::RoundRow& row, bool classification);

// An estimate of the seconds a method still needs, from each node's last completed round
// (`reached`, -1 for none) out of `rounds` after `elapsed` seconds; nullopt before 2% is done.
std::optional<double> EstimateSecondsLeft(const std::vector<int64_t>& reached, int64_t rounds,
                                          double elapsed);

// What the EMD exchange of a method found.
struct EmdMatrix {
  plot::LabeledMatrix matrix;  // EMD_ij in partition order; NaN where not measured
  std::vector<int> found;      // the clusters found (identical mutual neighbourhoods), per node
  double ari = 0;              // adjusted Rand index of `found` against the ground truth
  // Over every measurement of every node (emd.csv measured_s and measured_round), when recorded:
  // the longest time from the start of a node's exchange, and the first and last round.
  std::optional<double> exchange_seconds;
  std::optional<std::pair<int64_t, int64_t>> exchange_rounds;
};

// The largest run whose EMD matrix is read: the matrix is dense, N x N doubles and flags.
inline constexpr size_t kMaxEmdMatrixNodes = 4096;

// Reads the emd.csv files the nodes of `run` wrote so far; nullopt when none did. Nothing is
// allocated before an emd.csv is found; kTooLarge naming the file and the limit when one is and
// the run has more than kMaxEmdMatrixNodes nodes.
Result<std::optional<EmdMatrix>> ReadEmdMatrix(const MethodRun& run, const Partition& partition);

// When the nodes of `run` wrote emd.csv: writes "<run.dir>/emd_matrix.csv" (entry (i, j) =
// EMD_ij, empty when not measured) and emd_matrix.png, finds clusters as identical mutual
// neighbourhoods (file 000; DESIGN.md "EMD embedding exchange", step 5) and returns the adjusted
// Rand index against the ground truth, with how long the exchange ran and in which rounds (as
// ReadEmdMatrix). Returns nullopt when no node took part in the exchange, and ReadEmdMatrix's
// errors.
Result<std::optional<EmdMatrix>> WriteEmdMatrix(const MethodRun& run, const Partition& partition);

// When nodes of `run` wrote cluster.csv (samplers louvain and temperature): each node's final
// partition of the peers it clustered is scored by ARI against their true clusters (issue 9: "ARI
// of each node's final cluster against ground truth"), and the mean over the nodes that clustered
// is returned with their mean clustering round. Rationale: every node clusters only what it has
// seen, so views differ slightly; demanding identical neighbourhoods (as for the EMD exchange)
// would turn one node's stray peer into singletons everywhere. Returns nullopt when no node wrote
// cluster.csv; kMalformed naming the file for a line that does not parse.
Result<std::optional<PolicyClusters>> ReadPolicyClusters(const MethodRun& run,
                                                         const Partition& partition);

// Writes "<out>/curves.png": mean test metric per round for each method.
Status WriteCurves(const std::string& path, const std::vector<MethodRun>& runs,
                   const Partition& partition, const std::string& title);

// One row of simulation.csv: how one method's simulation went (sim::SimulationReport), with the
// launcher's peak resident memory in MiB, in all and per node.
struct SimulationRow {
  std::string method;
  double simulated_s = 0, real_s = 0;
  uint64_t events = 0;
  double events_per_s = 0;
  uint64_t messages = 0, jobs = 0;
  double compute_s = 0;
  int threads = 0;
  double real_over_compute_per_thread = 0;
  uint64_t nodes = 0;
  double peak_rss_mib = 0, peak_rss_mib_per_node = 0, exchange_compute_s = 0;
  // The real and compute seconds of the launches before this one, up to the snapshot it resumed
  // from (0 without a resume, NaN when not known); columns added later.
  double earlier_real_s = NAN, earlier_compute_s = NAN;

  // The columns of simulation.csv (base/csv_table.h).
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("method", r.method, TextCell{.quoted = true});
    c.Column("simulated_s", r.simulated_s);
    c.Column("real_s", r.real_s);
    c.Column("events", r.events);
    c.Column("events_per_s", r.events_per_s);
    c.Column("messages", r.messages);
    c.Column("jobs", r.jobs);
    c.Column("compute_s", r.compute_s);
    c.Column("threads", r.threads);
    c.Column("real_over_compute_per_thread", r.real_over_compute_per_thread);
    c.Column("nodes", r.nodes);
    c.Column("peak_rss_mib", r.peak_rss_mib);
    c.Column("peak_rss_mib_per_node", r.peak_rss_mib_per_node);
    c.Column("exchange_compute_s", r.exchange_compute_s);
    c.Column("earlier_real_s", r.earlier_real_s, Presence::kAddedLater);
    c.Column("earlier_compute_s", r.earlier_compute_s, Presence::kAddedLater);
  }
};

// One row of network.csv, a simulated method of a heterogeneous mesh: a node's compute factor and
// access link (sim/heterogeneity.h, NodeProfile), bandwidth empty for an infinite one.
struct NetworkRow {
  std::string node;
  double compute_factor = 1;
  double latency_ms = 0;
  std::optional<double> bandwidth_mbit_s;

  // The columns of network.csv (base/csv_table.h).
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("node", r.node);
    c.Column("compute_factor", r.compute_factor);
    c.Column("latency_ms", r.latency_ms);
    c.Column("bandwidth_mbit_s", r.bandwidth_mbit_s);
  }
};

// Writes "<out>/simulation.csv" for a --simulate run: one SimulationRow per simulated method.
// Unlike the other outputs it depends on the machine. The rows of an existing file for methods
// not simulated in `runs` (a resumed run's earlier launch) are kept; when that file does not read
// (ReadCsv), the new file has this launch's rows only and its error is returned.
Status WriteSimulationCsv(const std::string& path, const std::vector<MethodRun>& runs);

// One line on how `run`'s simulation went: simulated against real time, events per second,
// memory per node.
std::string DescribeSimulation(const MethodRun& run);

}  // namespace meshlearn::launch
