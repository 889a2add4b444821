// The node state machine driven with scripted messages and simulated time: no sockets, no sleeps.
#include "node/state_machine.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>

#include <cmath>
#include <deque>
#include <map>

#include "similarity/projection.h"

namespace meshlearn::node {
namespace {

using std::chrono::seconds;

const ParamLayout kLayout = MakeContiguousLayout({{"w", {4}}});

std::shared_ptr<spdlog::logger> QuietLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

StateMachineConfig MachineConfig(const std::string& id, std::vector<PeerAddress> peers,
                                 int64_t rounds = 3) {
  StateMachineConfig c;
  c.id = id;
  c.listen_endpoint = "tcp://127.0.0.1:1";
  c.architecture_id = "linear/1/4/5";
  c.metric = "cos_weights";
  c.layout = kLayout;
  c.train_size = 50;
  c.peers_per_round = 2;
  c.sync = true;
  c.round_deadline = seconds(10);
  c.rounds = rounds;
  c.linger = seconds(5);
  c.dead_after_failures = 2;
  c.seed = 7;
  c.initial_peers = std::move(peers);
  return c;
}

std::unique_ptr<NodeStateMachine> MakeMachine(StateMachineConfig config,
                                              const std::string& sampler = "dac") {
  topology::SamplerConfig s;
  s.sampler = sampler;
  s.self = config.id;
  auto made = topology::MakePeerSampler(s);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::make_unique<NodeStateMachine>(std::move(config), std::move(*made), QuietLogger());
}

template <typename T>
std::vector<T> All(const std::vector<Action>& actions) {
  std::vector<T> out;
  for (const Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

Message From(const std::string& sender, uint64_t request_id, Body body) {
  return MakeMessage(sender, request_id, 0, std::move(body));
}

HelloAck AckFor(const std::string& endpoint, const std::string& architecture = "linear/1/4/5") {
  HelloAck ack;
  static_cast<Hello&>(ack) = Hello{endpoint, architecture, "cos_weights", "", 1};
  return ack;
}

RoundOutcome Outcome(int64_t round, std::vector<PeerScoreOutcome> scores = {}) {
  RoundOutcome o;
  o.round = round;
  o.scores = std::move(scores);
  o.val_loss = 1.0 / static_cast<double>(round + 1);
  o.published_weights = FloatArray::Own({1.f, 2.f, 3.f, static_cast<float>(round)});
  return o;
}

Model PeerModelAt(int64_t round) {
  Model m;
  m.round = round;
  m.train_size = 50;
  m.layout = kLayout;
  m.weights = FloatArray::Own({1.f, 1.f, 1.f, 1.f});
  m.score_row = {{"c", 0.5}};
  return m;
}

// Drives a machine through its Hellos so that every configured peer is admitted.
std::vector<Action> StartAndAdmitAll(NodeStateMachine& m, TimePoint now) {
  std::vector<Action> start = m.Start(now);
  for (const SendRequest& r : All<SendRequest>(start)) {
    EXPECT_TRUE(std::holds_alternative<Hello>(r.message.body));
    m.OnReply(r.request_id, From(r.peer, r.request_id, AckFor(r.endpoint)), now);
  }
  return start;
}

const std::vector<PeerAddress> kPeers = {
    {"a", "tcp://127.0.0.1:2"}, {"b", "tcp://127.0.0.1:3"}, {"c", "tcp://127.0.0.1:4"}};

TEST(StateMachine, StartGreetsConfiguredPeersAndTrainsRoundZeroLocally) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  std::vector<Action> actions = m->Start(t0);
  auto requests = All<SendRequest>(actions);
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) EXPECT_TRUE(std::holds_alternative<Hello>(r.message.body));
  auto compute = All<StartCompute>(actions);
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 0);
  EXPECT_TRUE(compute[0].job.peers.empty());
}

TEST(StateMachine, RoundFetchesSampledPeersScoresAndPublishes) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  std::vector<Action> after0 = m->OnComputeDone(Outcome(0), t0 + seconds(1));
  ASSERT_EQ(All<RoundCompleted>(after0).size(), 1u);
  EXPECT_EQ(m->completed_round(), 0);

  std::vector<SendRequest> fetches;
  for (const auto& r : All<SendRequest>(after0)) {
    if (std::holds_alternative<GetModel>(r.message.body)) fetches.push_back(r);
  }
  ASSERT_EQ(fetches.size(), 2u);  // m = 2
  for (const auto& f : fetches) {
    const auto& get = std::get<GetModel>(f.message.body);
    EXPECT_EQ(get.min_round, 0);  // round 1 asks for snapshots of round >= 0
    EXPECT_TRUE(get.wait);        // sync mode
    EXPECT_EQ(f.deadline, t0 + seconds(1) + seconds(10));
  }
  EXPECT_TRUE(
      All<StartCompute>(m->OnReply(fetches[0].request_id, From(fetches[0].peer, 1, PeerModelAt(0)),
                                   t0 + seconds(2)))
          .empty());
  auto compute = All<StartCompute>(
      m->OnReply(fetches[1].request_id, From(fetches[1].peer, 2, PeerModelAt(0)), t0 + seconds(2)));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 1);
  ASSERT_EQ(compute[0].job.peers.size(), 2u);
  for (const PeerModel& p : compute[0].job.peers) {
    EXPECT_NEAR(p.probability, 1.0 / 3.0, 1e-9);  // the uniform DAC prior before the update
    EXPECT_EQ(p.train_size, 50u);
  }

  // Scores go into the sampler: the scored peers now carry their scores.
  std::vector<PeerScoreOutcome> scores;
  for (const PeerModel& p : compute[0].job.peers) scores.push_back({p.peer, 0.9, {}, true});
  auto after1 = m->OnComputeDone(Outcome(1, scores), t0 + seconds(3));
  ASSERT_EQ(All<RoundCompleted>(after1).size(), 1u);
  EXPECT_EQ(All<RoundCompleted>(after1)[0].record.answered, 2);
  for (const PeerModel& p : compute[0].job.peers) {
    ASSERT_NE(m->sampler().Find(p.peer), nullptr);
    EXPECT_EQ(m->sampler().Find(p.peer)->score, 0.9);
    EXPECT_EQ(m->comm().TimesAnswered(p.peer), 1u);
  }
}

