// The EMD exchange (node/logic/emd_exchange.h, node/logic/emd_witness.h), direct and witness mode.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "protocol/codec.h"
#include "protocol/version.h"
#include "similarity/emd.h"
#include "similarity/emd_decision.h"
#include "similarity/projection.h"
#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

std::unique_ptr<NodeStateMachine> EmdMachine(const std::string& id,
                                             std::vector<PeerAddress> peers) {
  auto config = MachineConfig(id, std::move(peers), 5);
  config.emd.enabled = true;
  config.emd.cluster_sampler = true;
  config.membership.nonce = config.emd.nonce = 1000;
  return MakeMachine(config, topology::SamplerKind::kEmdCluster);
}

TEST(EmdExchange, AfterRoundZeroEveryPeerGetsAnEmbedRequestWithTheAgreedSeedAndPhi) {
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

TEST(EmdExchange, PeerSideEmbedsOnTheWorkerAndRepliesWithProjectedRowsOnly) {
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

TEST(EmdExchange, NodeWithoutTheExchangeRefusesEmbedRequests) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  EmbedRequest request;
  request.layout = kLayout;
  request.weights = FloatArray::Own({1, 2, 3, 4});
  auto replies = All<SendReply>(m->OnInbound(5, From("a", 1, request), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnavailable);
}

// An EMD machine whose peers a and c announce this build's version and b version 2; its rows
// travel as `embeddings`.
std::unique_ptr<NodeStateMachine> EmdMachineWithAVersion2Peer(CompressionCodec embeddings,
                                                              uint16_t version = kProtocolVersion) {
  auto config = MachineConfig("me", kPeers, 5);
  config.emd.enabled = true;
  config.emd.cluster_sampler = true;
  config.membership.nonce = config.emd.nonce = 1000;
  config.emd.embeddings.codec = embeddings;
  config.emd.embeddings.block_size = 64;
  config.protocol_version = version;
  auto m = MakeMachine(config, topology::SamplerKind::kEmdCluster);
  for (const SendRequest& r : All<SendRequest>(m->Start(TimePoint{}))) {
    Message ack = From(r.peer, r.request_id, AckFor(r.endpoint));
    if (r.peer == "b") ack.envelope.protocol_version = 2;
    m->OnReply(r.request_id, ack, TimePoint{});
  }
  return m;
}

// The message `m` as its receiver decodes it from the wire.
Message OverTheWire(const Message& m) {
  auto decoded = Decode(Encode(m));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.ok() ? *decoded : m;
}

// PROTOCOL.md, "Compressed embeddings": an EmbedRequest accepts the embedding codecs only
// between version-3 nodes, and the requester measures the rows it decoded.
TEST(EmdExchange, EmbedRequestAcceptsCompressedRowsOnlyBetweenVersion3Nodes) {
  auto m = EmdMachineWithAVersion2Peer(CompressionCodec::kNone);
  auto embeds = Requests(m->OnComputeDone(Outcome(0), TimePoint{}), MessageType::kEmbedRequest);
  ASSERT_EQ(embeds.size(), 3u);
  const std::vector<CompressionCodec> all = {CompressionCodec::kFp16, CompressionCodec::kInt8};
  for (const SendRequest& r : embeds) {
    EXPECT_EQ(std::get<EmbedRequest>(r.message.body).accepts,
              r.peer == "b" ? std::vector<CompressionCodec>{} : all)
        << r.peer;
    if (r.peer != "a") continue;
    // a answers in int8: the EMD job gets the decoded values.
    EmbedReply reply;
    reply.rows = 2;
    reply.cols = 2;
    reply.embeddings = FloatArray::Own({0.1f, 0.2f, 0.3f, 127.f});
    reply.encoding.codec = CompressionCodec::kInt8;
    Message arrived = OverTheWire(From("a", 1, reply));
    auto jobs = All<StartEmd>(m->OnReply(r.request_id, arrived, TimePoint{}));
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].job.peer_validation.values, std::get<EmbedReply>(arrived.body).embeddings);
    EXPECT_EQ(jobs[0].job.peer_validation.values.view()[0], 0.f)
        << "0.1 is below half an int8 step of 127 / 127";
  }
  // A node announcing version 2 asks as one: no accepts.
  auto old = EmdMachineWithAVersion2Peer(CompressionCodec::kInt8, 2);
  auto old_embeds =
      Requests(old->OnComputeDone(Outcome(0), TimePoint{}), MessageType::kEmbedRequest);
  ASSERT_EQ(old_embeds.size(), 3u);
  for (const SendRequest& r : old_embeds) {
    EXPECT_TRUE(std::get<EmbedRequest>(r.message.body).accepts.empty()) << r.peer;
  }
}

