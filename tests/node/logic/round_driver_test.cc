// The round driver (node/logic/round_driver.h): sampling, fetching, computing, publishing, pacing,
// lingering and resuming.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

TEST(RoundDriver, StartGreetsConfiguredPeersAndTrainsRoundZeroLocally) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  TimePoint t0{};
  Actions actions = m->Start(t0);
  auto requests = All<SendRequest>(actions);
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) EXPECT_TRUE(std::holds_alternative<Hello>(r.message.body));
  auto compute = All<StartCompute>(actions);
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 0);
  EXPECT_TRUE(compute[0].job.peers.empty());
}

TEST(RoundDriver, RoundFetchesSampledPeersScoresAndPublishes) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  Actions after0 = m->OnComputeDone(Outcome(0), t0 + seconds(1));
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
    EXPECT_EQ(p.round, 0) << "the round of the peer's snapshot, for the staleness weights";
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

// A round whose compute failed (here, training diverged) is recorded as stopped and unmeasured:
// NaN metrics, which rounds.csv leaves empty, not zeros that a summary would take for the node's
// best validation loss.
TEST(RoundDriver, AFailedRoundRecordsNoMetrics) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  Actions actions =
      m->OnComputeDone(Status::NonFinite("training loss became nan"), t0 + seconds(1));
  auto completed = All<RoundCompleted>(actions);
  ASSERT_EQ(completed.size(), 1u);
  const RoundRecord& record = completed[0].record;
  EXPECT_TRUE(record.stopped);
  for (double metric : {record.outcome.train_loss, record.outcome.val_loss, record.outcome.val_acc,
                        record.outcome.test_loss, record.outcome.test_acc}) {
    EXPECT_TRUE(std::isnan(metric)) << metric;
  }
}

// Issue 61: a node whose learning halted serves no model: every GetModel, held or not, is
// answered Error(unavailable) naming the failure, while an early-stopped node still serves.
TEST(RoundDriver, AHaltedNodeServesNoModelAndSaysWhy) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  // A peer's GetModel for round 1 waits for it (sync mode).
  GetModel held;
  held.min_round = 1;
  held.wait = true;
  EXPECT_TRUE(All<SendReply>(m->OnInbound(1, From("a", 7, held), t0 + seconds(1))).empty());
  Actions failed = m->OnComputeDone(Status::NonFinite("training loss became inf"), t0 + seconds(2));
  auto errors = All<SendReply>(failed);
  ASSERT_EQ(errors.size(), 1u) << "the held request is answered at once";
  const auto* error = std::get_if<Error>(&errors[0].message.body);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, ErrorCode::kUnavailable);
  EXPECT_NE(error->text.find("node me halted at round 0: training loss became inf"),
            std::string::npos)
      << error->text;
  for (bool wait : {false, true}) {
    GetModel later;
    later.wait = wait;
    auto replies = All<SendReply>(m->OnInbound(2, From("a", 8, later), t0 + seconds(3)));
    ASSERT_EQ(replies.size(), 1u);
    const auto* refused = std::get_if<Error>(&replies[0].message.body);
    ASSERT_NE(refused, nullptr) << "wait " << wait << ": a halted node sends no model";
    EXPECT_EQ(refused->code, ErrorCode::kUnavailable);
  }

  // Restarted from its checkpoint, it is still halted.
  MachineState state = m->ExportState();
  EXPECT_NE(state.halted.find("halted at round 0"), std::string::npos) << state.halted;
  auto restarted = MakeMachine(MachineConfig("me", kPeers));
  ASSERT_TRUE(restarted->Resume(state, FloatArray::Own({1, 2, 3, 4}), true).ok());
  GetModel after;
  auto refused = All<SendReply>(restarted->OnInbound(4, From("a", 10, after), t0 + seconds(4)));
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Error>(refused[0].message.body));
  EXPECT_EQ(std::get<Error>(refused[0].message.body).text, state.halted);

  auto healthy = AdmittedMachine(MachineConfig("me", kPeers));
  RoundOutcome stopped = Outcome(0);
  stopped.stopped = true;  // patience ran out: its best model is still served
  (void)healthy->OnComputeDone(stopped, t0 + seconds(1));
  GetModel get;
  auto served = All<SendReply>(healthy->OnInbound(3, From("a", 9, get), t0 + seconds(2)));
  ASSERT_EQ(served.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Model>(served[0].message.body));
}

