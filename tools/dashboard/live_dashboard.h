#pragma once
// The launcher's dashboard: a web page at http://127.0.0.1:PORT/ that shows a run live
// (meshlearn-launch SCENARIO --dashboard PORT) or a finished run folder (meshlearn-launch serve
// RUN_DIR --dashboard PORT).
//
// - GET / (index.html), /dashboard.js, /dashboard.css: the page, and /uPlot.iife.min.js,
//   /uPlot.min.css: its charts (npm uplot, installed by scripts/setup.sh). All are embedded at
//   build time; nothing is fetched at run time.
// - GET /api/state?method=NAME and /api/node?method=NAME&id=ID: DashboardModel's JSON.
// - While a method runs, one thread polls its nodes' status once a second (kPollInterval) and
//   feeds the model. The dashboard measures what it costs: the CPU time of that thread, of its
//   own HTTP server and, with processes, of the nodes answering /status, against the CPU time
//   of the whole run (this process and the node processes it waited for).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/csv_table.h"
#include "base/status.h"
#include "process/http_server.h"
#include "tools/dashboard/dashboard_model.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/run_reader.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::dashboard {

// How often the running method's nodes are polled.
inline constexpr std::chrono::milliseconds kPollInterval{1000};

// What the dashboard cost one method.
struct DashboardCost {
  std::string method;
  double wall_s = 0;            // from the nodes' start to their end
  double run_cpu_s = 0;         // CPU of this process and of the node processes in that time
  double polling_cpu_s = 0;     // the polling thread, status parsing and model updates included
  double serving_cpu_s = 0;     // the dashboard's HTTP server
  double nodes_http_cpu_s = 0;  // the nodes' HTTP endpoints (processes only)
  uint64_t polls = 0;
  double mean_poll_ms = 0;   // wall time of one poll of every node
  double cpu_share() const;  // (polling + serving + nodes) / run
};

// The page and its data; the launch::RunWatcher of live runs.
class LiveDashboard : public launch::RunWatcher {
 public:
  // Serves `info`'s run on `bind_address`:`port` (0: an ephemeral port). Errors as
  // node::HttpServer::Start.
  static Result<std::unique_ptr<LiveDashboard>> Start(const std::string& bind_address,
                                                      uint16_t port, RunInfo info);
  ~LiveDashboard() override;

  // The port the page is served on.
  uint16_t port() const;
  // The model behind the page (e.g. to show finished methods).
  DashboardModel& model() { return model_; }

  // launch::RunObserver: polls `statuses` every kPollInterval until NodesStopped.
  void NodesStarted(const launch::MethodRun& run, launch::StatusSource statuses) override;
  void NodesStopped(const launch::MethodRun& run) override;
  // launch::RunWatcher: shows `run` from its files (ShowFinished; an error goes to stderr).
  void MethodEnded(const launch::MethodRun& run) override;
  // launch::RunWatcher: prints DescribeCosts and writes "<out_dir>/dashboard.csv".
  void RunEnded(const std::string& out_dir) override;

  // What the dashboard cost each method that ran under it.
  std::vector<DashboardCost> Costs() const;

 private:
  LiveDashboard(RunInfo info);
  void Poll();

  DashboardModel model_;
  std::unique_ptr<node::HttpServer> server_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  launch::StatusSource source_;  // set while a method runs
  std::string method_;
  std::chrono::steady_clock::time_point started_;
  bool polling_ = false;  // a poll is under way outside the lock
  bool stopping_ = false;
  std::vector<DashboardCost> costs_;
  // At NodesStarted: the run's CPU, the server's CPU, the thread's CPU.
  double run_cpu_at_start_ = 0, serving_cpu_at_start_ = 0;
  std::thread poller_;
};

// One line per method on what the dashboard cost the run.
std::string DescribeCosts(const std::vector<DashboardCost>& costs);

// One row of dashboard.csv: a method's DashboardCost, with the dashboard's CPU seconds
// (polling + serving + nodes' HTTP) and their share of the run's.
struct DashboardCostRow {
  std::string method;
  double wall_s = 0, run_cpu_s = 0, dashboard_cpu_s = 0, cpu_share = 0, polling_cpu_s = 0,
         serving_cpu_s = 0, nodes_http_cpu_s = 0;
  uint64_t polls = 0;
  double mean_poll_ms = 0;

  // The columns of dashboard.csv (base/csv_table.h).
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("method", r.method, TextCell{.quoted = true});
    c.Column("wall_s", r.wall_s);
    c.Column("run_cpu_s", r.run_cpu_s);
    c.Column("dashboard_cpu_s", r.dashboard_cpu_s);
    c.Column("cpu_share", r.cpu_share);
    c.Column("polling_cpu_s", r.polling_cpu_s);
    c.Column("serving_cpu_s", r.serving_cpu_s);
    c.Column("nodes_http_cpu_s", r.nodes_http_cpu_s);
    c.Column("polls", r.polls);
    c.Column("mean_poll_ms", r.mean_poll_ms);
  }
};

// Writes "dashboard.csv": one DashboardCostRow per method.
Status WriteCostsCsv(const std::string& path, const std::vector<DashboardCost>& costs);

// The page's description of the finished run folder `run_dir`, read by launch::ReadRunFolder
// (tools/scenario/run_reader.h, the reader `report` uses too): its methods in the same order.
RunInfo RunInfoOf(const launch::RunFolder& folder, const std::string& run_dir);

// `meshlearn-launch serve RUN_DIR --dashboard PORT`: serves a finished run until SIGINT or
// SIGTERM. Returns the exit code (0, or 2 for a bad command line or run folder).
int ServeCommand(int argc, char** argv);

}  // namespace meshlearn::dashboard