// The responder answers in its own codec when the request accepts it; a version-2 requester
// (no accepts) and one that accepts only other codecs get the float32 rows, byte for byte what a
// node without compression sends.
TEST(EmdExchange, ResponderCompressesItsRowsOnlyForARequestThatAcceptsItsCodec) {
  const ProjectedEmbeddings rows{2, 3, FloatArray::Own({1, -2, 3, 0.5f, 5, 6})};
  // The frames of the reply `m` sends to a request accepting `accepts`.
  const auto reply_frames = [&](NodeStateMachine& m, std::vector<CompressionCodec> accepts) {
    EmbedRequest request;
    request.projection_seed = 42;
    request.layout = kLayout;
    request.weights = FloatArray::Own({1, 2, 3, 4});
    request.accepts = std::move(accepts);
    auto jobs = All<StartEmbed>(m.OnInbound(5, From("a", 77, request), {}));
    EXPECT_EQ(jobs.size(), 1u);
    auto replies = All<SendReply>(m.OnEmbedDone(jobs.at(0).job, rows, {}));
    EXPECT_EQ(replies.size(), 1u);
    return Encode(replies.at(0).message);
  };
  auto int8 = EmdMachineWithAVersion2Peer(CompressionCodec::kInt8);
  auto plain = EmdMachineWithAVersion2Peer(CompressionCodec::kNone);
  const std::vector<Frame> float32 = reply_frames(*plain, {});
  ASSERT_EQ(float32.size(), 3u);
  EXPECT_EQ(float32[2].size(), 6u * 4u);
  for (const auto& accepts :
       {std::vector<CompressionCodec>{}, std::vector<CompressionCodec>{CompressionCodec::kFp16}}) {
    const std::vector<Frame> frames = reply_frames(*int8, accepts);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[1], float32[1]) << accepts.size() << " accepted";
    EXPECT_EQ(frames[2], float32[2]) << accepts.size() << " accepted";
  }
  const std::vector<Frame> compressed =
      reply_frames(*int8, {CompressionCodec::kFp16, CompressionCodec::kInt8});
  auto decoded = Decode(compressed);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& reply = std::get<EmbedReply>(decoded->body);
  EXPECT_EQ(reply.encoding.codec, CompressionCodec::kInt8);
  EXPECT_EQ(reply.encoding.block_size, 64u);
  EXPECT_EQ(compressed[2].size(), 8u + 4u + 6u) << "header, one scale, six int8 values";
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(reply.embeddings.view()[i], rows.values.view()[i], 6.0 / 127 / 2 + 1e-6) << i;
  }
}

// `rows` points in `cols` dimensions around the direction that is 1 on every third coordinate
// from `cluster` (0, 1 or 2) and 0 elsewhere, with Gaussian noise: projected rows of a node whose
// data come from that cluster.
std::vector<float> ClusterRows(int cluster, size_t rows, size_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.6f);
  std::vector<float> values(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      values[r * cols + c] = (c % 3 == static_cast<size_t>(cluster) ? 1.0f : 0.0f) + noise(rng);
    }
  }
  return values;
}

