// Membership (node/logic/membership.h): Hello, PeerList gossip, keys and the allowlist, driven
// through the state machine with scripted messages and simulated time.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>

#include "node/logic/membership.h"
#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

TEST(Membership, HelloWithAnotherArchitectureIsRefusedAndTheSenderNotAdmitted) {
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

TEST(Membership, HelloAckWithAnotherArchitectureForgetsThePeer) {
  auto m = MakeMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  auto start = All<SendRequest>(m->Start({}));
  ASSERT_EQ(start.size(), 1u);
  m->OnReply(start[0].request_id, From("a", 1, AckFor(start[0].endpoint, "mlp/10/784/1")), {});
  EXPECT_EQ(m->peers().Find("a"), nullptr);
  EXPECT_FALSE(m->sampler().HasPeer("a"));
}

TEST(Membership, GossipedPeersAreGreetedAndJoinTheSamplerOnlyAfterTheirAck) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
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

TEST(Membership, GreetingsOfManyGossipedPeersArePacedAcrossTicks) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
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
  c.membership.public_key = "KEY-me";
  c.membership.allowed_keys = std::set<std::string>{"KEY-me", "KEY-a", "KEY-z"};
  return MakeMachine(std::move(c));
}

TEST(MembershipSecurity, RequestsCarryThePeersKeyAndHelloAndPeerListOurs) {
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

TEST(MembershipSecurity, GossipedPeersOffTheAllowlistAreNeitherLearnedNorGreeted) {
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

TEST(MembershipSecurity, GossipCannotChangeTheKeyOfAKnownPeerButItsOwnHelloCan) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  // "z" is allowlisted, and claims that "a" now lives at its own endpoint with its own key.
  m->OnInbound(1, From("z", 4, PeerList{{{"a", "tcp://127.0.0.5:7", "KEY-z"}}}), t0);
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-a");
  EXPECT_EQ(m->peers().Find("a")->endpoint, "tcp://127.0.0.1:2");
  // "a" itself, having proven KEY-z in its handshake: we greet it with that key, and once it
  // answers as "a" (proving KEY-z again) the key is changed.
  Hello rekeyed{"tcp://127.0.0.1:2", "linear/1/4/5", "cos_weights", "KEY-z", 5};
  auto actions = m->OnInbound(2, From("a", 5, rekeyed), t0, "KEY-z");
  auto hellos = Requests(actions, MessageType::kHello);
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].public_key, "KEY-z");
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-a") << "not before it answered";
  m->OnReply(hellos[0].request_id, From("a", 6, AckFor("tcp://127.0.0.1:2")), t0);
  EXPECT_EQ(m->peers().Find("a")->public_key, "KEY-z");
}

TEST(MembershipSecurity, AHelloWithAKeyOffTheAllowlistIsRejectedAsUnknownSender) {
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
  // An allowed key makes "z" a candidate: greeted back with its key, admitted when it answers.
  EXPECT_FALSE(m->sampler().HasPeer("z"));
  auto hellos = Requests(m->OnTick(t0), MessageType::kHello);
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].public_key, "KEY-z");
  m->OnReply(hellos[0].request_id, From("z", 11, AckFor("tcp://127.0.0.5:7")), t0);
  EXPECT_TRUE(m->sampler().HasPeer("z"));
  EXPECT_EQ(m->peers().Find("z")->public_key, "KEY-z");
}

TEST(MembershipSecurity, PeersKeepTheirKeysAcrossACheckpoint) {
  auto m = SecureMachine();
  TimePoint t0{};
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  MachineState state = m->ExportState();
  ASSERT_EQ(state.peers.size(), 1u);
  EXPECT_EQ(state.peers[0].public_key, "KEY-a");
  StateMachineConfig c = MachineConfig("me", {});  // the config no longer lists "a"
  c.membership.public_key = "KEY-me";
  c.membership.allowed_keys = std::set<std::string>{"KEY-a"};
  auto resumed = MakeMachine(std::move(c));
  ASSERT_TRUE(resumed->Resume(state, FloatArray::Own({1, 2, 3, 4}), false).ok());
  auto hellos = All<SendRequest>(resumed->Start(t0));
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].public_key, "KEY-a");
}