// Issue 45: a resting (early-stopped) node is silent by default: no GetModel, its rounds go on
// with no peers and its sampler keeps its scores; with RestingRule::kFetch it still fetches.
TEST(RoundDriver, RestingNodeSamplesAndFetchesNothingUnlessTold) {
  const auto gets_after_resting = [](RestingRule resting, bool* computed_without_peers) {
    auto config = MachineConfig("me", kPeers);
    config.rounds.resting = resting;
    TimePoint t0{};
    auto m = AdmittedMachine(config);
    RoundOutcome stopped = Outcome(0);
    stopped.stopped = true;
    Actions actions = m->OnComputeDone(stopped, t0 + seconds(1));
    size_t gets = 0;
    for (const auto& r : All<SendRequest>(actions)) {
      if (std::holds_alternative<GetModel>(r.message.body)) ++gets;
    }
    auto compute = All<StartCompute>(actions);
    *computed_without_peers =
        compute.size() == 1 && compute[0].job.round == 1 && compute[0].job.peers.empty();
    if (resting == RestingRule::kSilent) {
      // The round completes with nothing sampled, and the sampler is left as it was.
      const std::vector<topology::PeerRecord> before = m->sampler().Records();
      auto done = All<RoundCompleted>(m->OnComputeDone(stopped, t0 + seconds(2)));
      EXPECT_EQ(done.size(), 1u);
      if (!done.empty()) {
        EXPECT_EQ(done[0].record.sampled, 0);
      }
      for (size_t k = 0; k < before.size(); ++k) {
        EXPECT_EQ(m->sampler().Records()[k].probability, before[k].probability);
      }
    }
    return gets;
  };
  bool silent_computed = false;
  EXPECT_EQ(gets_after_resting(RestingRule::kSilent, &silent_computed), 0u);
  EXPECT_TRUE(silent_computed);
  bool fetch_computed = true;
  EXPECT_EQ(gets_after_resting(RestingRule::kFetch, &fetch_computed), 2u);  // m = 2
  EXPECT_FALSE(fetch_computed);  // it waits for the replies first
}

TEST(RoundDriver, PeerThatMissesTheDeadlineIsSkippedAndAfterRepeatedFailuresNotSampled) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 10);
  config.rounds.peers_per_round = 1;
  auto m = MakeMachine(config);
  TimePoint now{};
  StartAndAdmitAll(*m, now);
  Actions actions = m->OnComputeDone(Outcome(0), now);
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

// A peer that answers at once that it has no model yet (a straggler in its round 0, async mode)
// is skipped for the round without a missed deadline, and however often it says so it is never
// marked dead: it is sampled again in the next round.
TEST(RoundDriver, PeerWithNoModelYetIsSkippedButNeverCountedAsFailing) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 10);
  config.rounds.peers_per_round = 1;
  config.rounds.sync = false;
  auto m = MakeMachine(config);
  TimePoint now{};
  StartAndAdmitAll(*m, now);
  Actions actions = m->OnComputeDone(Outcome(0), now);
  for (int round = 1; round <= 4; ++round) {
    auto fetch = All<SendRequest>(actions);
    auto get = std::find_if(fetch.begin(), fetch.end(), [](const SendRequest& r) {
      return std::holds_alternative<GetModel>(r.message.body);
    });
    ASSERT_NE(get, fetch.end()) << "round " << round << ": the peer is still sampled";
    now += std::chrono::milliseconds(10);
    Error none{ErrorCode::kUnavailable, kNoModelYet};
    auto compute = All<StartCompute>(m->OnReply(get->request_id, From("a", 1, none), now));
    ASSERT_EQ(compute.size(), 1u) << "round " << round;
    EXPECT_TRUE(compute[0].job.peers.empty());
    actions = m->OnComputeDone(Outcome(round), now);
  }
  EXPECT_EQ(m->counters().missed_deadlines, 0u);
  EXPECT_EQ(m->peers().LivenessOf("a", now), topology::Liveness::kAlive);
}

TEST(RoundDriver, OverdueFetchIsClosedByTheTickEvenIfTheTransportNeverAnswers) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  m->OnComputeDone(Outcome(0), t0);
  EXPECT_TRUE(All<StartCompute>(m->OnTick(t0 + seconds(9))).empty());
  auto compute = All<StartCompute>(m->OnTick(t0 + seconds(13)));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_EQ(compute[0].job.round, 1);
}

