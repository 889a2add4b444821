#pragma once
// summary.csv, "<out>/summary.csv": one row per method of a run, its figures (MethodSummary),
// described once (base/csv_table.h). The report writes it (tools/report/report.h) and the run
// reader takes the methods' order from it (tools/scenario/run_reader.h).

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/csv_table.h"
#include "base/status.h"
#include "tools/scenario/manifest.h"

namespace meshlearn::launch {

// The metrics a summary's figures are in: accuracy in percent, or the MSE.
inline constexpr std::string_view kMetricNames[] = {"accuracy", "mse"};
// The statuses a summary row has (the manifest's, tools/scenario/manifest.h).
inline constexpr std::string_view kSummaryStatuses[] = {kComplete, kInterrupted, kFailed};

// The cell of an EMD exchange's rounds: "<first>-<last>", or "<round>" when they are one;
// empty when there was no exchange.
struct RoundRangeCell {
  // The cell of `rounds` ("" for none).
  std::string Write(const std::optional<std::pair<int64_t, int64_t>>& rounds) const;
  // Reads `cell` into `out` (nullopt for an empty cell); kMalformed naming `where`, with what is
  // allowed, for text that is not a round or a range of rounds.
  Status Read(std::string_view cell, const std::string& where,
              std::optional<std::pair<int64_t, int64_t>>& out) const;
};

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

  // The columns of summary.csv (base/csv_table.h); nodes_alone and full_test_images are not in
  // the file. Files from earlier versions lack the columns added later (nodes_halted,
  // bytes_sent_per_node and the time-to-target columns); the full-test columns are a feature's,
  // there only when a method has full-test figures.
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& s) {
    constexpr Presence kLater = Presence::kAddedLater;
    c.Column("method", s.name, TextCell{.quoted = true});
    c.Column("metric", s.metric, WordCell{kMetricNames});
    c.Group("cluster_", s.per_cluster);
    c.Column("mean", s.mean);
    c.Column("in_cluster", s.in_cluster);
    c.Column("wall_s", s.wall_seconds);
    c.Column("simulated_s", s.simulated_seconds);
    c.Column("overhead", s.overhead);
    c.Column("nodes", s.nodes);
    c.Column("nodes_failed", s.nodes_failed);
    c.Column("nodes_halted", s.nodes_halted, kLater);
    c.Column("peak_pss_mib_mean", s.peak_pss_mib_mean);
    c.Column("peak_pss_mib_max", s.peak_pss_mib_max);
    c.Column("ari", s.ari);
    c.Column("cluster_round", s.cluster_round);
    c.Column("attackers", s.attackers);
    c.Column("status", s.status, WordCell{kSummaryStatuses});
    c.Column("rounds", s.rounds);
    c.Column("first_node_round", s.first_node_round);
    c.Column("last_node_round", s.last_node_round);
    c.Column("exchange_s", s.exchange_seconds);
    c.Column("exchange_rounds", s.exchange_rounds, RoundRangeCell{});
    c.Column("epsilon", s.epsilon);
    c.Column("bytes_sent_per_node", s.bytes_sent_per_node, kLater);
    c.Column("target_acc", s.target_acc, kLater);
    c.Column("time_to_target_s", s.time_to_target_s, kLater);
    c.Column("worst_node", s.worst_node, kLater);
    c.Group("full_test_cluster_", s.full_test_per_cluster, Presence::kWhenUsed);
    c.Column("full_test_mean", s.full_test_mean, Presence::kWhenUsed);
    c.Column("full_test_worst_node", s.full_test_worst_node, Presence::kWhenUsed);
  }
};

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

// Reads a summary.csv (the description's rules: every earlier layout, strictly); kNotFound when
// there is none.
Result<CsvTable<MethodSummary>> ReadSummaryCsv(const std::string& path);

}  // namespace meshlearn::launch