// The part alone, without the router.
TEST(Membership, AFailedFirstHelloNoLongerHoldsRoundsBackAndIsRetriedWithBackoff) {
  auto sampler = topology::MakePeerSampler({topology::SamplerKind::kDac, "me", {}, {}});
  ASSERT_TRUE(sampler.ok());
  auto log = QuietLogger();
  RequestBook requests("me", log);
  MembershipConfig config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}).membership;
  Membership membership(config, {**sampler, requests, *log});
  TimePoint t0{};
  Actions out;
  membership.GreetAll(t0, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(membership.HelloOutstanding());
  const auto& hello = std::get<SendRequest>(out[0]);
  membership.OnReply(hello.request_id, Status::Timeout("deadline"), Status::Timeout("deadline"),
                     t0 + seconds(10), out);
  EXPECT_FALSE(membership.HelloOutstanding()) << "only first greetings count";
  EXPECT_FALSE(membership.NonceOf("a").has_value());
  Actions early;
  membership.OnTick(t0 + seconds(11), early);
  EXPECT_TRUE(early.empty());
  Actions retry;
  membership.OnTick(t0 + seconds(12), retry);  // 2 s after the first failure
  ASSERT_EQ(retry.size(), 1u);
  const auto& again = std::get<SendRequest>(retry[0]);
  membership.OnReply(again.request_id, From("a", again.request_id, AckFor("tcp://127.0.0.1:2")),
                     Status::Ok(), t0 + seconds(12), retry);
  EXPECT_EQ(membership.NonceOf("a"), 1u);
  EXPECT_TRUE((*sampler)->HasPeer("a"));
}