// Clustering policies (fetch_updates): the node asks for its peers' local updates and hands them
// to the learner; a peer that sends none (an older build) is still merged, without an update.
TEST(RoundDriver, ClusterPolicyNodeAsksForPeersUpdatesAndPassesThemToTheLearner) {
  auto plain = MakeMachine(MachineConfig("me", kPeers));
  StartAndAdmitAll(*plain, TimePoint{});
  for (const auto& r : All<SendRequest>(plain->OnComputeDone(Outcome(0), TimePoint{}))) {
    if (const auto* get = std::get_if<GetModel>(&r.message.body)) {
      EXPECT_FALSE(get->with_update);
    }
  }

  auto config = MachineConfig("me", kPeers);
  config.rounds.fetch_updates = true;
  TimePoint t0{};
  auto m = AdmittedMachine(config);
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

// A machine of `config` whose peers a and c announce this build's version and b version 2.
std::unique_ptr<NodeStateMachine> MachineWithAVersion2Peer(StateMachineConfig config) {
  auto m = MakeMachine(std::move(config));
  for (const SendRequest& r : All<SendRequest>(m->Start(TimePoint{}))) {
    Message ack = From(r.peer, r.request_id, AckFor(r.endpoint));
    if (r.peer == "b") ack.envelope.protocol_version = 2;
    m->OnReply(r.request_id, ack, TimePoint{});
  }
  return m;
}

// PROTOCOL.md, "Compressed models": a GetModel accepts the model codecs only when both sides
// announced version 3; a node announcing version 2 ([round] max_protocol_version) asks as one.
TEST(RoundDriver, GetModelAcceptsCompressionOnlyBetweenVersion3Nodes) {
  auto config = MachineConfig("me", kPeers);
  config.rounds.peers_per_round = 3;
  auto m = MachineWithAVersion2Peer(config);
  auto fetches = Requests(m->OnComputeDone(Outcome(0), TimePoint{}), MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 3u);
  const std::vector<CompressionCodec> all = {CompressionCodec::kFp16, CompressionCodec::kInt8};
  for (const SendRequest& r : fetches) {
    EXPECT_EQ(r.message.envelope.protocol_version, kProtocolVersion);
    EXPECT_EQ(std::get<GetModel>(r.message.body).accepts,
              r.peer == "b" ? std::vector<CompressionCodec>{} : all)
        << r.peer;
  }
  // Peer a answers int8: the learner gets the decoded floats.
  Model int8 = PeerModelAt(0);
  int8.encoding.codec = CompressionCodec::kInt8;
  int8.weights = FloatArray::Own({0.1f, 0.2f, 0.3f, 127.f});
  DecodeOptions options;
  options.expected_layout = &kLayout;
  Result<Message> arrived = Decode(Encode(From("a", 1, int8)), options);
  ASSERT_TRUE(arrived.ok()) << arrived.status().ToString();
  Actions out;
  for (const SendRequest& r : fetches) {
    Actions more = r.peer == "a" ? m->OnReply(r.request_id, *arrived, TimePoint{})
                                 : m->OnReply(r.request_id, From(r.peer, 2, PeerModelAt(0)), {});
    out.insert(out.end(), more.begin(), more.end());
  }
  auto compute = All<StartCompute>(out);
  ASSERT_EQ(compute.size(), 1u);
  for (const PeerModel& p : compute[0].job.peers) {
    if (p.peer != "a") continue;
    EXPECT_EQ(p.weights, std::get<Model>(arrived->body).weights);
    EXPECT_EQ(p.weights.view()[0], 0.f) << "0.1 is below half an int8 step of 127 / 127";
  }

  config.protocol_version = 2;
  auto old = MachineWithAVersion2Peer(config);
  auto old_fetches = Requests(old->OnComputeDone(Outcome(0), TimePoint{}), MessageType::kGetModel);
  ASSERT_EQ(old_fetches.size(), 3u);
  for (const SendRequest& r : old_fetches) {
    EXPECT_EQ(r.message.envelope.protocol_version, 2);
    EXPECT_TRUE(std::get<GetModel>(r.message.body).accepts.empty()) << r.peer;
  }
}

// Top-k (PROTOCOL.md "Top-k update chains"): a node that keeps peer estimates accepts topk and
// says what it holds; a peer's chain is applied to that estimate, and the learner receives it
// plus consensus_step times the node's own lag.
TEST(RoundDriver, TopKRepliesAreRebuiltIntoThePeersEstimatePlusTheNodesLagCorrection) {
  const std::vector<float> initial = {0.f, 0.f, 0.f, 0.f};
  auto config = MachineConfig("me", kPeers);
  config.rounds.peers_per_round = 1;
  config.rounds.shared_initial = FloatArray::Own(initial);
  config.rounds.peer_estimates = 4;
  config.serving.shared_initial = FloatArray::Own(initial);
  config.serving.compression.codec = CompressionCodec::kTopK;
  config.serving.compression.topk_fraction = 0.5;                    // 2 of the 4 values
  config.serving.compression.topk_values = CompressionCodec::kFp16;  // exact for these values
  config.rounds.consensus_step = 0.5;
  auto m = AdmittedMachine(config);
  auto fetches = Requests(m->OnComputeDone(Outcome(0), TimePoint{}), MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 1u);
  const GetModel& get = std::get<GetModel>(fetches[0].message.body);
  EXPECT_EQ(get.accepts,
            (std::vector<CompressionCodec>{CompressionCodec::kFp16, CompressionCodec::kInt8,
                                           CompressionCodec::kTopK}));
  EXPECT_EQ(get.estimate, HeldEstimate{});

  // The peer's estimate after its round 0: the largest half of {8, -4, 0.5, 2}.
  EstimateOwner peer(config.serving.compression, initial);
  peer.Publish(0, std::vector<float>{8.f, -4.f, 0.5f, 2.f});
  Model reply = PeerModelAt(0);
  reply.weights = FloatArray();
  reply.encoding.codec = CompressionCodec::kTopK;
  reply.chain = *peer.ChainTo(0, get.estimate.value());
  auto compute = All<StartCompute>(
      m->OnReply(fetches[0].request_id, From(fetches[0].peer, 1, reply), TimePoint{}));
  ASSERT_EQ(compute.size(), 1u);
  ASSERT_EQ(compute[0].job.peers.size(), 1u);
  // The peer's estimate is {8, -4, 0, 0}. Our round 0 published {1, 2, 3, 0}; our own estimate
  // kept its largest half, {0, 2, 3, 0}: our lag is {1, 0, 0, 0}, and half of it is added.
  EXPECT_EQ(compute[0].job.peers[0].weights, FloatArray::Own({8.5f, -4.f, 0.f, 0.f}));
}

// A node announcing version 1 has no Goodbye, even for peers that do.
TEST(RoundDriver, NodeAnnouncingVersion1SaysNoGoodbye) {
  auto config = MachineConfig("me", kPeers);
  config.protocol_version = 1;
  auto m = MachineWithAVersion2Peer(config);
  EXPECT_TRUE(Requests(m->Leave("stopped", TimePoint{}), MessageType::kGoodbye).empty());
}

TEST(RoundDriver, RoundWaitsForFirstHellosSoMembershipDoesNotDependOnTiming) {
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

TEST(RoundDriver, SameSeedGivesTheSameSamplesAndAnotherSeedDiffers) {
  auto sample_sequence = [](uint64_t seed) {
    auto config = MachineConfig("me",
                                {{"a", "tcp://x:1"},
                                 {"b", "tcp://x:2"},
                                 {"c", "tcp://x:3"},
                                 {"d", "tcp://x:4"},
                                 {"e", "tcp://x:5"}},
                                30);
    config.seed = seed;
    auto m = MakeMachine(config, topology::SamplerKind::kRandom);
    TimePoint now{};
    StartAndAdmitAll(*m, now);
    std::vector<std::string> sequence;
    Actions actions = m->OnComputeDone(Outcome(0), now);
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

TEST(RoundDriver, AfterTheLastRoundItLingersServingThenFinishes) {
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

TEST(RoundDriver, ExportedStateResumesAtTheNextRound) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers, 5));
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
  Actions actions;
  for (const auto& r : All<SendRequest>(start)) {
    actions = resumed->OnReply(r.request_id, From(r.peer, 1, AckFor(r.endpoint)), t0);
  }
  for (const auto& r : All<SendRequest>(actions)) {
    if (const auto* get = std::get_if<GetModel>(&r.message.body)) {
      EXPECT_EQ(get->min_round, 1);
    }
  }
}

TEST(RoundDriver, MinRoundPacesTheNextRound) {
  auto config = MachineConfig("me", {}, 5);
  config.rounds.min_round = seconds(2);
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

// An engine-started rank knows only rank 0 ("a") of a mesh of 3: round 1 waits until gossip
// brings the third node and it is admitted, asking its admitted peers for their peer lists once a
// second in the meantime.
TEST(RoundDriver, WithAMeshSizeRoundOneWaitsForTheWholeMeshLearnedByGossip) {
  TimePoint t0{};
  StateMachineConfig config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}});
  config.membership.mesh_size = 3;
  auto m = AdmittedMachine(config);
  Actions after0 = m->OnComputeDone(Outcome(0), t0 + seconds(1));
  EXPECT_TRUE(Requests(after0, MessageType::kGetModel).empty()) << "round 1 waits for the mesh";

  auto asks = Requests(m->OnTick(t0 + seconds(2)), MessageType::kPeerList);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].peer, "a");
  EXPECT_TRUE(
      Requests(m->OnTick(t0 + std::chrono::milliseconds(2500)), MessageType::kPeerList).empty())
      << "one ask in flight per peer";
  m->OnReply(asks[0].request_id,
             From("a", asks[0].request_id,
                  PeerList{{{"a", "tcp://127.0.0.1:2", ""}, {"b", "tcp://127.0.0.1:3", ""}}}),
             t0 + seconds(3));
  auto hellos = Requests(m->OnTick(t0 + seconds(3)), MessageType::kHello);
  ASSERT_EQ(hellos.size(), 1u);
  EXPECT_EQ(hellos[0].peer, "b");
  Actions joined =
      m->OnReply(hellos[0].request_id, From("b", hellos[0].request_id, AckFor("tcp://127.0.0.1:3")),
                 t0 + seconds(3));
  auto fetches = Requests(joined, MessageType::kGetModel);
  EXPECT_EQ(fetches.size(), 2u) << "round 1 begins, sampling both peers, once b is admitted";
  EXPECT_TRUE(Requests(m->OnTick(t0 + seconds(10)), MessageType::kPeerList).empty())
      << "a complete mesh asks for no more peer lists";
}