// PROTOCOL.md, "Compressed embeddings", "What is measured": the requester measures the decoded
// rows. On rows of three clusters, the EMDs measured from int8 rows that crossed the wire stay
// within 2% of the float32 ones, and the automatic rule (similarity/emd_decision.h) decides
// every peer as it does from float32.
TEST(EmdExchange, Int8RowsGiveTheAutomaticRuleTheDecisionsOfFloat32) {
  constexpr size_t kRows = 60, kCols = 24;
  auto solver = similarity::MakeEmdSolver({});
  ASSERT_TRUE(solver.ok()) << solver.status().ToString();
  const std::vector<float> train = ClusterRows(0, kRows, kCols, 1);
  const std::vector<float> validation = ClusterRows(0, kRows, kCols, 2);
  const auto emd = [&](const std::vector<float>& rows) {
    auto d = (*solver)->Distance({train, kRows, kCols}, {rows, kRows, kCols});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : 0.0;
  };
  const double reference = emd(validation);
  std::vector<double> float32, int8;
  for (int peer = 0; peer < 6; ++peer) {
    const std::vector<float> rows = ClusterRows(peer % 3, kRows, kCols, 10 + peer);
    EmbedReply reply;
    reply.rows = kRows;
    reply.cols = kCols;
    reply.embeddings = FloatArray::Own(rows);
    reply.encoding.codec = CompressionCodec::kInt8;
    const Message arrived = OverTheWire(From("p", 1, reply));
    const FloatArray& decoded = std::get<EmbedReply>(arrived.body).embeddings;
    ASSERT_NE(std::vector<float>(decoded.view().begin(), decoded.view().end()), rows)
        << "int8 is lossy: the decoded rows differ";
    float32.push_back(emd(rows) / reference);
    int8.push_back(emd(std::vector<float>(decoded.view().begin(), decoded.view().end())) /
                   reference);
    EXPECT_NEAR(int8.back(), float32.back(), 0.02 * float32.back()) << "peer " << peer;
  }
  const double threshold32 = similarity::AutomaticThreshold(float32);
  const double threshold8 = similarity::AutomaticThreshold(int8);
  int accepted = 0;
  for (size_t peer = 0; peer < float32.size(); ++peer) {
    EXPECT_EQ(int8[peer] < threshold8, float32[peer] < threshold32) << "peer " << peer;
    accepted += float32[peer] < threshold32;
  }
  EXPECT_EQ(accepted, 2) << "the two peers of the node's own cluster";
}

TEST(EmdExchange, MutualAcceptanceMakesTheEdgeAndTheClusterSamplerUsesOnlyIt) {
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
  m->OnInbound(8, From("a", 3, EmdDecision{true, 0.04, 0.02, std::nullopt}), t0);
  m->OnInbound(9, From("b", 4, EmdDecision{false, 0.6, 0.02, std::nullopt}), t0);
  std::vector<EmdRow> rows = m->EmdRows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].mutual());
  EXPECT_FALSE(rows[1].mutual());
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 1.0);
  EXPECT_DOUBLE_EQ(m->sampler().Find("b")->probability, 0.0);
}

// A machine with peers a, b and c admitted, the exchange on with the automatic rule and the
// emd_cluster sampler.
std::unique_ptr<NodeStateMachine> AutomaticRuleMachine(TimePoint t0) {
  auto config = MachineConfig("me", kPeers, 5);
  config.emd.enabled = true;
  config.emd.cluster_sampler = true;
  config.emd.epsilon = std::nullopt;
  config.membership.nonce = config.emd.nonce = 1000;
  auto m = MakeMachine(config, topology::SamplerKind::kEmdCluster);
  StartAndAdmitAll(*m, t0);
  return m;
}