TEST(StateMachine, PeerThatMissesTheDeadlineIsSkippedAndAfterRepeatedFailuresNotSampled) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 10);
  config.peers_per_round = 1;
  auto m = MakeMachine(config);
  TimePoint now{};
  StartAndAdmitAll(*m, now);
  std::vector<Action> actions = m->OnComputeDone(Outcome(0), now);
  for (int round = 1; round <= 2; ++round) {
    auto fetch = All<SendRequest>(actions);
    auto get = std::find_if(fetch.begin(), fetch.end(), [](const SendRequest& r) {
      return std::holds_alternative<GetModel>(r.message.body);
    });
    ASSERT_NE(get, fetch.end()) << "round " << round;
    now += seconds(10);  // the transport reports the deadline
    auto compute = All<StartCompute>(m->OnReply(get->request_id, Status::Timeout("deadline"), now));
    ASSERT_EQ(compute.size(), 1u);
    EXPECT_TRUE(compute[0].job.peers.empty());
    actions = m->OnComputeDone(Outcome(round), now);
  }
  EXPECT_EQ(m->counters().missed_deadlines, 2u);
  EXPECT_EQ(m->peers().LivenessOf("a", now), topology::Liveness::kDead);
  // Round 3: the dead peer is not asked; the round runs with no peers at once.
  auto compute = All<StartCompute>(actions);
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 3);
  // After the backoff it is on probation and sampled again.
  EXPECT_EQ(m->peers().LivenessOf("a", now + seconds(11)), topology::Liveness::kProbation);
}

TEST(StateMachine, OverdueFetchIsClosedByTheTickEvenIfTheTransportNeverAnswers) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  EXPECT_TRUE(All<StartCompute>(m->OnTick(t0 + seconds(9))).empty());
  auto compute = All<StartCompute>(m->OnTick(t0 + seconds(13)));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 1);
}

TEST(StateMachine, SyncGetModelIsHeldUntilTheSnapshotExistsThenAnswered) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  auto fetches = All<SendRequest>(m->OnComputeDone(Outcome(0), t0));
  // A peer already in round 2 asks for round >= 1, which we have not published yet.
  auto held = m->OnInbound(41, From("a", 9, GetModel{1, true}), t0 + seconds(1));
  EXPECT_TRUE(All<SendReply>(held).empty());
  // Our round 1 runs (its fetches fail fast) and finishes: the held request gets the snapshot.
  for (const SendRequest& f : fetches) {
    m->OnReply(f.request_id, Status::Unavailable("peer gone"), t0 + seconds(2));
  }
  auto replies = All<SendReply>(m->OnComputeDone(Outcome(1), t0 + seconds(3)));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].inbound, 41u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 9u);
  const auto& model = std::get<Model>(replies[0].message.body);
  EXPECT_EQ(model.round, 1);
  EXPECT_EQ(model.weights.view()[3], 1.f);
}

TEST(StateMachine, HeldRequestExpiresWithTimeoutErrorAtTheDeadline) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  m->OnInbound(7, From("a", 3, GetModel{5, true}), t0);
  EXPECT_TRUE(All<SendReply>(m->OnTick(t0 + seconds(5))).empty());
  auto replies = All<SendReply>(m->OnTick(t0 + seconds(10)));
  ASSERT_EQ(replies.size(), 1u);
  const auto& error = std::get<Error>(replies[0].message.body);
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(m->counters().held_requests_expired, 1u);
}

TEST(StateMachine, AsyncGetModelIsAnsweredAtOnceWithTheLatestSnapshot) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  auto replies = All<SendReply>(m->OnInbound(1, From("a", 3, GetModel{5, false}), t0));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Model>(replies[0].message.body).round, 0);
}

// Clustering policies (fetch_updates): the node asks for its peers' local updates and hands them
// to the learner; a peer that sends none (an older build) is still merged, without an update.
TEST(StateMachine, ClusterPolicyNodeAsksForPeersUpdatesAndPassesThemToTheLearner) {
  auto plain = MakeMachine(MachineConfig("me", kPeers));
  StartAndAdmitAll(*plain, TimePoint{});
  for (const auto& r : All<SendRequest>(plain->OnComputeDone(Outcome(0), TimePoint{}))) {
    if (const auto* get = std::get_if<GetModel>(&r.message.body)) {
      EXPECT_FALSE(get->with_update);
    }
  }

  auto config = MachineConfig("me", kPeers);
  config.fetch_updates = true;
  auto m = MakeMachine(config);
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  std::vector<SendRequest> fetches;
  for (const auto& r : All<SendRequest>(m->OnComputeDone(Outcome(0), t0))) {
    if (const auto* get = std::get_if<GetModel>(&r.message.body)) {
      EXPECT_TRUE(get->with_update);
      fetches.push_back(r);
    }
  }
  ASSERT_EQ(fetches.size(), 2u);
  Model with_update = PeerModelAt(0);
  with_update.update = FloatArray::Own({0.25f, -0.5f, 0.f, 1.f});
  m->OnReply(fetches[0].request_id, From(fetches[0].peer, 1, with_update), t0 + seconds(1));
  auto compute = All<StartCompute>(
      m->OnReply(fetches[1].request_id, From(fetches[1].peer, 2, PeerModelAt(0)), t0 + seconds(1)));
  ASSERT_EQ(compute.size(), 1u);
  ASSERT_EQ(compute[0].job.peers.size(), 2u);
  for (const PeerModel& p : compute[0].job.peers) {
    if (p.peer == fetches[0].peer) {
      ASSERT_TRUE(p.update.has_value());
      EXPECT_EQ(*p.update, *with_update.update);
    } else {
      EXPECT_FALSE(p.update.has_value());
    }
  }
}

