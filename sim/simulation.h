#pragma once
// A deterministic discrete-event simulation of a whole mesh in one process: every node's real
// state machine (node/state_machine.h) and real learner (node/learner.h), on a virtual clock and a
// modelled network (sim/network_model.h) instead of sockets and threads per node.
//
// Specification.
// - Time is virtual: events (a message arriving, a request's deadline, a learner job finishing, a
//   node's tick every 50 ms, an outage starting or ending) are processed in order of their time
//   and, at equal times, of their creation. Round deadlines, pacing and lingering use this clock,
//   so no node ever waits on a real one.
// - Messages pass as objects, never encoded, but each is sized as its encoding (protocol/codec.h)
//   for the bandwidth model and the byte counters. A request gets its reply, or its deadline, once.
//   A node that finished, or is dead, answers nothing: its peers see timeouts, as on a network.
// - Learner jobs run on a pool of worker threads, a node's jobs one at a time in order; the
//   simulation waits for a job only when the virtual clock reaches its end. Jobs of nodes that
//   compute at the same virtual time therefore run in parallel.
// - Determinism: with the same configs, network model and seed, every output (rounds.csv,
//   comm.csv, scores.csv, emd.csv, signature.csv, cluster.csv) is byte-identical whatever the
//   number of threads. Rationale: a job's result depends only on its node's learner and inputs,
//   and every decision is taken by the single simulation thread in event order; timings that would
//   come from the real clock (wall_s, train_s, eval_s) are virtual.
// - Outputs are the ones a node process writes, in the same folders. A simulated node keeps its
//   checkpoint in memory (a death restarts from it) and writes it, comm.csv, scores.csv and
//   emd.csv once, when it finishes.
//   Rationale: a thousand nodes writing and syncing files every round would spend the run on it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config.h"
#include "node/status_document.h"
#include "sim/network_model.h"

namespace meshlearn::sim {

// Where a simulation stands, for progress lines.
struct SimulationProgress {
  std::vector<int64_t> reached;  // each node's last completed round (-1: none)
  double mean_val_loss = 0;      // over the nodes with a round
  double simulated_seconds = 0;
  double real_seconds = 0;
  uint64_t events = 0;
  // With SimulationOptions::with_status: each node's status, in config order (the document a
  // node's /status shows; bytes are the simulated ones).
  std::vector<node::NodeStatus> statuses;
};

// How a simulation runs.
struct SimulationOptions {
  NetworkModel network;
  uint64_t seed = 1;  // the network's randomness (message loss)
  int threads = 0;    // learner workers; 0: the machine's core count
  // Called about once a second of real time, on the simulation thread.
  std::function<void(const SimulationProgress&)> on_progress;
  // Fill SimulationProgress::statuses (it costs a status document per node and report).
  bool with_status = false;
  // Set: the simulation stops at the next event (Ctrl-C).
  const std::atomic<bool>* interrupt = nullptr;
};

// What a simulation did.
struct SimulationReport {
  double simulated_seconds = 0;  // virtual time from the start to the last node finishing
  double real_seconds = 0;
  uint64_t events = 0;
  uint64_t messages = 0;       // requests and replies sent
  uint64_t jobs = 0;           // learner jobs run
  double compute_seconds = 0;  // real seconds the workers spent in learner jobs, summed
  // The part of compute_seconds spent in jobs other than rounds (the EMD exchange's embeddings,
  // projections and measurements).
  double exchange_compute_seconds = 0;
  int threads = 0;  // learner workers it ran
  bool interrupted = false;
  // Per node, in config order: why it failed (its own error, e.g. a NaN loss that stopped the
  // learner, is not a failure; an output folder it cannot write is), or nothing.
  std::vector<std::optional<std::string>> failures;
};

// Simulates the mesh of `configs` (each node's config, as a process would get it: listen
// endpoints name the nodes, output folders receive their files) until every node finished or the
// interrupt is set. Errors before the start name the node and what is wrong (its shard, model or
// config), e.g. kInvalidArgument for an outage or partition naming an unknown node.
Result<SimulationReport> Simulate(const std::vector<node::NodeConfig>& configs,
                                  const SimulationOptions& options);

}  // namespace meshlearn::sim
