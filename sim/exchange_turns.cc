#include "sim/exchange_turns.h"

#include <random>
#include <string>
#include <utility>

#include "base/stable_hash.h"

namespace meshlearn::sim {

NameTable<ExchangeSchedule> ExchangeScheduleNames() {
  static constexpr NamedValue<ExchangeSchedule> kNames[] = {
      {"synchronous", ExchangeSchedule::kSynchronous},
      {"sequential", ExchangeSchedule::kSequential}};
  return kNames;
}

std::vector<size_t> TurnOrder(uint64_t seed, int64_t round, size_t nodes) {
  std::vector<size_t> order(nodes);
  for (size_t i = 0; i < nodes; ++i) order[i] = i;
  std::mt19937_64 draws(StableHash("exchange-turns/" + std::to_string(round), seed));
  for (size_t k = nodes; k > 1; --k) std::swap(order[k - 1], order[draws() % k]);
  return order;
}

ExchangeTurns::ExchangeTurns(uint64_t seed, size_t nodes) : seed_(seed), waiting_(nodes) {}

void ExchangeTurns::Ask(size_t node, int64_t round, bool exchanges) {
  waiting_[node] = Waiting{round, exchanges, false};
}

void ExchangeTurns::TurnOver(size_t node) {
  if (holder_ != node) return;
  holder_.reset();
  if (waiting_[node]) waiting_[node]->turn_taken = true;
}

void ExchangeTurns::Forget(size_t node) {
  waiting_[node].reset();
  if (holder_ == node) holder_.reset();
}

void ExchangeTurns::Reset() { *this = ExchangeTurns(seed_, waiting_.size()); }

std::optional<TurnStep> ExchangeTurns::Grant(size_t node) {
  holder_ = node;
  return TurnStep{TurnStep::Kind::kGrant, node};
}

std::optional<TurnStep> ExchangeTurns::Release(size_t node) {
  waiting_[node].reset();
  return TurnStep{TurnStep::Kind::kRelease, node};
}

std::optional<TurnStep> ExchangeTurns::CatchUp(
    const std::function<NodePresence(size_t)>& presence) {
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const std::optional<Waiting>& w = waiting_[i];
    if (!w || !Behind(w->round)) continue;
    if (w->turn_taken || !w->exchanges) return Release(i);
    if (presence(i) == NodePresence::kPresent) return Grant(i);
  }
  return std::nullopt;
}

std::optional<TurnStep> ExchangeTurns::InRound(
    const std::function<NodePresence(size_t)>& presence) {
  while (next_slot_ < order_.size()) {
    const size_t node = order_[next_slot_++];
    const std::optional<Waiting>& w = waiting_[node];
    if (w && w->round == round_ && w->exchanges && !w->turn_taken &&
        presence(node) == NodePresence::kPresent) {
      return Grant(node);
    }
  }
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const std::optional<Waiting>& w = waiting_[i];
    if (w && w->round == round_ && (w->turn_taken || !w->exchanges)) return Release(i);
  }
  in_round_ = false;  // nodes that lost their slot are behind from now on
  return std::nullopt;
}

bool ExchangeTurns::BeginRound(const std::function<NodePresence(size_t)>& presence) {
  std::optional<int64_t> next;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    if (presence(i) != NodePresence::kPresent) continue;
    const std::optional<Waiting>& w = waiting_[i];
    if (!w || w->round <= round_) return false;  // still on its way to the next round
    if (!next || w->round < *next) next = w->round;
  }
  if (!next) return false;
  round_ = *next;
  in_round_ = true;
  order_ = TurnOrder(seed_, round_, waiting_.size());
  next_slot_ = 0;
  return true;
}

std::optional<TurnStep> ExchangeTurns::Next(const std::function<NodePresence(size_t)>& presence) {
  if (holder_) return std::nullopt;
  if (auto step = CatchUp(presence)) return step;
  if (in_round_) {
    if (auto step = InRound(presence)) return step;
    if (auto step = CatchUp(presence)) return step;  // those that lost their slot
  }
  if (!BeginRound(presence)) return std::nullopt;
  return InRound(presence);
}

NodePresence PresenceOf(const SimNode& n) {
  if (!n.host || n.state == NodeState::kDead || n.state == NodeState::kFinished ||
      n.host->completed_round() >= n.config.training.rounds) {
    return NodePresence::kGone;
  }
  return n.state == NodeState::kPaused ? NodePresence::kAway : NodePresence::kPresent;
}

Status CheckSequentialNodes(const std::vector<node::NodeConfig>& configs) {
  for (const node::NodeConfig& c : configs) {
    if (c.compression.codec != CompressionCodec::kTopK) continue;
    return Status::InvalidArgument(
        "[network] schedule = \"sequential\" cannot run node '" + c.id +
        "' with [node.compression] codec = \"topk\" (its public estimate advances once per "
        "round, and a turn publishes a round twice); use codec \"none\", \"fp16\" or \"int8\", "
        "or schedule = \"synchronous\"");
  }
  return Status::Ok();
}

// What one node tells the turns.
class SimulatedTurns::Keeper final : public node::TurnKeeper {
 public:
  Keeper(SimulatedTurns& turns, size_t node) : turns_(turns), node_(node) {}
  void AwaitTurn(int64_t round, bool exchanges) override {
    turns_.turns_.Ask(node_, round, exchanges);
    turns_.Poke();
  }
  void TurnOver(int64_t) override {
    turns_.turns_.TurnOver(node_);
    turns_.Poke();
  }

 private:
  SimulatedTurns& turns_;
  size_t node_;
};

SimulatedTurns::SimulatedTurns(uint64_t seed, const std::vector<SimNode>& nodes,
                               node::NetworkClock& clock, Deliver deliver)
    : turns_(seed, nodes.size()), nodes_(nodes), clock_(clock), deliver_(std::move(deliver)) {
  for (size_t i = 0; i < nodes.size(); ++i) keepers_.push_back(std::make_unique<Keeper>(*this, i));
}

SimulatedTurns::~SimulatedTurns() = default;

node::TurnKeeper* SimulatedTurns::KeeperOf(size_t node) { return keepers_[node].get(); }

void SimulatedTurns::Forget(size_t node) {
  turns_.Forget(node);
  Poke();
}

void SimulatedTurns::Poke() {
  if (due_ || !turns_.MayStep()) return;
  due_ = true;
  clock_.At(clock_.Now(), [this] {
    due_ = false;
    auto presence = [this](size_t i) { return PresenceOf(nodes_[i]); };
    while (std::optional<TurnStep> step = turns_.Next(presence)) {
      const size_t j = step->node;
      if (step->kind == TurnStep::Kind::kGrant) {
        deliver_(j, [this, j] { nodes_[j].host->TakeTurn(); });
      } else {
        deliver_(j, [this, j] { nodes_[j].host->EndRound(); });
      }
    }
  });
}

}  // namespace meshlearn::sim
