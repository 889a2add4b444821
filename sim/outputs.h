#pragma once
// What a simulation (sim/simulation.h) writes and shows besides its node hosts' own files: each
// node's log, kept in memory and written in batches, and the progress reports.
//
// Specification.
// - A node's log lines read as a process's ("<time> [<id>] [<level>] <text>", at the node's log
//   level) and go to its log file (node/host/node_host.h, NodeLogPathOf), appended in batches of
//   16 KiB and whenever the simulation flushes the node's logger: where it writes the node's other
//   outputs (its host closes, dies in an outage or reaches a snapshot barrier; the run ends). No
//   file stays open between batches.
//   Rationale: a process flushes every line so that its log survives its death; a simulated
//   node's outputs are written at those moments anyway, and a thousand nodes writing a line at a
//   time would spend the run on it.
// - Progress is reported on the simulation thread, at most about once a second of real time
//   (checked every 256 events), and once more at the end of the run.
//   Rationale: a report costs a pass over every node (and with statuses, a document per node);
//   checking the clock every 256 events keeps its cost out of the event loop.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <spdlog/logger.h>

#include "node/config/config.h"
#include "sim/sim_node.h"
#include "sim/simulation.h"

namespace meshlearn::sim {

// The logger of the simulated node of `config`: at its log level, writing to its log file as the
// specification says (nothing reaches the file before 16 KiB or a flush).
std::shared_ptr<spdlog::logger> MakeBufferedNodeLogger(const node::NodeConfig& config);

// Where the simulation of `nodes` stands after `events` events, `simulated_seconds` of virtual
// time and `real_seconds` of real time: each node's last round, the mean of the last validation
// losses that are finite, and with `with_status` each node's status (its host's; once its host is
// gone, the last one it had, or for a dead node what the simulation knows).
SimulationProgress ProgressOf(const std::vector<SimNode>& nodes, double simulated_seconds,
                              double real_seconds, uint64_t events, bool with_status);

// The real clock of one launch and when its progress reports are due.
class ProgressReports {
 public:
  // Reports to `on_progress` (empty: never reports), which must outlive this object.
  explicit ProgressReports(const std::function<void(const SimulationProgress&)>& on_progress)
      : on_progress_(on_progress) {}

  // Starts the real clock: the launch's first event is about to run.
  void Start();
  // Real seconds since Start().
  double real_seconds() const;
  // True when a report is due after event number `events`: there is a callback, `events` is a
  // multiple of 256, and a second of real time passed since the last report (or the start).
  // Counts that second from now when it returns true.
  bool Due(uint64_t events);
  // Hands `progress` to the callback, if any.
  void Report(const SimulationProgress& progress) const;
  // True when there is a callback.
  bool wanted() const { return static_cast<bool>(on_progress_); }

 private:
  const std::function<void(const SimulationProgress&)>& on_progress_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace meshlearn::sim