// A mesh that never completes (a rank that never started) delays round 1 by at most
// max(6 round deadlines, 60 s); the round then begins with the peers there are.
TEST(RoundDriver, AMeshThatNeverCompletesDelaysRoundOneByABoundedWait) {
  TimePoint t0{};
  StateMachineConfig config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}});
  config.membership.mesh_size = 5;
  auto m = AdmittedMachine(config);
  m->OnComputeDone(Outcome(0), t0 + seconds(1));
  EXPECT_TRUE(Requests(m->OnTick(t0 + seconds(60)), MessageType::kGetModel).empty());
  auto fetches = Requests(m->OnTick(t0 + seconds(62)), MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_EQ(fetches[0].peer, "a");
}

// What a peer asking now for our latest model (GetModel{0, wait = false}) receives.
Model Served(NodeStateMachine& m, InboundId inbound, TimePoint now) {
  auto replies = All<SendReply>(m.OnInbound(inbound, From("a", inbound, GetModel{0, false}), now));
  EXPECT_EQ(replies.size(), 1u);
  if (replies.empty()) return Model{};
  DecodeOptions options;
  options.expected_layout = &kLayout;
  Result<Message> decoded = Decode(FramesOf(replies[0]), options);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.ok() ? std::get<Model>(decoded->body) : Model{};
}