// A node serves the update of the snapshot it sends, and only to requesters that ask for it, also
// when the request was held until that snapshot existed.
TEST(StateMachine, LocalUpdateIsServedWithItsSnapshotOnlyWhenAskedFor) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  RoundOutcome round0 = Outcome(0);
  round0.published_update = FloatArray::Own({0.5f, 0.f, -1.f, 2.f});
  auto fetches = All<SendRequest>(m->OnComputeDone(round0, t0));

  auto asked = All<SendReply>(m->OnInbound(1, From("a", 3, GetModel{0, false, true}), t0));
  ASSERT_EQ(asked.size(), 1u);
  const auto& model = std::get<Model>(asked[0].message.body);
  ASSERT_TRUE(model.update.has_value());
  EXPECT_EQ(*model.update, *round0.published_update);
  auto plain = All<SendReply>(m->OnInbound(2, From("b", 4, GetModel{0, false}), t0));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_FALSE(std::get<Model>(plain[0].message.body).update.has_value());

  // Held until round 1 is published: the reply carries round 1's update.
  EXPECT_TRUE(All<SendReply>(m->OnInbound(5, From("c", 6, GetModel{1, true, true}), t0)).empty());
  for (const SendRequest& f : fetches) {
    m->OnReply(f.request_id, Status::Unavailable("peer gone"), t0 + seconds(1));
  }
  RoundOutcome round1 = Outcome(1);
  round1.published_update = FloatArray::Own({-0.5f, 0.25f, 0.f, 3.f});
  auto held = All<SendReply>(m->OnComputeDone(round1, t0 + seconds(2)));
  ASSERT_EQ(held.size(), 1u);
  const auto& held_model = std::get<Model>(held[0].message.body);
  EXPECT_EQ(held_model.round, 1);
  ASSERT_TRUE(held_model.update.has_value());
  EXPECT_EQ(*held_model.update, *round1.published_update);
}

TEST(StateMachine, HelloWithAnotherArchitectureIsRefusedAndTheSenderNotAdmitted) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  auto replies = All<SendReply>(m->OnInbound(
      1, From("stranger", 1, Hello{"tcp://127.0.0.1:9", "cnn/10/1x28x28/1", "x", "", 2}), {}));
  ASSERT_EQ(replies.size(), 1u);
  const auto& error = std::get<Error>(replies[0].message.body);
  EXPECT_EQ(error.code, ErrorCode::kRefused);
  EXPECT_NE(error.text.find("cnn/10/1x28x28/1"), std::string::npos);
  EXPECT_FALSE(m->sampler().HasPeer("stranger"));
  EXPECT_EQ(m->counters().refused_peers, 1u);
}

TEST(StateMachine, HelloAckWithAnotherArchitectureForgetsThePeer) {
  auto m = MakeMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  auto start = All<SendRequest>(m->Start({}));
  ASSERT_EQ(start.size(), 1u);
  m->OnReply(start[0].request_id, From("a", 1, AckFor(start[0].endpoint, "mlp/10/784/1")), {});
  EXPECT_EQ(m->peers().Find("a"), nullptr);
  EXPECT_FALSE(m->sampler().HasPeer("a"));
}

TEST(StateMachine, UndecodableInboundIsAnsweredWithItsErrorAndCounted) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  for (int i = 0; i < 3; ++i) {
    auto replies = All<SendReply>(m->OnInboundRejected(
        10 + i, "bad", 70 + i, Status::NonFinite("Model.weights: value #3 is NaN"), {}));
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kNonFinite);
    EXPECT_EQ(replies[0].message.envelope.request_id, 70u + i);  // the requester can match it
  }
  EXPECT_EQ(m->counters().rejected_inbound, 3u);
  EXPECT_EQ(m->counters().rejected_by_code.at("non_finite"), 3u);
}

TEST(StateMachine, GossipedPeersAreGreetedAndJoinTheSamplerOnlyAfterTheirAck) {
  auto m = MakeMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  auto actions = m->OnInbound(
      1, From("a", 4, PeerList{{{"a", "tcp://127.0.0.1:2", ""}, {"z", "tcp://127.0.0.5:7", ""}}}),
      t0);
  auto replies = All<SendReply>(actions);
  ASSERT_EQ(replies.size(), 1u);
  const auto& known = std::get<PeerList>(replies[0].message.body).peers;
  EXPECT_EQ(known.front().id, "me");               // we advertise ourselves too
  EXPECT_TRUE(All<SendRequest>(actions).empty());  // greetings go out from the next tick
  auto hellos = All<SendRequest>(m->OnTick(t0));
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].peer, "z");
  EXPECT_EQ(hellos[0].endpoint, "tcp://127.0.0.5:7");
  EXPECT_FALSE(m->sampler().HasPeer("z"));
  m->OnReply(hellos[0].request_id, From("z", 1, AckFor("tcp://127.0.0.5:7")), t0);
  EXPECT_TRUE(m->sampler().HasPeer("z"));
}

TEST(StateMachine, GreetingsOfManyGossipedPeersArePacedAcrossTicks) {
  auto m = MakeMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  PeerList list;
  for (int i = 0; i < 10; ++i) {
    // Appended, not "p" + to_string(i): GCC 12 warns (-Wrestrict) on that inlined concatenation.
    std::string id = "p";
    id += std::to_string(i);
    list.peers.push_back({id, "tcp://x:1", ""});
  }
  m->OnInbound(1, From("a", 4, list), t0);
  size_t greeted = 0;
  for (int tick = 1; tick <= 5; ++tick) {
    auto hellos = All<SendRequest>(m->OnTick(t0 + std::chrono::milliseconds(50 * tick)));
    EXPECT_EQ(hellos.size(), 2u) << "tick " << tick;
    greeted += hellos.size();
  }
  EXPECT_EQ(greeted, 10u);
}

// A machine with an allowlist (CURVE): its own key "KEY-me", peer "a" configured with "KEY-a",
// and "KEY-z" also allowed.
std::unique_ptr<NodeStateMachine> SecureMachine() {
  StateMachineConfig c = MachineConfig("me", {{"a", "tcp://127.0.0.1:2", "KEY-a"}});
  c.public_key = "KEY-me";
  c.allowed_keys = std::set<std::string>{"KEY-me", "KEY-a", "KEY-z"};
  return MakeMachine(std::move(c));
}

TEST(StateMachineSecurity, RequestsCarryThePeersKeyAndHelloAndPeerListOurs) {
  auto m = SecureMachine();
  TimePoint t0{};
  auto hellos = All<SendRequest>(m->Start(t0));
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].public_key, "KEY-a");
  EXPECT_EQ(std::get<Hello>(hellos[0].message.body).public_key, "KEY-me");
  m->OnReply(hellos[0].request_id, From("a", 1, AckFor("tcp://127.0.0.1:2")), t0);
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-a") << "the proven key is kept";
  auto replies = All<SendReply>(
      m->OnInbound(1, From("a", 4, PeerList{{{"a", "tcp://127.0.0.1:2", "KEY-a"}}}), t0));
  ASSERT_EQ(replies.size(), 1u);
  const auto& known = std::get<PeerList>(replies[0].message.body).peers;
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0], (PeerInfo{"me", "tcp://127.0.0.1:1", "KEY-me"}));
  EXPECT_EQ(known[1], (PeerInfo{"a", "tcp://127.0.0.1:2", "KEY-a"}));
  for (const auto& r : All<SendRequest>(m->OnComputeDone(Outcome(0), t0))) {
    EXPECT_EQ(r.public_key, "KEY-a") << MessageTypeName(r.message.envelope.type);
  }
}

