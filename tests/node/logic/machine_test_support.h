#pragma once
// Helpers for the tests of the node state machine and its parts: scripted messages and simulated
// time, no sockets, no sleeps.

#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "node/logic/state_machine.h"
#include "topology/sampler_factory.h"

namespace meshlearn::node::testing {

using std::chrono::seconds;

inline const ParamLayout kLayout = MakeContiguousLayout({{"w", {4}}});

inline const std::vector<PeerAddress> kPeers = {
    {"a", "tcp://127.0.0.1:2"}, {"b", "tcp://127.0.0.1:3"}, {"c", "tcp://127.0.0.1:4"}};

inline std::shared_ptr<spdlog::logger> QuietLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Node `id` knowing `peers`: a 4-float linear model, m = 2, sync, 10 s deadlines, `rounds` rounds,
// 5 s linger, dead after 2 failures, seed 7.
inline StateMachineConfig MachineConfig(const std::string& id, std::vector<PeerAddress> peers,
                                        int64_t rounds = 3) {
  StateMachineConfig c;
  c.id = id;
  c.seed = 7;
  c.membership.listen_endpoint = "tcp://127.0.0.1:1";
  c.membership.architecture_id = "linear/1/4/5";
  c.membership.metric = "cos_weights";
  c.membership.hello_deadline = seconds(10);
  c.membership.dead_after_failures = 2;
  c.membership.dead_backoff = seconds(10);
  c.membership.initial_peers = std::move(peers);
  c.serving = ServingConfig{kLayout, 50, seconds(10)};
  c.rounds.peers_per_round = 2;
  c.rounds.sync = true;
  c.rounds.round_deadline = seconds(10);
  c.rounds.rounds = rounds;
  c.rounds.linger = seconds(5);
  c.emd.layout = kLayout;
  c.emd.round_deadline = seconds(10);
  c.signatures.request_deadline = seconds(10);
  return c;
}

// The machine of `config` with sampler `sampler`.
inline std::unique_ptr<NodeStateMachine> MakeMachine(
    StateMachineConfig config, topology::SamplerKind sampler = topology::SamplerKind::kDac) {
  topology::SamplerConfig s;
  s.sampler = sampler;
  s.self = config.id;
  auto made = topology::MakePeerSampler(s);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::make_unique<NodeStateMachine>(std::move(config), std::move(*made), QuietLogger());
}

// The machine of `config` with sampler `sampler`, started at time zero, every configured peer
// admitted.
inline std::unique_ptr<NodeStateMachine> AdmittedMachine(
    StateMachineConfig config, topology::SamplerKind sampler = topology::SamplerKind::kDac);

// The actions of type T among `actions`, in order.
template <typename T>
std::vector<T> All(const Actions& actions) {
  std::vector<T> out;
  for (const Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

// The requests among `actions` whose body is of `type`.
inline std::vector<SendRequest> Requests(const Actions& actions, MessageType type) {
  std::vector<SendRequest> out;
  for (const SendRequest& r : All<SendRequest>(actions)) {
    if (TypeOf(r.message.body) == type) out.push_back(r);
  }
  return out;
}

// A message from `sender` with `request_id`, carrying `body`.
inline Message From(const std::string& sender, uint64_t request_id, Body body) {
  return MakeMessage(sender, request_id, 0, std::move(body));
}

// A HelloAck from a peer at `endpoint` with `architecture` and nonce 1.
inline HelloAck AckFor(const std::string& endpoint,
                       const std::string& architecture = "linear/1/4/5") {
  HelloAck ack;
  static_cast<Hello&>(ack) = Hello{endpoint, architecture, "cos_weights", "", 1};
  return ack;
}

// The learner's outcome of round `round`: weights {1, 2, 3, round}, val_loss 1 / (round + 1).
inline RoundOutcome Outcome(int64_t round, std::vector<PeerScoreOutcome> scores = {}) {
  RoundOutcome o;
  o.round = round;
  o.scores = std::move(scores);
  o.val_loss = 1.0 / static_cast<double>(round + 1);
  o.published_weights = FloatArray::Own({1.f, 2.f, 3.f, static_cast<float>(round)});
  return o;
}

// A peer's model of round `round`, scoring "c" 0.5.
inline Model PeerModelAt(int64_t round) {
  Model m;
  m.round = round;
  m.train_size = 50;
  m.layout = kLayout;
  m.weights = FloatArray::Own({1.f, 1.f, 1.f, 1.f});
  m.score_row = {{"c", 0.5}};
  return m;
}

// Drives a machine through its Hellos so that every configured peer is admitted.
inline Actions StartAndAdmitAll(NodeStateMachine& m, TimePoint now) {
  Actions start = m.Start(now);
  for (const SendRequest& r : All<SendRequest>(start)) {
    EXPECT_TRUE(std::holds_alternative<Hello>(r.message.body));
    m.OnReply(r.request_id, From(r.peer, r.request_id, AckFor(r.endpoint)), now);
  }
  return start;
}

// Answers every GetModel of `actions` with a model; returns what the machine did then.
inline Actions AnswerFetches(NodeStateMachine& m, const Actions& actions) {
  Actions out;
  for (const SendRequest& r : Requests(actions, MessageType::kGetModel)) {
    auto more = m.OnReply(r.request_id, From(r.peer, r.request_id, PeerModelAt(0)), {});
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

inline std::unique_ptr<NodeStateMachine> AdmittedMachine(StateMachineConfig config,
                                                         topology::SamplerKind sampler) {
  auto m = MakeMachine(std::move(config), sampler);
  StartAndAdmitAll(*m, TimePoint{});
  return m;
}

}  // namespace meshlearn::node::testing