// Issue 47: a score_lie node's served model carries the lying row, not its sampler's.
TEST(ScoreLie, TheServedModelCarriesTheLyingRow) {
  TimePoint t0{};
  StateMachineConfig config = MachineConfig("me", kPeers);
  config.rounds.score_lie_allies = std::vector<std::string>{"me", "x"};
  auto m = AdmittedMachine(config);
  Actions after0 = m->OnComputeDone(Outcome(0), t0 + seconds(1));
  auto compute = All<StartCompute>(AnswerFetches(*m, after0));
  ASSERT_EQ(compute.size(), 1u);
  std::vector<PeerScoreOutcome> scores;
  for (const PeerModel& p : compute[0].job.peers) scores.push_back({p.peer, 0.9, {}, true});
  m->OnComputeDone(Outcome(1, scores), t0 + seconds(2));
  ASSERT_EQ(m->completed_round(), 1);
  std::map<std::string, double> row;
  for (const PeerScore& s : Served(*m, 50, t0 + seconds(3)).score_row) row[s.peer] = s.score;
  EXPECT_DOUBLE_EQ(row.at("x"), 1.8);
  for (const PeerModel& p : compute[0].job.peers) EXPECT_DOUBLE_EQ(row.at(p.peer), 1.8e-6);
  EXPECT_FALSE(row.contains("me"));
  EXPECT_EQ(m->sampler().Find("x"), nullptr) << "its own sampler is untouched";
}