TEST(StateMachineSecurity, GossipedPeersOffTheAllowlistAreNeitherLearnedNorGreeted) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnInbound(1,
               From("a", 4,
                    PeerList{{{"z", "tcp://127.0.0.5:7", "KEY-z"},
                              {"intruder", "tcp://127.0.0.6:7", "KEY-intruder"},
                              {"keyless", "tcp://127.0.0.7:7", ""}}}),
               t0);
  EXPECT_NE(m->peers().Find("z"), nullptr);
  EXPECT_EQ(m->peers().Find("intruder"), nullptr);
  EXPECT_EQ(m->peers().Find("keyless"), nullptr);
  auto hellos = All<SendRequest>(m->OnTick(t0));
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].peer, "z");
  EXPECT_EQ(hellos[0].public_key, "KEY-z");
}

TEST(StateMachineSecurity, GossipCannotChangeTheKeyOfAKnownPeerButItsOwnHelloCan) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  // "z" is allowlisted, and claims that "a" now lives at its own endpoint with its own key.
  m->OnInbound(1, From("z", 4, PeerList{{{"a", "tcp://127.0.0.5:7", "KEY-z"}}}), t0);
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-a");
  EXPECT_EQ(m->peers().Find("a")->endpoint, "tcp://127.0.0.1:2");
  // "a" itself, having proven KEY-z in its handshake (node.cc puts the proven key in the Hello).
  Hello rekeyed{"tcp://127.0.0.1:2", "linear/1/4/5", "cos_weights", "KEY-z", 5};
  m->OnInbound(2, From("a", 5, rekeyed), t0);
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-z");
}

TEST(StateMachineSecurity, AHelloWithAKeyOffTheAllowlistIsRejectedAsUnknownSender) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  Hello intruder{"tcp://127.0.0.6:7", "linear/1/4/5", "cos_weights", "KEY-intruder", 3};
  auto replies = All<SendReply>(m->OnInbound(1, From("intruder", 9, intruder), t0));
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Error>(replies[0].message.body));
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnknownSender);
  EXPECT_FALSE(m->sampler().HasPeer("intruder"));
  EXPECT_EQ(m->peers().Find("intruder"), nullptr);
  EXPECT_EQ(m->counters().rejected_by_code.at("unknown_sender"), 1u);

  Hello z{"tcp://127.0.0.5:7", "linear/1/4/5", "cos_weights", "KEY-z", 4};
  replies = All<SendReply>(m->OnInbound(2, From("z", 10, z), t0));
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<HelloAck>(replies[0].message.body));
  EXPECT_EQ(std::get<HelloAck>(replies[0].message.body).public_key, "KEY-me");
  EXPECT_TRUE(m->sampler().HasPeer("z"));
  EXPECT_EQ(m->peers().Find("z")->public_key, "KEY-z");
}

TEST(StateMachineSecurity, PeersKeepTheirKeysAcrossACheckpoint) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  MachineState state = m->ExportState();
  ASSERT_EQ(state.peers.size(), 1u);
  EXPECT_EQ(state.peers[0].public_key, "KEY-a");
  StateMachineConfig c = MachineConfig("me", {});  // the config no longer lists "a"
  c.public_key = "KEY-me";
  c.allowed_keys = std::set<std::string>{"KEY-a"};
  auto resumed = MakeMachine(std::move(c));
  ASSERT_TRUE(resumed->Resume(state, FloatArray::Own({1, 2, 3, 4}), false).ok());
  auto hellos = All<SendRequest>(resumed->Start(t0));
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].public_key, "KEY-a");
}

TEST(StateMachine, RoundWaitsForFirstHellosSoMembershipDoesNotDependOnTiming) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  auto start = All<SendRequest>(m->Start(t0));
  // Round 0 finishes before any HelloAck: round 1 must not start yet.
  auto actions = m->OnComputeDone(Outcome(0), t0);
  EXPECT_TRUE(All<StartCompute>(actions).empty());
  for (const SendRequest& r : start) {
    actions = m->OnReply(r.request_id, From(r.peer, 1, AckFor(r.endpoint)), t0);
  }
  size_t fetches = 0;
  for (const auto& r : All<SendRequest>(actions)) {
    fetches += std::holds_alternative<GetModel>(r.message.body);
  }
  EXPECT_EQ(fetches, 2u);
}

TEST(StateMachine, SameSeedGivesTheSameSamplesAndAnotherSeedDiffers) {
  auto sample_sequence = [](uint64_t seed) {
    auto config = MachineConfig("me",
                                {{"a", "tcp://x:1"},
                                 {"b", "tcp://x:2"},
                                 {"c", "tcp://x:3"},
                                 {"d", "tcp://x:4"},
                                 {"e", "tcp://x:5"}},
                                30);
    config.seed = seed;
    auto m = MakeMachine(config, "random");
    TimePoint now{};
    StartAndAdmitAll(*m, now);
    std::vector<std::string> sequence;
    std::vector<Action> actions = m->OnComputeDone(Outcome(0), now);
    for (int round = 1; round <= 20; ++round) {
      m->OnTick(now + seconds(100));  // closes the fetch: nobody answers in this test
      for (const auto& r : All<SendRequest>(actions)) {
        if (std::holds_alternative<GetModel>(r.message.body)) sequence.push_back(r.peer);
      }
      now += seconds(100);
      actions = m->OnComputeDone(Outcome(round), now);
    }
    return sequence;
  };
  EXPECT_EQ(sample_sequence(7), sample_sequence(7));
  EXPECT_NE(sample_sequence(7), sample_sequence(8));
}

