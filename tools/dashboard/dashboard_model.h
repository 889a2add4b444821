#pragma once
// What the launcher's dashboard shows of a run, and its JSON (GET /api/state, GET /api/node).
//
// A method is shown live from its nodes' status documents (node/host/status_document.h) while it
// runs, and from its output files (rounds.csv, comm.csv, scores.csv, emd.csv, cluster.csv) once it
// has ended, or when a finished run folder is served. No I/O but reading those files; thread-safe.
//
// Rules:
// - Nodes are shown in ground-truth cluster order (natural id order within a cluster), in every
//   matrix, table and row.
// - Heatmap entry (i, j): how often node i sampled node j. Live: the times_sampled of j in i's
//   /status; from files: comm.csv (the same counter, written at the end).
// - Node table: round, validation loss, peers alive, bytes in and out, failures. Live, failures
//   are the missed deadlines of /status; from files, the sampled peers that did not answer, summed
//   over rounds.csv (the same events), and peers alive are unknown (null).
// - Curves: per method and round, the mean test metric (accuracy in %, or MSE) over the nodes
//   that reached the round, and the same per ground-truth cluster. Live, a node's rounds.csv is
//   read again only when its round advanced.
// - A node's history: its probabilities and scores over the peers, one row per round in which it
//   was seen (live), and the final ones of scores.csv.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/host/status_document.h"
#include "tools/report/report.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::dashboard {

// The run as the page describes it.
struct RunInfo {
  std::string scenario;
  std::string mode;  // "process", "in-process", "simulated" or "finished run"
  std::string out_dir;
  launch::Partition partition;       // node ids, their clusters, the metric
  std::vector<std::string> methods;  // in run order
};

// Everything the dashboard knows of a run; see the rules above.
class DashboardModel {
 public:
  explicit DashboardModel(RunInfo info);
  ~DashboardModel();

  // Method `run` started: its nodes write under run.dir and serve their own pages on
  // run.nodes[i].http_port (0 = none). Its round count comes with their statuses.
  void MethodStarted(const launch::MethodRun& run);

  // The latest statuses of method `name`'s nodes (node order; empty where one did not answer),
  // seen `elapsed` seconds after the method started.
  void Observe(const std::string& name,
               const std::vector<std::optional<node::NodeStatus>>& statuses, double elapsed);

  // Method `run` has ended (run.wall_seconds, run.interrupted): from now on it is shown from its
  // output files, with the status the report gives it (launch::Summarize: "complete",
  // "interrupted" or "failed"). Errors name a file that exists but does not parse; what could be
  // read is shown.
  Status ShowFinished(const launch::MethodRun& run);

  // GET /api/state: the run, every method's progress and curves, and for `method` (default: the
  // running one, else the last finished) the heatmap, the node table, and the EMD matrix and
  // clusters found when it has them.
  std::string StateJson(const std::string& method) const;

  // GET /api/node: node `id` of `method`: its peers (cluster order) and, per recorded round, its
  // probabilities and scores (null: unscored). kNotFound naming what is unknown.
  Result<std::string> NodeJson(const std::string& method, const std::string& id) const;

 private:
  struct Method;
  Method* Find(const std::string& name) const;
  // The method named `name`, added (empty) when it is not there yet. Requires mutex_ held.
  Method* FindOrAdd(const std::string& name);
  // The method whose details /api/state shows for `method`: the one of that name, else the
  // running one, else the last that has data; null when none has. Requires mutex_ held.
  const Method* Shown(const std::string& method) const;

  RunInfo info_;
  std::vector<size_t> order_;            // node indices in cluster order
  std::map<std::string, size_t> index_;  // id -> node index
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Method>> methods_;
  uint64_t observations_ = 0;
};

}  // namespace meshlearn::dashboard