// Issue 59, item 4: a configured peer that cannot be joined says why, once per cause, in the log
// and in JoinProblemOf (which /status shows), until it joins.
TEST(Membership, AConfiguredPeerThatCannotBeJoinedSaysWhyOncePerCauseUntilItJoins) {
  auto sampler = topology::MakePeerSampler({topology::SamplerKind::kDac, "me", {}, {}});
  ASSERT_TRUE(sampler.ok());
  std::ostringstream captured;
  auto log = std::make_shared<spdlog::logger>(
      "me", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  RequestBook requests("me", log);
  MembershipConfig config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}).membership;
  Membership membership(config, {**sampler, requests, *log});
  const Status refused_port = Status::Timeout("no reply: nothing accepts TCP connections");
  const Status refused_key = Status::Timeout("no reply: refused this node's CURVE public key");
  TimePoint t = TimePoint{};
  auto fail_next_hello = [&](const Status& why) {
    Actions out;
    t += seconds(60);  // past any backoff
    membership.OnTick(t, out);
    if (out.empty()) membership.GreetAll(t, out);
    ASSERT_EQ(out.size(), 1u);
    membership.OnReply(std::get<SendRequest>(out[0]).request_id, why, why, t, out);
  };
  auto count = [&](const std::string& text) {
    std::string all = captured.str();
    size_t n = 0;
    for (size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(membership.JoinProblemOf("a"), "");
  fail_next_hello(refused_port);
  fail_next_hello(refused_port);
  EXPECT_EQ(membership.JoinProblemOf("a"), refused_port.message());
  EXPECT_EQ(count("cannot join peer a at tcp://127.0.0.1:2: " + refused_port.message()), 1u)
      << captured.str();
  fail_next_hello(refused_key);  // a new cause is said again
  EXPECT_EQ(membership.JoinProblemOf("a"), refused_key.message());
  EXPECT_EQ(count("cannot join peer a at tcp://127.0.0.1:2: " + refused_key.message()), 1u)
      << captured.str();

  Actions out;
  t += seconds(60);
  membership.OnTick(t, out);
  ASSERT_EQ(out.size(), 1u);
  const auto& hello = std::get<SendRequest>(out[0]);
  membership.OnReply(hello.request_id, From("a", hello.request_id, AckFor("tcp://127.0.0.1:2")),
                     Status::Ok(), t, out);
  EXPECT_TRUE((*sampler)->HasPeer("a"));
  EXPECT_EQ(membership.JoinProblemOf("a"), "") << "a joined peer has no problem";
}

// ---- issue 17, item 6: peers are candidates until they answer our own Hello ----------------

using topology::Liveness;

// The ids of a PeerList reply among `actions`.
std::vector<std::string> GossipedIds(const Actions& actions) {
  std::vector<std::string> ids;
  for (const SendReply& r : All<SendReply>(actions)) {
    if (const auto* list = std::get_if<PeerList>(&r.message.body)) {
      for (const PeerInfo& p : list->peers) ids.push_back(p.id);
    }
  }
  return ids;
}

// A Hello from a node listening at `endpoint`.
Hello HelloFrom(const std::string& endpoint) {
  return Hello{endpoint, "linear/1/4/5", "cos_weights", "", 3};
}

TEST(MembershipCandidates,
     AnUnsolicitedHelloMakesACandidateNeitherSampledNorGossipedUntilVerified) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  auto answer = m->OnInbound(1, From("stranger", 9, HelloFrom("tcp://127.0.0.9:9")), t0);
  auto replies = All<SendReply>(answer);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<HelloAck>(replies[0].message.body));
  EXPECT_EQ(m->peers().LivenessOf("stranger", t0), Liveness::kCandidate);
  EXPECT_FALSE(m->sampler().HasPeer("stranger"));
  // Not gossiped onward, not sampled.
  EXPECT_EQ(GossipedIds(m->OnInbound(2, From("a", 5, PeerList{}), t0)),
            (std::vector<std::string>{"me", "a"}));
  for (const SendRequest& r : Requests(m->OnComputeDone(Outcome(0), t0), MessageType::kGetModel)) {
    EXPECT_EQ(r.peer, "a") << "a candidate was asked for its model";
  }
  // It is greeted back where it said it listens; once it answers as itself it is verified.
  auto hellos = Requests(m->OnTick(t0), MessageType::kHello);
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].peer, "stranger");
  EXPECT_EQ(hellos[0].endpoint, "tcp://127.0.0.9:9");
  m->OnReply(hellos[0].request_id, From("stranger", 1, AckFor("tcp://127.0.0.9:9")), t0);
  EXPECT_EQ(m->peers().LivenessOf("stranger", t0), Liveness::kAlive);
  EXPECT_TRUE(m->sampler().HasPeer("stranger"));
  EXPECT_EQ(GossipedIds(m->OnInbound(3, From("a", 6, PeerList{}), t0)),
            (std::vector<std::string>{"me", "a", "stranger"}));
  EXPECT_EQ(m->counters().peers_reached, 2u);
}

TEST(MembershipCandidates, AnEndpointThatAnswersAsAnotherIdVerifiesNobody) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}));
  m->OnInbound(1, From("a", 4, PeerList{{{"z", "tcp://127.0.0.5:7", ""}}}), t0);
  auto hellos = Requests(m->OnTick(t0), MessageType::kHello);
  ASSERT_EQ(hellos.size(), 1u);
  m->OnReply(hellos[0].request_id, From("y", 1, AckFor("tcp://127.0.0.5:7")), t0);
  EXPECT_FALSE(m->sampler().HasPeer("z"));
  EXPECT_FALSE(m->sampler().HasPeer("y"));
  EXPECT_EQ(m->peers().Find("z"), nullptr) << "a gossiped candidate that is refused is forgotten";
}