TEST(EmdExchange, AutomaticRuleDecidesOnceAllAreMeasuredAndTheColumnsMakeTheEdges) {
  TimePoint t0{};
  auto m = AutomaticRuleMachine(t0);
  std::map<std::string, uint64_t> request_of;
  for (const auto& r : All<SendRequest>(m->OnComputeDone(Outcome(0), t0))) {
    if (std::holds_alternative<EmbedRequest>(r.message.body)) request_of[r.peer] = r.request_id;
  }
  ASSERT_EQ(request_of.size(), 3u);
  EmbedReply reply;
  reply.rows = 1;
  reply.cols = 2;
  reply.embeddings = FloatArray::Own({1, 0});
  const auto measure = [&](const std::string& peer, double emd) {
    auto jobs = All<StartEmd>(m->OnReply(request_of[peer], From(peer, 1, reply), t0));
    EXPECT_EQ(jobs.size(), 1u);
    return All<SendRequest>(m->OnEmdDone(jobs[0].job, EmdMeasure{emd, 0.03}, t0));
  };
  // a is close (ratio 1.0) and b far (2.0): no decision while c is still outstanding.
  EXPECT_TRUE(measure("a", 0.03).empty());
  EXPECT_TRUE(measure("b", 0.06).empty());
  EXPECT_FALSE(m->EmdRows()[0].accepted.has_value());
  // c times out: it is asked again (a fresh request), twice, and given up after the third
  // attempt. Then a and b are decided at once, the threshold in the log gap: sqrt(1.0 * 2.0).
  std::vector<SendRequest> decisions;
  for (int attempt = 1; attempt <= kEmdAttempts; ++attempt) {
    decisions = All<SendRequest>(
        m->OnReply(request_of["c"], Result<Message>(Status::Timeout("no reply")), t0));
    if (attempt == kEmdAttempts) break;
    ASSERT_EQ(decisions.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(decisions[0].peer, "c");
    ASSERT_TRUE(std::holds_alternative<EmbedRequest>(decisions[0].message.body));
    EXPECT_NE(decisions[0].request_id, request_of["c"]);
    request_of["c"] = decisions[0].request_id;
    EXPECT_FALSE(m->EmdRows()[0].accepted.has_value());
  }
  // Each measured peer hears our decision about it and every id our row leans to accept.
  ASSERT_EQ(decisions.size(), 2u);
  for (const SendRequest& d : decisions) {
    const auto& decision = std::get<EmdDecision>(d.message.body);
    EXPECT_EQ(decision.accepted, d.peer == "a") << d.peer;
    EXPECT_EQ(decision.accepts, std::vector<std::string>{"a"}) << d.peer;
  }
  std::vector<EmdRow> rows = m->EmdRows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(*rows[0].accepted);
  EXPECT_FALSE(*rows[1].accepted);
  EXPECT_NEAR(*rows[0].threshold, std::sqrt(2.0), 1e-12);
  EXPECT_FALSE(rows[0].agreed.has_value()) << "no edge before the peer's decision";
  // a leans to us and to b; b leans to us, a and c. The columns: K_me = {me, a, b},
  // K_a = {a, me, b}, K_b = {b, a}. Both pairs agree (Jaccard 1 and 2/3 >= 1/2): b, which our
  // row rejected, is in our cluster because the peers that accept us accept it too.
  EXPECT_TRUE(All<SendRequest>(
                  m->OnInbound(8, From("a", 3, EmdDecision{true, 0.03, 0.03, {{"b", "me"}}}), t0))
                  .empty());
  rows = m->EmdRows();
  EXPECT_TRUE(*rows[0].agreed);
  EXPECT_FALSE(rows[1].agreed.has_value());
  // b also names a node outside the mesh: it is dropped (a peer cannot grow our state with
  // others), and the edges stand.
  m->OnInbound(9, From("b", 4, EmdDecision{true, 0.03, 0.03, {{"a", "c", "me", "stranger"}}}), t0);
  rows = m->EmdRows();
  EXPECT_TRUE(rows[0].mutual());
  EXPECT_TRUE(rows[1].mutual());
  EXPECT_FALSE(*rows[1].accepted);
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 0.5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("b")->probability, 0.5);
}

