#pragma once
// The simulator's exchange schedule (the scenario's [network] schedule, configs/README.md): with
// "sequential", the nodes of a round exchange one after another, in place, as file 004's code
// does (run_experiment.py, utils/training_utils.py). Pure logic: the simulator (sim/simulation.h)
// tells ExchangeTurns what the nodes wait for and whether they can act, and carries out the
// steps it returns (a node's turn: NodeHost::TakeTurn; a round's end: NodeHost::EndRound).
// A node's side of a turn is node/logic/round_driver.h's ("Sequential exchange schedule").
//
// Specification.
// - Round 0 is local training, with no turns. Round t >= 1 begins when every present node
//   (below) waits for a round after the last one that began; it is the least round they wait
//   for. Its turns follow TurnOrder(seed, t): one node at a time samples, fetches its peers'
//   latest models, scores them, updates its sampler and merges; the next turn is granted when
//   the node's turn is over. When every slot of the order has passed, the round ends: every node
//   that took its turn in it or rested in it (a resting node takes no turn) is released, and
//   publishes its trained model of round t. Training order does not matter: a node's training
//   reads nothing from other nodes.
//   Rationale: in file 004's code a fresh random permutation of the clients exchanges one
//   client at a time, each merging in place, and all clients train after every client
//   exchanged.
// - Presence: a node is present while it runs and has rounds left; away while it is paused (an
//   outage); gone when it is dead, finished, failed or done with its rounds (then the simulator
//   calls Forget, or reports it gone). Only present nodes are waited for and granted turns.
//   Rationale: a node that cannot act must not hold the mesh: a dead node's turn would never
//   end, and a paused one's only after its pause.
// - A node that is not present and waiting for round t when its slot comes loses its slot: it is
//   skipped. A node that waits for a round that has already ended (its slot was skipped, or it
//   restarted from an older checkpoint and lags) is behind: it takes its turn as soon as it is
//   present and no other turn is under way (before the next slot), and is released as soon as
//   its turn is over, so it catches up round by round; the next round begins only once it has.
//   Rationale: a peer that sampled it read whatever it served, as the synchronous schedule's
//   deadline would have let it; waiting for it keeps every later round's turns complete.
// - Determinism: every decision depends only on the calls made, in order, and on the seed; the
//   order of a round depends only on the seed and the round, so a run resumed from a snapshot
//   (after Reset) takes the same turns as one that was never stopped.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "node/config/config.h"
#include "node/host/node_host.h"
#include "node/transport/simulated_network.h"
#include "sim/sim_node.h"

namespace meshlearn::sim {

// How the nodes of a simulated round exchange models.
enum class ExchangeSchedule {
  kSynchronous,  // "synchronous": every node fetches its peers' previous-round models at once
  kSequential,   // "sequential": one node at a time, in place (see the specification)
};

// The config name of every ExchangeSchedule, in documentation order.
NameTable<ExchangeSchedule> ExchangeScheduleNames();

// The order in which `nodes` nodes (0 to nodes - 1, in config order) take their turns in round
// `round` of a run with seed `seed`: a permutation, drawn by a Fisher-Yates shuffle (for k from
// nodes - 1 down to 1, swap k with draw % (k + 1)) whose draws come from a std::mt19937_64
// seeded with StableHash("exchange-turns/<round>", seed) (base/stable_hash.h). A fresh one per
// round; the same on every platform.
std::vector<size_t> TurnOrder(uint64_t seed, int64_t round, size_t nodes);

// What a node can do now, as the simulator sees it (see the specification).
enum class NodePresence { kPresent, kAway, kGone };

// What the simulator is to do next.
struct TurnStep {
  enum class Kind {
    kGrant,    // the node's turn has come
    kRelease,  // the round the node waits the end of has ended
  };
  Kind kind = Kind::kGrant;
  size_t node = 0;
};

// The turns of a sequential simulation (see the specification). Not thread-safe.
class ExchangeTurns {
 public:
  // The turns of `nodes` nodes in a run with seed `seed`.
  ExchangeTurns(uint64_t seed, size_t nodes);