TEST(MembershipCandidates, AFloodOfStrangersIsCappedCountedAndForgottenWhenTheyDoNotAnswer) {
  TimePoint t0{};
  StateMachineConfig c = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}});
  c.membership.max_candidates = 4;
  auto m = MakeMachine(std::move(c));
  StartAndAdmitAll(*m, t0);
  for (int i = 0; i < 50; ++i) {
    std::string id = "s";
    id += std::to_string(i);
    std::string endpoint = "tcp://10.0.0.1:";
    endpoint += std::to_string(1000 + i);
    auto replies = All<SendReply>(m->OnInbound(10 + i, From(id, 1, HelloFrom(endpoint)), t0));
    ASSERT_EQ(replies.size(), 1u);  // every Hello is answered
  }
  EXPECT_EQ(m->peers().size(), 5u) << "a and 4 candidates";
  EXPECT_EQ(m->counters().candidates_ignored, 46u);
  EXPECT_EQ(GossipedIds(m->OnInbound(99, From("a", 5, PeerList{}), t0)),
            (std::vector<std::string>{"me", "a"}));
  // Their greetings time out twice each: then they are forgotten and the list has room again.
  TimePoint t = t0;
  for (int pass = 0; pass < 40 && m->peers().size() > 1; ++pass) {
    t += seconds(3);
    for (const SendRequest& r : Requests(m->OnTick(t), MessageType::kHello)) {
      m->OnReply(r.request_id, Status::Timeout("deadline"), t);
    }
  }
  EXPECT_EQ(m->peers().size(), 1u);
  EXPECT_NE(m->peers().Find("a"), nullptr) << "the configured peer stays";
}

// A PeerList of `count` made-up peers named `prefix`0, `prefix`1, ...
PeerList MadeUpPeers(const std::string& prefix, int count) {
  PeerList list;
  for (int i = 0; i < count; ++i) {
    std::string id = prefix;
    id += std::to_string(i);
    list.peers.push_back({id, "tcp://10.0.0.1:" + std::to_string(1000 + i), ""});
  }
  return list;
}

// Issue 47: one source's PeerLists (a sybil's made-up ids) fill at most its own share of the
// candidates; other sources keep theirs, and the unverified share one.
TEST(MembershipCandidates, OneSourceFillsAtMostItsShareOfTheCandidates) {
  TimePoint t0{};
  StateMachineConfig c =
      MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}, {"b", "tcp://127.0.0.1:3"}});
  c.membership.max_candidates_per_source = 3;
  auto m = MakeMachine(std::move(c));
  StartAndAdmitAll(*m, t0);
  m->OnInbound(1, From("a", 4, MadeUpPeers("s", 10)), t0);
  EXPECT_EQ(m->peers().size(), 5u) << "a, b and 3 of a's 10";
  EXPECT_EQ(m->counters().candidates_ignored, 7u);
  m->OnInbound(2, From("a", 5, MadeUpPeers("t", 10)), t0);
  EXPECT_EQ(m->peers().size(), 5u) << "a's share is full";
  m->OnInbound(3, From("b", 4, PeerList{{{"h", "tcp://127.0.0.9:9", ""}}}), t0);
  EXPECT_NE(m->peers().Find("h"), nullptr) << "b's list still brings its peer in";
  // Senders that are not verified peers share one source, whatever ids they claim.
  m->OnInbound(4, From("x", 1, MadeUpPeers("x", 5)), t0);
  m->OnInbound(5, From("y", 1, MadeUpPeers("y", 5)), t0);
  EXPECT_NE(m->peers().Find("x2"), nullptr);
  EXPECT_EQ(m->peers().Find("y0"), nullptr);
  EXPECT_EQ(m->peers().size(), 9u);
  // Once a's candidates answer as themselves (verified), a's next list brings 3 more.
  for (int tick = 1; tick <= 4; ++tick) {
    for (const SendRequest& r :
         Requests(m->OnTick(t0 + std::chrono::milliseconds(50 * tick)), MessageType::kHello)) {
      if (r.peer[0] == 's') m->OnReply(r.request_id, From(r.peer, 2, AckFor(r.endpoint)), t0);
    }
  }
  EXPECT_TRUE(m->sampler().HasPeer("s2"));
  m->OnInbound(6, From("a", 6, MadeUpPeers("t", 10)), t0);
  EXPECT_NE(m->peers().Find("t2"), nullptr);
  EXPECT_EQ(m->peers().Find("t3"), nullptr);
}

