#pragma once
// Results of a launcher run: the paper-style table (file 004, Tables 2/3), summary.csv, the
// per-method heatmaps and the curves picture.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tools/plot/matrix_csv.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// The figures of one method.
struct MethodSummary {
  std::string name;
  std::string metric;               // "accuracy" (percent) or "mse"
  std::vector<double> per_cluster;  // mean best-validation test metric of each cluster's nodes
  double mean = 0;                  // over all nodes with at least one round
  // The worst honest node's best-validation test metric: the lowest accuracy, or the highest MSE
  // (NaN without one). Rationale: a mean can hide a cluster that a few nodes let down.
  double worst_node = NAN;
  double in_cluster = 0;    // share of samples whose peer is in the sampler's cluster
  double wall_seconds = 0;  // real seconds the method took
  std::optional<double> simulated_seconds;  // --simulate: the simulated seconds it took
  // Mean over nodes of the share of a node's time (rounds.csv wall_s: real seconds, simulated
  // seconds under --simulate) spent outside training and evaluation.
  double overhead = 0;
  int nodes = 0;
  int nodes_failed = 0;
  // Honest nodes whose learning halted on a failed round (training or evaluation failed, e.g. on
  // overflowed weights: a row with `stopped` and no validation loss). They served their last model
  // from then on, and their figure is their best round before it.
  int nodes_halted = 0;
  int nodes_alone = 0;           // nodes whose log ends saying they never reached a peer
  int attackers = 0;             // nodes that served poisoned models; left out of the metrics
  double peak_pss_mib_mean = 0;  // process mode: mean over nodes of their peak PSS
  double peak_pss_mib_max = 0;   // process mode: largest node; in-process: the whole process
  std::optional<double> ari;     // EMD exchange or clustering policy: ARI of the found clusters
  std::optional<double> cluster_round;  // clustering policy: mean round the nodes last clustered
  // kComplete, kInterrupted (Ctrl-C) or kFailed (some nodes failed), as in the manifest.
  std::string status = kComplete;
  int64_t rounds = 0;  // the configured last round
  // The lowest and highest last round the nodes completed (-1: none completed round 0).
  int64_t first_node_round = -1, last_node_round = -1;
  // EMD exchange: the longest time a node took from the start of its exchange to its last
  // measurement, and the first and last round in which measurements completed.
  std::optional<double> exchange_seconds;
  std::optional<std::pair<int64_t, int64_t>> exchange_rounds;
  // [privacy]: the largest ε an honest node had spent at its last round; nullopt without DP.
  std::optional<double> epsilon;
  // Mean over the nodes with a round (attackers included: their bytes cost the network too) of
  // the bytes each sent, as its last rounds.csv row counts them: the encoded frames (issue 31).
  double bytes_sent_per_node = 0;
  // Time to target (tools/report/bytes_to_target.h): the run's target (the lowest final accuracy
  // of its methods less kRunTargetPoints, in percent) and the seconds (rounds.csv wall_s) until
  // this method's honest nodes' mean test accuracy first reached it; nullopt for MSE, or never.
  std::optional<double> target_acc;
  std::optional<double> time_to_target_s;
  // [data] test = "cluster": the mean per cluster and overall, over the honest nodes tested, of
  // the test metric of each node's best model on its cluster's full test set (full_test.h);
  // empty and nullopt otherwise.
  std::vector<double> full_test_per_cluster;
  std::optional<double> full_test_mean;
  std::optional<double> full_test_worst_node;  // the worst honest node's full-test metric
  int64_t full_test_images = 0;                // the largest cluster test set's size
};

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

// Writes "<out>/summary.csv": one row per method with per-cluster and mean metric, in-cluster
// rate, real seconds (wall_s) and simulated seconds (simulated_s, empty unless simulated),
// overhead, peak memory, the method's status with the rounds its nodes reached, the largest ε a
// node spent (empty without [privacy]), the bytes a node sent, and the run's target accuracy with
// the method's time to it (empty when not known or never reached), and the worst node's metric.
// When a method has full-test figures ([data] test = "cluster"), the columns
// full_test_cluster_<c>..., full_test_mean and full_test_worst_node follow (empty for methods
// without); otherwise the file is as before they existed.
Status WriteSummaryCsv(const std::string& path, const std::vector<MethodSummary>& summaries,
                       int num_clusters);

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

// Reads the emd.csv files the nodes of `run` wrote so far; nullopt when none did.
std::optional<EmdMatrix> ReadEmdMatrix(const MethodRun& run, const Partition& partition);

// When the nodes of `run` wrote emd.csv: writes "<run.dir>/emd_matrix.csv" (entry (i, j) =
// EMD_ij, empty when not measured) and emd_matrix.png, finds clusters as identical mutual
// neighbourhoods (file 000; DESIGN.md "EMD embedding exchange", step 5) and returns the adjusted
// Rand index against the ground truth, with how long the exchange ran and in which rounds (as
// ReadEmdMatrix). Returns nullopt when no node took part in the exchange.
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

// Writes "<out>/simulation.csv" for a --simulate run: per method the simulated and real seconds,
// events, events per second, messages, learner jobs and the launcher's peak resident memory in
// MiB, in all and per node. Unlike the other outputs it depends on the machine. The rows of an
// existing file for methods not simulated in `runs` (a resumed run's earlier launch) are kept.
Status WriteSimulationCsv(const std::string& path, const std::vector<MethodRun>& runs);

// One line on how `run`'s simulation went: simulated against real time, events per second,
// memory per node.
std::string DescribeSimulation(const MethodRun& run);

}  // namespace meshlearn::launch