TEST(StateMachine, AfterTheLastRoundItLingersServingThenFinishes) {
  auto m = MakeMachine(MachineConfig("me", {}, 0));
  TimePoint t0{};
  m->Start(t0);
  auto done = m->OnComputeDone(Outcome(0), t0);
  EXPECT_EQ(All<RoundCompleted>(done).size(), 1u);
  EXPECT_TRUE(All<Finished>(done).empty());
  // While lingering it still serves, even a request for a round it will never reach.
  auto replies = All<SendReply>(m->OnInbound(1, From("a", 1, GetModel{7, true}), t0));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Model>(replies[0].message.body));
  EXPECT_TRUE(All<Finished>(m->OnTick(t0 + seconds(4))).empty());
  EXPECT_EQ(All<Finished>(m->OnTick(t0 + seconds(5))).size(), 1u);
  EXPECT_TRUE(m->finished());
}

TEST(StateMachine, ExportedStateResumesAtTheNextRound) {
  auto m = MakeMachine(MachineConfig("me", kPeers, 5));
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  m->OnTick(t0 + seconds(20));
  m->OnComputeDone(Outcome(1), t0 + seconds(20));
  MachineState state = m->ExportState();
  EXPECT_EQ(state.round, 1);

  auto resumed = MakeMachine(MachineConfig("me", kPeers, 5));
  ASSERT_TRUE(resumed->Resume(state, FloatArray::Own({1, 2, 3, 4}), false).ok());
  EXPECT_EQ(resumed->comm().Rows().size(), m->comm().Rows().size());
  EXPECT_EQ(resumed->completed_round(), 1);
  auto start = resumed->Start(t0);
  EXPECT_TRUE(All<StartCompute>(start).empty());  // waits for its Hellos first
  std::vector<Action> actions;
  for (const auto& r : All<SendRequest>(start)) {
    actions = resumed->OnReply(r.request_id, From(r.peer, 1, AckFor(r.endpoint)), t0);
  }
  for (const auto& r : All<SendRequest>(actions)) {
    if (const auto* get = std::get_if<GetModel>(&r.message.body)) {
      EXPECT_EQ(get->min_round, 1);
    }
  }
}

TEST(StateMachine, MinRoundPacesTheNextRound) {
  auto config = MachineConfig("me", {}, 5);
  config.min_round = seconds(2);
  auto m = MakeMachine(config);
  TimePoint t0{};
  m->Start(t0);
  // Round 0 took 0.5 s: round 1 waits until 2 s after round 0 began.
  EXPECT_TRUE(All<StartCompute>(m->OnComputeDone(Outcome(0), t0 + seconds(1) / 2)).empty());
  EXPECT_TRUE(All<StartCompute>(m->OnTick(t0 + seconds(1))).empty());
  auto compute = All<StartCompute>(m->OnTick(t0 + seconds(2)));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 1);
}

TEST(StateMachine, SyncRequestForAnOlderRoundGetsThatRoundsSnapshot) {
  auto config = MachineConfig("me", {}, 10);
  auto m = MakeMachine(config);
  TimePoint t0{};
  m->Start(t0);
  for (int r = 0; r <= 3; ++r) m->OnComputeDone(Outcome(r), t0);
  // A lagging peer in round 2 asks for round >= 1: it gets round 1, not our latest (3).
  auto sync = All<SendReply>(m->OnInbound(1, From("a", 1, GetModel{1, true}), t0));
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_EQ(std::get<Model>(sync[0].message.body).round, 1);
  auto async = All<SendReply>(m->OnInbound(2, From("a", 2, GetModel{1, false}), t0));
  ASSERT_EQ(async.size(), 1u);
  EXPECT_EQ(std::get<Model>(async[0].message.body).round, 3);
}

// --- EMD exchange --------------------------------------------------------------------------------

std::unique_ptr<NodeStateMachine> EmdMachine(const std::string& id,
                                             std::vector<PeerAddress> peers) {
  auto config = MachineConfig(id, std::move(peers), 5);
  config.emd_enabled = true;
  config.emd_cluster_sampler = true;
  config.nonce = 1000;
  return MakeMachine(config, "emd_cluster");
}

TEST(StateMachineEmd, AfterRoundZeroEveryPeerGetsAnEmbedRequestWithTheAgreedSeedAndPhi) {
  auto m = EmdMachine("me", kPeers);
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);  // AckFor() sends nonce 1
  auto actions = m->OnComputeDone(Outcome(0), t0);
  std::vector<SendRequest> embeds;
  for (const auto& r : All<SendRequest>(actions)) {
    if (std::holds_alternative<EmbedRequest>(r.message.body)) embeds.push_back(r);
  }
  ASSERT_EQ(embeds.size(), 3u);
  for (const SendRequest& r : embeds) {
    const auto& req = std::get<EmbedRequest>(r.message.body);
    EXPECT_EQ(req.projection_seed, similarity::AgreedProjectionSeed(1000, 1));
    EXPECT_EQ(req.weights, Outcome(0).published_weights);  // phi_i: the round-0 model
    EXPECT_EQ(req.layout, kLayout);
  }
}

TEST(StateMachineEmd, PeerSideEmbedsOnTheWorkerAndRepliesWithProjectedRowsOnly) {
  auto m = EmdMachine("me", kPeers);
  EmbedRequest request;
  request.projection_seed = 42;
  request.max_samples = 4096;
  request.layout = kLayout;
  request.weights = FloatArray::Own({1, 2, 3, 4});
  auto actions = m->OnInbound(5, From("a", 77, request), {});
  auto jobs = All<StartEmbed>(actions);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job.max_samples, 512u);  // capped at our own max_samples
  ProjectedEmbeddings rows{2, 3, FloatArray::Own({1, 2, 3, 4, 5, 6})};
  auto replies = All<SendReply>(m->OnEmbedDone(jobs[0].job, rows, {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].inbound, 5u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 77u);
  const auto& reply = std::get<EmbedReply>(replies[0].message.body);
  EXPECT_EQ(reply.rows, 2u);
  EXPECT_EQ(reply.cols, 3u);
}

TEST(StateMachineEmd, NodeWithoutTheExchangeRefusesEmbedRequests) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  EmbedRequest request;
  request.layout = kLayout;
  request.weights = FloatArray::Own({1, 2, 3, 4});
  auto replies = All<SendReply>(m->OnInbound(5, From("a", 1, request), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnavailable);
}