TEST(MembershipCandidates, VerifiedPeersAreCappedAndGiveWayOnlyToOnesThatLeftOrDied) {
  TimePoint t0{};
  StateMachineConfig c = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}});
  c.membership.max_peers = 1;
  auto m = MakeMachine(std::move(c));
  StartAndAdmitAll(*m, t0);
  auto verify = [&](const std::string& id, const std::string& endpoint) {
    m->OnInbound(1, From(id, 1, HelloFrom(endpoint)), t0);
    for (const SendRequest& r : Requests(m->OnTick(t0), MessageType::kHello)) {
      m->OnReply(r.request_id, From(r.peer, 2, AckFor(r.endpoint)), t0);
    }
  };
  verify("b", "tcp://127.0.0.1:3");
  EXPECT_FALSE(m->sampler().HasPeer("b")) << "a is alive: no room";
  EXPECT_EQ(m->peers().Find("b"), nullptr);
  m->OnInbound(2, From("a", 3, Goodbye{"stopped"}), t0);
  verify("b", "tcp://127.0.0.1:3");
  EXPECT_TRUE(m->sampler().HasPeer("b"));
  EXPECT_FALSE(m->sampler().HasPeer("a")) << "a left and made room";
}

TEST(MembershipSecurity, AKeyBoundToANodeIdSpeaksOnlyForThatId) {
  TimePoint t0{};
  StateMachineConfig c = MachineConfig("me", {{"a", "tcp://127.0.0.1:2", "KEY-a"}});
  c.membership.public_key = "KEY-me";
  c.membership.allowed_keys = std::set<std::string>{"KEY-me", "KEY-a", "KEY-z"};
  c.membership.key_ids = {{"KEY-a", "a"}};
  auto m = MakeMachine(std::move(c));
  StartAndAdmitAll(*m, t0);
  m->OnComputeDone(Outcome(0), t0);
  auto error_of = [](const Actions& actions) {
    auto replies = All<SendReply>(actions);
    EXPECT_EQ(replies.size(), 1u);
    const auto* error = replies.empty() ? nullptr : std::get_if<Error>(&replies[0].message.body);
    return error ? error->code : ErrorCode::kOk;
  };
  // A Hello claiming another id over a connection that proved a's key.
  Hello impostor{"tcp://127.0.0.6:7", "linear/1/4/5", "cos_weights", "KEY-a", 3};
  EXPECT_EQ(error_of(m->OnInbound(1, From("intruder", 9, impostor), t0, "KEY-a")),
            ErrorCode::kUnknownSender);
  EXPECT_EQ(m->peers().Find("intruder"), nullptr);
  // Any other request too, a Goodbye in a's name from z's key included.
  EXPECT_EQ(error_of(m->OnInbound(2, From("z", 10, GetModel{0, false}), t0, "KEY-a")),
            ErrorCode::kUnknownSender);
  EXPECT_EQ(error_of(m->OnInbound(3, From("a", 11, GetModel{0, false}), t0, "KEY-a")),
            ErrorCode::kOk);
  // Gossip cannot attach a's key to another id.
  m->OnInbound(4, From("a", 12, PeerList{{{"x", "tcp://127.0.0.7:7", "KEY-a"}}}), t0, "KEY-a");
  EXPECT_EQ(m->peers().Find("x"), nullptr);
}

// ---- issue 17, item 11: Goodbye ------------------------------------------------------------

TEST(Goodbye, APeerThatLeavesIsNotSampledUntilItsHelloWelcomesItBack) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));  // m = 2 of a, b, c
  auto acked = All<SendReply>(m->OnInbound(1, From("a", 7, Goodbye{"stopped"}), t0));
  ASSERT_EQ(acked.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Goodbye>(acked[0].message.body));
  EXPECT_EQ(acked[0].message.envelope.request_id, 7u);
  EXPECT_EQ(m->peers().LivenessOf("a", t0), Liveness::kLeft);
  auto fetches = Requests(m->OnComputeDone(Outcome(0), t0), MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 2u);
  for (const SendRequest& r : fetches) EXPECT_NE(r.peer, "a");
  EXPECT_EQ(GossipedIds(m->OnInbound(2, From("b", 5, PeerList{}), t0)),
            (std::vector<std::string>{"me", "b", "c"}));
  // Restarted, it greets us from the same endpoint: welcome back at once.
  auto welcome = All<SendReply>(m->OnInbound(3, From("a", 8, HelloFrom("tcp://127.0.0.1:2")), t0));
  ASSERT_EQ(welcome.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<HelloAck>(welcome[0].message.body));
  EXPECT_EQ(m->peers().LivenessOf("a", t0), Liveness::kAlive);
}