TEST(EmdExchange, AutomaticRuleKeepsNoEdgeWhereTheColumnsDisagree) {
  TimePoint t0{};
  auto m = AutomaticRuleMachine(t0);
  EmbedReply reply;
  reply.rows = 1;
  reply.cols = 2;
  reply.embeddings = FloatArray::Own({1, 0});
  // Our row cannot tell the peers apart (ratios 1.0, 1.1, 1.2 are all below the floor): we lean
  // to every peer.
  const std::map<std::string, double> emd_of = {{"a", 0.030}, {"b", 0.033}, {"c", 0.036}};
  for (const auto& r : All<SendRequest>(m->OnComputeDone(Outcome(0), t0))) {
    if (!std::holds_alternative<EmbedRequest>(r.message.body)) continue;
    auto jobs = All<StartEmd>(m->OnReply(r.request_id, From(r.peer, 1, reply), t0));
    ASSERT_EQ(jobs.size(), 1u);
    m->OnEmdDone(jobs[0].job, EmdMeasure{emd_of.at(r.peer), 0.03}, t0);
  }
  for (const EmdRow& row : m->EmdRows()) EXPECT_TRUE(*row.accepted) << row.peer;
  // The peers see two groups, {me, a} and {b, c}: K_me = {me, a}, K_a = {a, me},
  // K_b = {b, me, c}, K_c = {c, me, b}. Only the edge with a holds (Jaccard 1; 1/4 with b and c).
  m->OnInbound(7, From("a", 3, EmdDecision{true, 0.03, 0.03, {{"me"}}}), t0);
  m->OnInbound(8, From("b", 3, EmdDecision{false, 0.09, 0.03, {{"c"}}}), t0);
  m->OnInbound(9, From("c", 3, EmdDecision{false, 0.09, 0.03, {{"b"}}}), t0);
  std::vector<EmdRow> rows = m->EmdRows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].mutual());
  EXPECT_FALSE(rows[1].mutual());
  EXPECT_FALSE(rows[2].mutual());
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 1.0);
}

TEST(EmdExchange, FinishedNodeLingersOnlyWhileItsExchangeIsInFlight) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 0);
  config.emd.enabled = true;
  TimePoint t0{};
  auto m = AdmittedMachine(config);
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

TEST(EmdExchange, FinishedNodeWaitsForTheDecisionOfAPeerItMeasured) {
  auto config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}}, 1);
  config.emd.enabled = true;
  TimePoint t0{};
  auto m = AdmittedMachine(config);
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
  m->OnInbound(3, From("a", 9, EmdDecision{true, 0.04, 0.03, std::nullopt}), t0 + seconds(21));
  EXPECT_EQ(All<Finished>(m->OnTick(t0 + seconds(22))).size(), 1u);
}

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
  // From now on every message is encoded and decoded on its way, as over a transport.
  void ThroughTheWire() { wire_ = true; }

  // Queues `actions` of node `owner` and runs until nothing is left to do.
  void Run(const std::string& owner, Actions actions) {
    for (Action& a : actions) queue_.push_back({owner, std::move(a)});
    while (!queue_.empty()) {
      auto [from, action] = std::move(queue_.front());
      queue_.pop_front();
      Step(from, action);
    }
  }

 private:
  void Push(const std::string& owner, Actions actions) {
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
      const Message delivered = wire_ ? OverTheWire(r->message) : r->message;
      received_[r->peer].push_back(delivered);
      Push(r->peer, (*this)[r->peer].OnInbound(inbound, delivered, now_));
    } else if (auto* r = std::get_if<SendReply>(&action)) {
      auto [requester, request_id] = inbound_.at({from, r->inbound});
      const Message delivered = wire_ ? OverTheWire(r->message) : r->message;
      received_[requester].push_back(delivered);
      Push(requester, (*this)[requester].OnReply(request_id, delivered, now_));
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
  bool wire_ = false;
  std::map<std::string, std::unique_ptr<NodeStateMachine>> nodes_;
  std::map<std::string, std::vector<Message>> received_;
  std::map<std::pair<std::string, InboundId>, std::pair<std::string, uint64_t>> inbound_;
  std::deque<std::pair<std::string, Action>> queue_;
  InboundId last_inbound_ = 0;
};