TEST(StateMachineEmd, MutualAcceptanceMakesTheEdgeAndTheClusterSamplerUsesOnlyIt) {
  auto m = EmdMachine("me", {{"a", "tcp://127.0.0.1:2"}, {"b", "tcp://127.0.0.1:3"}});
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  auto actions = m->OnComputeDone(Outcome(0), t0);
  for (const auto& r : All<SendRequest>(actions)) {
    if (!std::holds_alternative<EmbedRequest>(r.message.body)) continue;
    EmbedReply reply;
    reply.rows = 1;
    reply.cols = 2;
    reply.embeddings = FloatArray::Own({1, 0});
    auto emd_jobs = All<StartEmd>(m->OnReply(r.request_id, From(r.peer, 1, reply), t0));
    ASSERT_EQ(emd_jobs.size(), 1u);
    // a is close (EMD - ref = 0.02 < 0.1), b is far (0.5).
    double emd = r.peer == "a" ? 0.05 : 0.53;
    auto decisions = All<SendRequest>(m->OnEmdDone(emd_jobs[0].job, EmdMeasure{emd, 0.03}, t0));
    ASSERT_EQ(decisions.size(), 1u);
    EXPECT_EQ(std::get<EmdDecision>(decisions[0].message.body).accepted, r.peer == "a");
  }
  // a accepts us too, b does not: only a forms an edge.
  m->OnInbound(8, From("a", 3, EmdDecision{true, 0.04, 0.02}), t0);
  m->OnInbound(9, From("b", 4, EmdDecision{false, 0.6, 0.02}), t0);
  std::vector<EmdRow> rows = m->EmdRows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].mutual());
  EXPECT_FALSE(rows[1].mutual());
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 1.0);
  EXPECT_DOUBLE_EQ(m->sampler().Find("b")->probability, 0.0);
}

TEST(StateMachineEmd, FinishedNodeLingersOnlyWhileItsExchangeIsInFlight) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 0);
  config.emd_enabled = true;
  config.round_deadline = seconds(10);
  auto m = MakeMachine(config);
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);  // rounds = 0: lingering from now on
  // A peer asks us to embed: the job runs on the worker while we linger.
  EmbedRequest request;
  request.layout = kLayout;
  request.weights = FloatArray::Own({1, 2, 3, 4});
  auto job = All<StartEmbed>(m->OnInbound(5, From("a", 7, request), t0));
  ASSERT_EQ(job.size(), 1u);
  EXPECT_TRUE(All<Finished>(m->OnTick(t0 + seconds(6))).empty());  // linger (5 s) is over
  m->OnEmbedDone(job[0].job, ProjectedEmbeddings{1, 1, FloatArray::Own({0.5f})}, t0 + seconds(7));
  EXPECT_EQ(All<Finished>(m->OnTick(t0 + seconds(8))).size(), 1u);
}

TEST(StateMachineEmd, FinishedNodeWaitsForTheDecisionOfAPeerItMeasured) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 1);
  config.emd_enabled = true;
  config.round_deadline = seconds(10);
  auto m = MakeMachine(config);
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  std::vector<SendRequest> requests;
  for (const SendRequest& r : All<SendRequest>(m->OnComputeDone(Outcome(0), t0))) {
    if (std::holds_alternative<EmbedRequest>(r.message.body)) {
      requests.push_back(r);
    } else if (std::holds_alternative<GetModel>(r.message.body)) {
      ASSERT_EQ(
          All<StartCompute>(m->OnReply(r.request_id, From("a", 1, PeerModelAt(0)), t0)).size(), 1u);
    }
  }
  ASSERT_EQ(requests.size(), 1u);
  m->OnComputeDone(Outcome(1), t0);  // the last round: lingering from now on
  EmbedReply reply;
  reply.rows = 1;
  reply.cols = 1;
  reply.embeddings = FloatArray::Own({1});
  auto job = All<StartEmd>(m->OnReply(requests[0].request_id, From("a", 1, reply), t0));
  ASSERT_EQ(job.size(), 1u);
  auto decision = All<SendRequest>(m->OnEmdDone(job[0].job, EmdMeasure{0.05, 0.03}, t0));
  ASSERT_EQ(decision.size(), 1u);
  m->OnReply(decision[0].request_id, From("a", 2, std::get<EmdDecision>(decision[0].message.body)),
             t0);
  // Our side is done, but a has not measured us yet: we stay past the linger time...
  EXPECT_TRUE(All<Finished>(m->OnTick(t0 + seconds(20))).empty());
  // ...until its decision arrives.
  m->OnInbound(3, From("a", 9, EmdDecision{true, 0.04, 0.03}), t0 + seconds(21));
  EXPECT_EQ(All<Finished>(m->OnTick(t0 + seconds(22))).size(), 1u);
}

// --- EMD exchange, witness mode -----------------------------------------------------------------

// Machines that exchange messages in memory: a request goes to the addressee's OnInbound(), its
// reply back to the requester's OnReply(); learner jobs are answered at once by fixed rules.
// Records every message each node received, to check who saw what.
class InMemoryMesh {
 public:
  void Add(std::unique_ptr<NodeStateMachine> machine, const std::string& id) {
    nodes_[id] = std::move(machine);
  }
  NodeStateMachine& operator[](const std::string& id) { return *nodes_.at(id); }
  // The messages `id` received (requests and replies), in order.
  const std::vector<Message>& Received(const std::string& id) { return received_[id]; }

  // Queues `actions` of node `owner` and runs until nothing is left to do.
  void Run(const std::string& owner, std::vector<Action> actions) {
    for (Action& a : actions) queue_.push_back({owner, std::move(a)});
    while (!queue_.empty()) {
      auto [from, action] = std::move(queue_.front());
      queue_.pop_front();
      Step(from, action);
    }
  }