  // Node `node` waits for round `round`: for its turn (`exchanges`), or, resting, for the
  // round's end.
  void Ask(size_t node, int64_t round, bool exchanges);
  // Node `node`'s turn is over; nothing when it does not hold the turn.
  void TurnOver(size_t node);
  // Node `node`'s incarnation is gone (dead, finished, taken apart): what it waited for is
  // forgotten, and a turn it held is over.
  void Forget(size_t node);
  // Back to the start, as after construction (every node taken apart at a snapshot barrier).
  void Reset();

  // True when Next() may return a step: no turn is under way.
  bool MayStep() const { return !holder_; }
  // The next step, given each node's presence; nullopt when there is none until something
  // changes (a call above, or a node's presence). Every step returned is taken as done: a grant
  // makes the node the turn's holder, a release forgets what it waited for.
  std::optional<TurnStep> Next(const std::function<NodePresence(size_t)>& presence);

  // The last round that began (-1: none).
  int64_t round() const { return round_; }

 private:
  struct Waiting {
    int64_t round = 0;
    bool exchanges = true;
    bool turn_taken = false;
  };

  // True when round `round`'s turns are all over (or it never began for the caller).
  bool Behind(int64_t round) const { return round < round_ || (round == round_ && !in_round_); }
  std::optional<TurnStep> Grant(size_t node);
  std::optional<TurnStep> Release(size_t node);
  // A step for a node that is behind, if any.
  std::optional<TurnStep> CatchUp(const std::function<NodePresence(size_t)>& presence);
  // The next slot's grant, or a release of the round's end; nullopt once every node of the
  // round was released (the round is over).
  std::optional<TurnStep> InRound(const std::function<NodePresence(size_t)>& presence);
  // Begins the next round when every present node waits for one; false when it cannot yet.
  bool BeginRound(const std::function<NodePresence(size_t)>& presence);

  uint64_t seed_;
  std::vector<std::optional<Waiting>> waiting_;  // by node
  std::optional<size_t> holder_;                 // the node whose turn is under way
  int64_t round_ = -1;
  bool in_round_ = false;  // round_'s slots or releases are not all done
  std::vector<size_t> order_;
  size_t next_slot_ = 0;
};

// Where simulated node `n` stands for the turns: present while it runs (state kRunning, with a
// host) with rounds left, away while paused, gone otherwise.
NodePresence PresenceOf(const SimNode& n);

// kInvalidArgument naming the node and what is allowed when a node of `configs` cannot run
// under the sequential schedule: one whose [compression] codec is topk (its public estimate
// advances once per round, and a turn publishes a round twice).
Status CheckSequentialNodes(const std::vector<node::NodeConfig>& configs);

// The sequential schedule in a simulation: one node::TurnKeeper per node takes what the node
// waits for, and ExchangeTurns' steps are taken in events of their own on `clock`, at the time
// they fall due: a grant calls the node's NodeHost::TakeTurn(), a release its EndRound(), both
// through `deliver` (the simulator's: a paused node gets them when it continues). Presence is
// read from the nodes' records (PresenceOf). Not thread-safe: the simulation thread only.
class SimulatedTurns {
 public:
  // Runs `task` as an event of node `node`.
  using Deliver = std::function<void(size_t node, std::function<void()> task)>;
  // The turns of `nodes` (which must outlive them) in a run with seed `seed`.
  SimulatedTurns(uint64_t seed, const std::vector<SimNode>& nodes, node::NetworkClock& clock,
                 Deliver deliver);
  ~SimulatedTurns();

  // What node `node`'s host tells the turns (HostOptions::turns).
  node::TurnKeeper* KeeperOf(size_t node);
  // Node `node`'s host is gone (ExchangeTurns::Forget).
  void Forget(size_t node);
  // Every node was taken apart at a snapshot barrier (ExchangeTurns::Reset).
  void Reset() { turns_.Reset(); }
  // Something may have changed (a node's event or presence): the due steps are taken soon.
  void Poke();

 private:
  class Keeper;

  ExchangeTurns turns_;
  const std::vector<SimNode>& nodes_;
  node::NetworkClock& clock_;
  Deliver deliver_;
  std::vector<std::unique_ptr<Keeper>> keepers_;
  bool due_ = false;  // an event to take the steps is queued
};

}  // namespace meshlearn::sim