TEST(Goodbye, LeavingSaysGoodbyeToEveryVerifiedPeerThatSpeaksVersion2) {
  TimePoint t0{};
  auto m = MakeMachine(MachineConfig("me", kPeers));
  for (const SendRequest& r : All<SendRequest>(m->Start(t0))) {
    Message ack = From(r.peer, r.request_id, AckFor(r.endpoint));
    if (r.peer == "b") ack.envelope.protocol_version = 1;  // b is a version-1 node
    if (r.peer != "c") m->OnReply(r.request_id, ack, t0);  // c never answers: a candidate
  }
  auto goodbyes = Requests(m->Leave("stopped", t0), MessageType::kGoodbye);
  ASSERT_EQ(goodbyes.size(), 1u);
  EXPECT_EQ(goodbyes[0].peer, "a");
  EXPECT_EQ(std::get<Goodbye>(goodbyes[0].message.body).reason, "stopped");
  EXPECT_LE(goodbyes[0].deadline, t0 + seconds(2));
  EXPECT_TRUE(m->GoodbyesOutstanding());
  m->OnReply(goodbyes[0].request_id, From("a", 1, Goodbye{}), t0);
  EXPECT_FALSE(m->GoodbyesOutstanding());
}

// Issue 59, item 2: a node with 20 verified peers has at most 8 Goodbyes in flight; each answer
// or timeout sends the next, in peer-table order, and a peer that left meanwhile is skipped.
TEST(Goodbye, LeavingKeepsAtMostEightGoodbyesInFlightAndSendsTheNextAsEachEnds) {
  TimePoint t0{};
  std::vector<PeerAddress> peers;
  for (int i = 0; i < 20; ++i) {
    peers.push_back({"p" + std::string(i < 10 ? "0" : "") + std::to_string(i),
                     "tcp://127.0.0.1:" + std::to_string(2000 + i)});
  }
  auto m = MakeMachine(MachineConfig("me", peers));
  for (const SendRequest& r : All<SendRequest>(m->Start(t0))) {
    m->OnReply(r.request_id, From(r.peer, r.request_id, AckFor(r.endpoint)), t0);
  }

  auto first = Requests(m->Leave("finished its rounds", t0), MessageType::kGoodbye);
  ASSERT_EQ(first.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(first[i].peer, peers[i].id);
  m->OnInbound(1, From("p08", 5, Goodbye{"stopped"}), t0);  // p08 leaves first: not told

  std::vector<std::string> told;
  for (const SendRequest& r : first) told.push_back(r.peer);
  std::deque<SendRequest> in_flight(first.begin(), first.end());
  while (!in_flight.empty()) {
    EXPECT_TRUE(m->GoodbyesOutstanding());
    SendRequest r = in_flight.front();
    in_flight.pop_front();
    // Every other one times out: a timeout frees its place as an answer does.
    Actions next = told.size() % 2 ? m->OnReply(r.request_id, Status::Timeout("deadline"), t0)
                                   : m->OnReply(r.request_id, From(r.peer, 1, Goodbye{}), t0);
    for (SendRequest& s : Requests(next, MessageType::kGoodbye)) {
      told.push_back(s.peer);
      in_flight.push_back(std::move(s));
    }
    EXPECT_LE(in_flight.size(), 8u);
  }
  EXPECT_FALSE(m->GoodbyesOutstanding());
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) {
    if (i != 8) expected.push_back(peers[i].id);
  }
  EXPECT_EQ(told, expected);
}

}  // namespace
}  // namespace meshlearn::node::testing