 private:
  void Push(const std::string& owner, std::vector<Action> actions) {
    for (Action& a : actions) queue_.push_back({owner, std::move(a)});
  }
  // Projected rows that identify their owner: every value is the owner's first letter.
  static ProjectedEmbeddings RowsOf(const std::string& owner) {
    float v = static_cast<float>(owner[0]);
    return {2, 3, FloatArray::Own({v, v, v, v, v, v})};
  }
  void Step(const std::string& from, Action& action) {
    NodeStateMachine& m = *nodes_.at(from);
    if (auto* r = std::get_if<SendRequest>(&action)) {
      if (!nodes_.count(r->peer)) return;
      InboundId inbound = ++last_inbound_;
      inbound_[{r->peer, inbound}] = {from, r->request_id};
      received_[r->peer].push_back(r->message);
      Push(r->peer, (*this)[r->peer].OnInbound(inbound, r->message, now_));
    } else if (auto* r = std::get_if<SendReply>(&action)) {
      auto [requester, request_id] = inbound_.at({from, r->inbound});
      received_[requester].push_back(r->message);
      Push(requester, (*this)[requester].OnReply(request_id, r->message, now_));
    } else if (auto* e = std::get_if<StartEmbed>(&action)) {
      Push(from, m.OnEmbedDone(e->job, RowsOf(from), now_));
    } else if (auto* e = std::get_if<StartOwnProjection>(&action)) {
      Push(from, m.OnOwnProjectionDone(e->job, OwnProjection{RowsOf(from), 0.25}, now_));
    } else if (auto* e = std::get_if<StartWitnessEmd>(&action)) {
      // A stand-in distance that depends on both sets: the gap between their first values.
      double d = std::abs(e->job.train.values.view()[0] - e->job.validation.values.view()[0]);
      Push(from, m.OnWitnessEmdDone(e->job, d / 100.0, now_));
    }
    // StartCompute and StartEmd are not run: the test stops the rounds after round 0.
  }

  TimePoint now_{};
  std::map<std::string, std::unique_ptr<NodeStateMachine>> nodes_;
  std::map<std::string, std::vector<Message>> received_;
  std::map<std::pair<std::string, InboundId>, std::pair<std::string, uint64_t>> inbound_;
  std::deque<std::pair<std::string, Action>> queue_;
  InboundId last_inbound_ = 0;
};

TEST(StateMachineEmdWitness, AThirdPeerMeasuresEveryPairAndNoSideSeesTheOthersRows) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  InMemoryMesh mesh;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<PeerAddress> peers;
    for (const std::string& other : ids) {
      if (other != ids[i]) peers.push_back({other, "tcp://127.0.0.1:" + other});
    }
    auto config = MachineConfig(ids[i], peers, 5);
    config.emd_enabled = true;
    config.emd_witness = true;
    config.emd_epsilon = 0.05;
    config.emd_cluster_sampler = true;
    config.nonce = 1000 + i;
    mesh.Add(MakeMachine(config, "emd_cluster"), ids[i]);
  }
  for (const std::string& id : ids) mesh.Run(id, mesh[id].Start({}));
  for (const std::string& id : ids) mesh.Run(id, mesh[id].OnComputeDone(Outcome(0), {}));

  for (const std::string& i : ids) {
    std::vector<EmdRow> rows = mesh[i].EmdRows();
    ASSERT_EQ(rows.size(), 2u) << i;
    for (const EmdRow& row : rows) {
      // The witness is the third node, and the EMD is its measure of (train_i, val_j).
      std::string third;
      for (const std::string& k : ids) {
        if (k != i && k != row.peer) third = k;
      }
      EXPECT_EQ(row.witness, third) << i << "->" << row.peer;
      ASSERT_TRUE(row.emd.has_value()) << i << "->" << row.peer;
      EXPECT_NEAR(*row.emd, std::abs(i[0] - row.peer[0]) / 100.0, 1e-12);
      EXPECT_DOUBLE_EQ(*row.reference, 0.25);
      // a-b and b-c differ by 0.01 (accepted: 0.01 - 0.25 < 0.05); a-c too: all mutual.
      EXPECT_TRUE(row.mutual()) << i << "->" << row.peer;
    }
  }
  for (const std::string& id : ids) {
    for (const Message& m : mesh.Received(id)) {
      // Nobody receives projected rows back: they go only to witnesses, as requests.
      EXPECT_FALSE(std::holds_alternative<EmbedReply>(m.body)) << id;
      if (const auto* rows = std::get_if<WitnessRows>(&m.body)) {
        EXPECT_NE(rows->requester, id);
        EXPECT_NE(rows->responder, id);
        // ...and each set comes from its owner, whose values mark it.
        float owner = static_cast<float>(m.envelope.sender[0]);
        EXPECT_EQ(rows->embeddings.view()[0], owner);
      }
      // A witness never learns the projection seed: it travels only in WitnessEmbedRequest,
      // which goes to the responder, never to the witness it names.
      if (const auto* request = std::get_if<WitnessEmbedRequest>(&m.body)) {
        EXPECT_NE(request->witness.id, id);
      }
    }
  }
}

// Session 9: requester a's training rows (one 1-wide row) for its measurement of b.
WitnessRows TrainRowsOfAForB() {
  WitnessRows rows;
  rows.session = 9;
  rows.requester = "a";
  rows.responder = "b";
  rows.side = WitnessSide::kRequesterTrain;
  rows.rows = 1;
  rows.cols = 1;
  rows.embeddings = FloatArray::Own({1.f});
  return rows;
}

TEST(StateMachineEmdWitness, WitnessRowsFromTheWrongSenderAreRefused) {
  auto config = MachineConfig("w", kPeers, 5);
  config.emd_enabled = true;
  auto m = MakeMachine(config);
  WitnessRows rows = TrainRowsOfAForB();
  // "c" claims to send a's training rows.
  auto replies = All<SendReply>(m->OnInbound(1, From("c", 1, rows), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(m->counters().rejected_inbound, 1u);
}

TEST(StateMachineEmdWitness, AHeldSideExpiresWithTimeoutWhenTheOtherNeverArrives) {
  auto config = MachineConfig("w", kPeers, 5);
  config.emd_enabled = true;
  config.round_deadline = seconds(10);
  auto m = MakeMachine(config);
  WitnessRows rows = TrainRowsOfAForB();
  TimePoint t0{};
  EXPECT_TRUE(All<SendReply>(m->OnInbound(1, From("a", 5, rows), t0)).empty());  // held
  EXPECT_TRUE(All<SendReply>(m->OnTick(t0 + seconds(39))).empty());
  auto expired = All<SendReply>(m->OnTick(t0 + seconds(40)));  // 4 round deadlines
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].inbound, 1u);
  EXPECT_EQ(std::get<Error>(expired[0].message.body).code, ErrorCode::kTimeout);
}

// --- FLT data signatures -------------------------------------------------------------------------