// Adds nodes `ids` to `mesh`, each with the others as peers and the exchange in witness mode
// (ε = 0.05, the emd_cluster sampler), their configs changed by `adjust`, and runs them through
// round 0, which starts the exchange.
void RunWitnessedRoundZero(InMemoryMesh& mesh, const std::vector<std::string>& ids,
                           const std::function<void(StateMachineConfig&)>& adjust = {}) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<PeerAddress> peers;
    for (const std::string& other : ids) {
      if (other != ids[i]) peers.push_back({other, "tcp://127.0.0.1:" + other});
    }
    auto config = MachineConfig(ids[i], peers, 5);
    config.emd.enabled = true;
    config.emd.witness = true;
    config.emd.epsilon = 0.05;
    config.emd.cluster_sampler = true;
    config.membership.nonce = config.emd.nonce = 1000 + i;
    if (adjust) adjust(config);
    mesh.Add(MakeMachine(config, topology::SamplerKind::kEmdCluster), ids[i]);
  }
  for (const std::string& id : ids) mesh.Run(id, mesh[id].Start({}));
  for (const std::string& id : ids) mesh.Run(id, mesh[id].OnComputeDone(Outcome(0), {}));
}

TEST(EmdWitness, AThirdPeerMeasuresEveryPairAndNoSideSeesTheOthersRows) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  InMemoryMesh mesh;
  RunWitnessedRoundZero(mesh, ids);

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

// PROTOCOL.md, "Compressed embeddings", witness mode: each side sends its rows in its own codec
// to a witness that announced version 3, and float32 to one that did not (c announces version 2);
// the witness measures the decoded rows, and every pair is measured and decided as uncompressed.
TEST(EmdWitness, RowsTravelInTheSendersCodecOnlyToVersion3Witnesses) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  InMemoryMesh mesh;
  mesh.ThroughTheWire();
  RunWitnessedRoundZero(mesh, ids, [](StateMachineConfig& config) {
    config.emd.embeddings.codec = CompressionCodec::kInt8;
    if (config.id == "c") config.protocol_version = 2;
  });

  int compressed = 0;
  for (const std::string& id : ids) {
    for (const Message& m : mesh.Received(id)) {
      const auto* rows = std::get_if<WitnessRows>(&m.body);
      if (rows == nullptr) continue;
      const bool version3_pair = id != "c" && m.envelope.sender != "c";
      EXPECT_EQ(rows->encoding.codec,
                version3_pair ? CompressionCodec::kInt8 : CompressionCodec::kNone)
          << m.envelope.sender << " -> witness " << id;
      compressed += version3_pair;
      // Rows of one value per owner: int8 holds them within a rounding of the float product.
      EXPECT_NEAR(rows->embeddings.view()[0], static_cast<float>(m.envelope.sender[0]), 1e-4);
    }
  }
  EXPECT_EQ(compressed, 4) << "a and b, each side of the two measurements c does not witness";
  for (const std::string& i : ids) {
    std::vector<EmdRow> rows = mesh[i].EmdRows();
    ASSERT_EQ(rows.size(), 2u) << i;
    for (const EmdRow& row : rows) {
      ASSERT_TRUE(row.emd.has_value()) << i << "->" << row.peer;
      EXPECT_NEAR(*row.emd, std::abs(i[0] - row.peer[0]) / 100.0, 1e-5);
      EXPECT_TRUE(row.mutual()) << i << "->" << row.peer;
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

TEST(EmdWitness, WitnessRowsFromTheWrongSenderAreRefused) {
  auto config = MachineConfig("w", kPeers, 5);
  config.emd.enabled = true;
  auto m = MakeMachine(config);
  WitnessRows rows = TrainRowsOfAForB();
  // "c" claims to send a's training rows.
  auto replies = All<SendReply>(m->OnInbound(1, From("c", 1, rows), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(m->counters().rejected_inbound, 1u);
}

TEST(EmdWitness, AHeldSideExpiresWithTimeoutWhenTheOtherNeverArrives) {
  auto config = MachineConfig("w", kPeers, 5);
  config.emd.enabled = true;
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

}  // namespace
}  // namespace meshlearn::node::testing
