#pragma once
// The world a node host (node/host/node_host.h) lives in. The host is the one assembly of a node
// and the one interpreter of its actions; a World gives it everything that differs between a
// process and a simulation, and nothing else:
// - time: Now(), and the host's Tick(), which the world calls at least every kTickInterval while
//   the node runs;
// - a transport: ZeroMQ's in a process, the simulated network (node/transport/simulated_network.h)
// under the
//   simulator; either way the host encodes and decodes every frame itself with the real codec;
// - a thread for the host: every call into the host, and every task the host posts, runs on the
//   world's one node thread (a process's event thread, or the simulation's thread);
// - learner jobs: a worker thread of the node's own, or the simulation's pool of workers;
// - how outputs are kept: written as they change (a process, which may be killed at any moment),
//   or buffered in memory until the world flushes them (a simulation of thousands of nodes, none
//   of which may hold a file open).
//
// Rationale: FoundationDB and TigerBeetle are trusted because their simulators run the real
// stack. Here the simulator and the process differ only in this interface, so that every rule of
// the host (decoding, refusing a bad message, checkpoints, goodbyes) runs under both.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/atomic_file.h"
#include "base/status.h"
#include "node/logic/learner.h"
#include "node/logic/learner_jobs.h"
#include "node/transport/transport.h"

namespace meshlearn::node {

// How often a world calls NodeHost::Tick() while the node runs.
inline constexpr std::chrono::milliseconds kTickInterval{50};

// How a world keeps a node's output folder (node/host/outputs.h).
enum class OutputKeeping {
  // Every row, table and checkpoint reaches its file when it changes, under the folder's lock.
  kDurable,
  // Rows, tables and the checkpoint stay in memory until NodeHost::Flush(); no file stays open.
  kBuffered,
};

// What a node host needs of the world it runs in. Implementations: the process world of
// node/host/node.h, and the simulated world of sim/simulation.h.
class World {
 public:
  virtual ~World() = default;

  // The current time: the steady clock, or the simulation's virtual clock.
  virtual TimePoint Now() const = 0;

  // Starts the node's transport with `options`; `on_request` may be called on any thread (the
  // host posts what it receives to its own thread).
  virtual Result<std::unique_ptr<Transport>> StartTransport(TransportOptions options,
                                                            InboundHandler on_request) = 0;

  // Runs `task` on the node's thread, after the tasks posted before it. Thread-safe. A world may
  // drop tasks for a node that has stopped or died.
  virtual void Post(std::function<void()> task) = 0;

  // Runs `job` on `learner`, after the jobs handed over before it, and calls `done` with its
  // result (from any thread; the host posts it to its own). Called on the node's thread.
  virtual void RunJob(std::shared_ptr<Learner> learner, LearnerJob job,
                      std::function<void(LearnerResult)> done) = 0;

  // How the node's outputs are kept.
  virtual OutputKeeping outputs() const = 0;

  // With OutputKeeping::kBuffered: writes one buffered output file (`bytes` to `path`,
  // atomically) when the host flushes; kIoError naming the path when it cannot. The default
  // writes it. Rationale: the simulated world injects its storage faults here
  // (sim/storage_faults.h), outside every code path of a process.
  virtual Status WriteOutputFile(const std::string& path, std::string_view bytes) {
    return WriteFileAtomically(path, bytes);
  }

  // The node's nonce for this incarnation: its half of every EMD projection seed. A process
  // draws it at random; a simulation derives it from the node id and its seed, so that a seed
  // gives the same run.
  virtual uint64_t Nonce(const std::string& node_id) = 0;
};

}  // namespace meshlearn::node