// A node with signatures on: its own signature is the single centroid (0, 0), threshold 1; it
// samples every peer each round.
std::unique_ptr<NodeStateMachine> SignatureMachine(const std::string& sampler) {
  auto config = MachineConfig("me", kPeers, 5);
  config.peers_per_round = 3;
  config.signatures_enabled = true;
  config.own_signature = {1, 2, FloatArray::Own({0, 0})};
  config.signature_threshold = 1.0;
  config.signature_cluster_sampler = sampler == "centroid_cluster";
  config.signature_metric = sampler == "dac";
  return MakeMachine(config, sampler);
}

Signature SignatureAt(float x) { return {1, 2, FloatArray::Own({x, 0})}; }

std::vector<SendRequest> Requests(const std::vector<Action>& actions, MessageType type) {
  std::vector<SendRequest> out;
  for (const SendRequest& r : All<SendRequest>(actions)) {
    if (TypeOf(r.message.body) == type) out.push_back(r);
  }
  return out;
}

// Answers every GetModel of `actions` with a model; returns what the machine did then.
std::vector<Action> AnswerFetches(NodeStateMachine& m, const std::vector<Action>& actions) {
  std::vector<Action> out;
  for (const SendRequest& r : Requests(actions, MessageType::kGetModel)) {
    auto more = m.OnReply(r.request_id, From(r.peer, r.request_id, PeerModelAt(0)), {});
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

TEST(StateMachineSignature, EveryPeerIsAskedOnceAndTheNodeSamplesWithinItsSingleLinkageCluster) {
  auto m = SignatureMachine("centroid_cluster");
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  auto asked = Requests(round1, MessageType::kGetSignature);
  ASSERT_EQ(asked.size(), 3u);
  // a is 0.5 from us; b is 1.2 from us but 0.7 from a (single linkage chains it); c is far.
  const std::map<std::string, float> at = {{"a", 0.5f}, {"b", 1.2f}, {"c", 10.f}};
  for (const SendRequest& r : asked) {
    m->OnReply(r.request_id, From(r.peer, r.request_id, SignatureAt(at.at(r.peer))), {});
  }
  std::vector<SignatureRow> rows = m->SignatureRows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].peer, "a");
  EXPECT_NEAR(rows[0].distance, 0.5, 1e-6);
  EXPECT_TRUE(rows[0].related);
  EXPECT_NEAR(rows[1].distance, 1.2, 1e-6);
  EXPECT_FALSE(rows[1].related);
  EXPECT_NEAR(rows[2].distance, 10, 1e-5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 0.5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("b")->probability, 0.5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("c")->probability, 0.0);

  // Round 1's record carries the clusters (for cluster.csv); round 2 asks nobody again and
  // fetches only from the cluster.
  auto jobs = All<StartCompute>(AnswerFetches(*m, round1));
  ASSERT_EQ(jobs.size(), 1u);
  for (const PeerModel& peer : jobs[0].job.peers) {
    EXPECT_FALSE(peer.exchanged_score.has_value()) << "metric is not centroid: " << peer.peer;
  }
  auto round2 = m->OnComputeDone(Outcome(1), {});
  auto completed = All<RoundCompleted>(round2);
  ASSERT_EQ(completed.size(), 1u);
  std::map<std::string, int> label;
  for (const auto& [id, l] : completed[0].record.outcome.cluster_partition) label[id] = l;
  ASSERT_EQ(label.size(), 4u);
  EXPECT_EQ(label["me"], label["a"]);
  EXPECT_EQ(label["me"], label["b"]);
  EXPECT_NE(label["me"], label["c"]);
  EXPECT_TRUE(Requests(round2, MessageType::kGetSignature).empty());
  for (const SendRequest& r : Requests(round2, MessageType::kGetModel)) EXPECT_NE(r.peer, "c");
}

TEST(StateMachineSignature, APeerThatAnsweredWithAnErrorIsNotAskedAgainButOneThatTimedOutIs) {
  auto m = SignatureMachine("centroid_cluster");
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  for (const SendRequest& r : Requests(round1, MessageType::kGetSignature)) {
    if (r.peer == "a") {
      m->OnReply(r.request_id, From("a", r.request_id, Error{ErrorCode::kUnknownType, "15"}), {});
    } else if (r.peer == "b") {
      m->OnReply(r.request_id, Status::Timeout("no answer"), {});
    } else {
      // Another width than ours: unusable, and it will not change.
      m->OnReply(r.request_id, From("c", r.request_id, Signature{1, 3, FloatArray::Own({1, 2, 3})}),
                 {});
    }
  }
  EXPECT_TRUE(m->SignatureRows().empty());
  AnswerFetches(*m, round1);
  std::vector<std::string> asked;
  for (const SendRequest& r :
       Requests(m->OnComputeDone(Outcome(1), {}), MessageType::kGetSignature)) {
    asked.push_back(r.peer);
  }
  EXPECT_EQ(asked, std::vector<std::string>{"b"});
}

TEST(StateMachineSignature, ItsSignatureIsServedAndANodeWithoutSignaturesRefuses) {
  auto m = SignatureMachine("centroid_cluster");
  auto replies = All<SendReply>(m->OnInbound(5, From("a", 9, GetSignature{}), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 9u);
  EXPECT_EQ(std::get<Signature>(replies[0].message.body), SignatureAt(0));

  auto plain = MakeMachine(MachineConfig("me", kPeers));
  replies = All<SendReply>(plain->OnInbound(5, From("a", 9, GetSignature{}), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnavailable);
}

TEST(StateMachineSignature, TheCentroidMetricScoresMinusTheDistanceAndTheLearnerGetsTheDistance) {
  auto m = SignatureMachine("dac");
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  for (const SendRequest& r : Requests(round1, MessageType::kGetSignature)) {
    if (r.peer == "a") m->OnReply(r.request_id, From("a", r.request_id, SignatureAt(0.25f)), {});
  }
  EXPECT_NEAR(*m->sampler().Find("a")->score, -0.25, 1e-6);
  EXPECT_FALSE(m->sampler().Find("b")->score.has_value());
  auto jobs = All<StartCompute>(AnswerFetches(*m, round1));
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].job.peers.size(), 3u);
  for (const PeerModel& peer : jobs[0].job.peers) {
    if (peer.peer == "a") {
      ASSERT_TRUE(peer.exchanged_score.has_value());
      EXPECT_NEAR(*peer.exchanged_score, 0.25, 1e-6);
    } else {
      EXPECT_FALSE(peer.exchanged_score.has_value()) << peer.peer;
    }
  }
}

}  // namespace
}  // namespace meshlearn::node
