#pragma once
// A deterministic discrete-event simulation of a whole mesh in one process: every node's real
// state machine (node/logic/state_machine.h) and real learner (node/logic/learner.h), on a virtual
// clock and a modelled network (sim/network_model.h) instead of sockets and threads per node.
//
// Its parts, each with its own contract, over one record per node (sim/sim_node.h):
// - the simulator (sim/simulator.h) and scheduling (sim/scheduling.h): the virtual clock and its
//   events, the node hosts in their simulated worlds, their learner jobs, ticks, faults and
//   outages;
// - the snapshot barrier and restore (sim/snapshot_barrier.h; the snapshot's text: sim/snapshot.h);
// - outputs and progress (sim/outputs.h): node logs buffered in memory, progress reports;
// - the sequential exchange schedule's turns (sim/exchange_turns.h).
//
// Specification.
// - Time is virtual: events (a message arriving, a request's deadline, a learner job finishing, a
//   node's tick every 50 ms, an outage starting or ending) are processed in order of their time
//   and, at equal times, of their creation. Round deadlines, pacing and lingering use this clock,
//   so no node ever waits on a real one.
// - Every node is the real node host (node/host/node_host.h) in a simulated world: its messages are
//   encoded and decoded with the real codec and travel as frames through the simulated network
//   (node/transport/simulated_network.h) on the virtual clock, where the network model applies to
//   their real sizes and may damage them. A request gets its reply, or its deadline, once. A node
//   that finished says Goodbye to its peers as a process does, then answers nothing; a dead node
//   answers nothing: its peers see timeouts, as on a network.
// - Learner jobs run on a pool of worker threads, a node's jobs one at a time in order; the
//   simulation waits for a job only when the virtual clock reaches its end. Jobs of nodes that
//   compute at the same virtual time therefore run in parallel.
// - Determinism: with the same configs, network model and seed, every output (rounds.csv,
//   comm.csv, scores.csv, emd.csv, signature.csv, cluster.csv) is byte-identical whatever the
//   number of threads. Rationale: a job's result depends only on its node's learner and inputs,
//   and every decision is taken by the single simulation thread in event order; timings that would
//   come from the real clock (wall_s, train_s, eval_s) are virtual.
// - Outputs are the ones a node process writes, in the same folders. A simulated node keeps its
//   rows, tables, checkpoint and log lines in memory and writes them when it finishes, dies (a
//   death restarts from the checkpoint it wrote, as a process restarted by hand does), at a
//   snapshot barrier, and at the end of the run; it holds no file open.
//   Rationale: a thousand nodes writing and syncing files every round would spend the run on it,
//   and ten thousand nodes with a file open each would exceed the process's descriptors.
//   Those writes may meet storage faults ([network.storage], sim/storage_faults.h): a failed
//   write fails its node, reported with its reason; a restart that refuses a corrupt (torn)
//   checkpoint moves it aside (`checkpoint.bin.torn`), logs why and restarts the node clean
//   from round 0, as the refusal tells an operator to do.
// - Snapshots (snapshot_every = N > 0): after every N-th round k (k < the last round) every node
//   waits, still serving, until all have completed round k (or finished). At that barrier every
//   node's outputs and checkpoint are written, the checkpoints are copied into
//   `<snapshot_dir>/round-<k>/`, and `<snapshot_dir>/snapshot.txt` records the virtual time, the
//   network's generator and each node's state. Then every node restarts from its checkpoint, as
//   a resumed run does; what was in flight at the barrier is dropped in both.
//   Rationale: a resumed run then gives the same outputs as one that was never stopped, byte for
//   byte, because both restart at the same barriers from the same state. A run with snapshots
//   differs from one without (every barrier is a restart of the mesh), so N is a setting of the
//   run, recorded by the launcher.
// - Exchange schedule (SimulationOptions::schedule): "synchronous" (the default) is the node's
//   round as a process runs it (every node fetches its peers' round t-1 snapshots). With
//   "sequential" the nodes of round t >= 1 exchange one at a time, in place, in a fresh
//   permutation per round drawn from the seed, and train once all have exchanged, as file 004's
//   code does (sim/exchange_turns.h; a node's side: node/logic/round_driver.h). A node that
//   cannot take its turn (dead, paused, finished, failed) is skipped and catches up when it
//   can; snapshot barriers fall between rounds, so a resumed run takes the same turns. The
//   nodes' round jobs then run one at a time, so such a run is slower in real time and, with
//   round_compute_s > 0, in simulated time. Nodes with [node.compression] codec = "topk" are
//   refused (their public estimate advances once per round).
// - Stopping: the interrupt (Ctrl-C, SIGTERM) stops a run without snapshots at the next event. A
//   run with snapshots goes on to its next barrier (at most N rounds), takes the snapshot there
//   and stops; `resume` continues from the last snapshot.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config.h"
#include "node/host/status_document.h"
#include "node/transport/simulated_network.h"
#include "sim/exchange_turns.h"
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
  // Set: the simulation stops at the next event (Ctrl-C), or at its next snapshot barrier.
  const std::atomic<bool>* interrupt = nullptr;
  // Take a snapshot after every this many rounds (0: never; see the specification).
  int64_t snapshot_every = 0;
  // Where snapshots go (required with snapshot_every or resume).
  std::string snapshot_dir;
  // Continue from the snapshot in snapshot_dir (kNotFound when there is none, kMalformed naming
  // the line of a damaged one, kInvalidArgument when it belongs to other nodes).
  bool resume = false;
  // How the nodes of a round exchange models (see the specification).
  ExchangeSchedule schedule = ExchangeSchedule::kSynchronous;
  // Builds each node's learner instead of its config's (tests: a learner whose every number can
  // be worked by hand); unset: the node's own (CreateLearner).
  std::function<Result<std::unique_ptr<node::Learner>>(const node::NodeConfig&)> make_learner;
};

// What a simulation did.
struct SimulationReport {
  // Virtual time from the start to the last node finishing (interrupted: to where it stopped).
  double simulated_seconds = 0;
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
  // The round of the last snapshot this run took (-1: none), and the one it resumed from (-1:
  // it started at round 0). Counts above (events, messages, jobs, seconds) cover this run only.
  int64_t snapshot_round = -1;
  int64_t resumed_from = -1;
  // With resumed_from >= 0: the real and learners' compute seconds of the launches before this
  // one, up to that snapshot (NaN when the snapshot did not record them); 0 otherwise. This
  // launch's real_seconds plus earlier_real_seconds is what the run cost, redone rounds once.
  double earlier_real_seconds = 0;
  double earlier_compute_seconds = 0;
  // The faults injected, by kind (docs/development.md "The fault fuzzer"): messages "lost",
  // "cut" by a partition, "corrupted", "truncated" and "duplicated"; "death" (outages and churn)
  // and "pause" outages; storage faults (sim/storage_faults.h: "write_failed", "disk_full",
  // "checkpoint_torn"); and what restarts did with torn checkpoints: "torn_refused" (refused,
  // the node restarted clean) and "torn_loaded" (loaded as if whole: a bug).
  std::map<std::string, uint64_t> faults;
  // The fates of every message sent (node/transport/simulated_network.h).
  node::MessageLedger ledger;
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