// The sequential exchange schedule (RoundConfig::take_turns): round 1 waits for its turn, fetches
// the peers' latest models, serves its merged model with its updated scores once its turn is
// over, and its trained model only at the round's end.
TEST(RoundDriver, TakingTurnsServesTheMergedModelUntilTheRoundEnds) {
  TimePoint t0{};
  StateMachineConfig config = MachineConfig("me", kPeers);
  config.rounds.take_turns = true;
  auto m = AdmittedMachine(config);
  Actions after0 = m->OnComputeDone(Outcome(0), t0 + seconds(1));
  ASSERT_EQ(All<RoundCompleted>(after0).size(), 1u) << "round 0 takes no turn";
  EXPECT_TRUE(Requests(after0, MessageType::kGetModel).empty()) << "no fetch before the turn";
  auto awaited = All<AwaitTurn>(after0);
  ASSERT_EQ(awaited.size(), 1u);
  EXPECT_EQ(awaited[0].round, 1);
  EXPECT_TRUE(awaited[0].exchanges);

  Actions turn = m->OnTurn(t0 + seconds(5));
  auto fetches = Requests(turn, MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 2u);
  for (const SendRequest& f : fetches) {
    EXPECT_EQ(std::get<GetModel>(f.message.body).min_round, 0);
    EXPECT_FALSE(std::get<GetModel>(f.message.body).wait) << "the peer's latest, at once";
    EXPECT_EQ(f.deadline, t0 + seconds(5) + seconds(10)) << "the deadline counts from the turn";
  }
  auto compute = All<StartCompute>(AnswerFetches(*m, turn));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_TRUE(compute[0].job.return_merged);

  std::vector<PeerScoreOutcome> scores;
  for (const PeerModel& p : compute[0].job.peers) scores.push_back({p.peer, 0.9, {}, true});
  RoundOutcome outcome = Outcome(1, scores);
  outcome.merged_weights = FloatArray::Own({7.f, 7.f, 7.f, 7.f});
  Actions done = m->OnComputeDone(outcome, t0 + seconds(6));
  EXPECT_TRUE(All<RoundCompleted>(done).empty());
  ASSERT_EQ(All<TurnOver>(done).size(), 1u);
  EXPECT_EQ(m->completed_round(), 0);
  Model merged = Served(*m, 50, t0 + seconds(7));
  EXPECT_EQ(merged.round, 1);
  EXPECT_EQ(std::vector<float>(merged.weights.view().begin(), merged.weights.view().end()),
            std::vector<float>({7.f, 7.f, 7.f, 7.f}));
  std::map<std::string, double> row;
  for (const PeerScore& s : merged.score_row) row[s.peer] = s.score;
  for (const PeerModel& p : compute[0].job.peers) EXPECT_EQ(row[p.peer], 0.9) << p.peer;

  Actions end = m->OnRoundEnd(t0 + seconds(8));
  ASSERT_EQ(All<RoundCompleted>(end).size(), 1u);
  EXPECT_EQ(m->completed_round(), 1);
  Model trained = Served(*m, 51, t0 + seconds(9));
  EXPECT_EQ(trained.weights.view()[3], 1.f) << "Outcome(1)'s trained weights {1, 2, 3, 1}";
  ASSERT_EQ(All<AwaitTurn>(end).size(), 1u);
  EXPECT_EQ(All<AwaitTurn>(end)[0].round, 2);
}

// A turn granted to a node that is not waiting for one ends at once, so no turn is held for ever.
TEST(RoundDriver, ATurnANodeCannotUseEndsAtOnce) {
  StateMachineConfig config = MachineConfig("me", kPeers);
  config.rounds.take_turns = true;
  auto m = AdmittedMachine(config);  // computing round 0
  Actions turn = m->OnTurn(TimePoint{} + seconds(1));
  EXPECT_EQ(All<TurnOver>(turn).size(), 1u);
  EXPECT_TRUE(Requests(turn, MessageType::kGetModel).empty());
}

}  // namespace
}  // namespace meshlearn::node::testing
