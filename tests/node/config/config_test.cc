// The node config: defaults, every error names file, line, key, value and what is allowed.
#include "node/config/config.h"

#include <gtest/gtest.h>

namespace meshlearn::node {
namespace {

const char* kMinimal = R"(
id = "node-1"
listen = "tcp://127.0.0.2:5555"

[[peers]]
id = "node-2"
address = "tcp://127.0.0.3:5555"

[data]
shard = "shards/client-1.shard"
)";

Status ParseError(const std::string& text) {
  auto parsed = ParseNodeConfig(text, "node.toml");
  return parsed.ok() ? Status::Ok() : parsed.status();
}

TEST(Config, MinimalConfigGetsTheDocumentedDefaults) {
  auto c = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id, "node-1");
  EXPECT_EQ(c->peers, (std::vector<PeerAddress>{{"node-2", "tcp://127.0.0.3:5555"}}));
  EXPECT_EQ(c->output_dir, "out/node-1");
  EXPECT_EQ(c->learning.metric, similarity::MetricKind::kCosWeights);
  EXPECT_EQ(c->learning.sampler, topology::SamplerKind::kDac);
  EXPECT_TRUE(c->round.sync);
  EXPECT_EQ(c->threads, 1);
  EXPECT_FALSE(c->http_port.has_value());
  EXPECT_FALSE(c->learning.merge_min_score.has_value());
}

TEST(AttackConfig, ReadsEveryKindsParametersAndRefusesTheNodeAsItsOwnTarget) {
  const std::string attacker = std::string(kMinimal) + "[attack]\n";
  auto c = ParseNodeConfig(attacker +
                               "kind = \"alie\"\nalie_z = 2.5\nstale = \"fetched\"\n"
                               "target = \"node-2\"\n",
                           "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->attack.kind, AttackKind::kAlie);
  EXPECT_EQ(c->attack.alie_z, 2.5);
  EXPECT_EQ(c->attack.stale, StaleModel::kFetched);
  EXPECT_EQ(c->attack.scale, 10);  // defaults
  EXPECT_EQ(c->attack.ipm_epsilon, 0.1);
  EXPECT_EQ(c->attack.dissensus_epsilon, 1.5);
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->attack, c->attack);
  Status self = ParseError(attacker + "kind = \"mimic\"\ntarget = \"node-1\"\n");
  EXPECT_NE(self.message().find("[attack] target"), std::string::npos) << self.ToString();
  Status unknown = ParseError(attacker + "kind = \"gradient_ascent\"\n");
  EXPECT_NE(unknown.message().find("free_rider"), std::string::npos) << unknown.ToString();
}

TEST(RobustConfig, ReadsTheRuleAndItsParametersWithAutoTauByDefault) {
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->learning.robust, training::RobustOptions{});  // none, adaptive τ
  auto c = ParseNodeConfig(std::string(kMinimal) +
                               "[learning]\nrobust = \"multi_krum\"\nkrum_f = 2\nkrum_m = 3\n"
                               "clip_tau = 0.5\ntrim = 2\ngate_gamma = 0.25\n",
                           "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const training::RobustOptions o = c->learning.robust;
  EXPECT_EQ(o.kind, training::RobustKind::kMultiKrum);
  EXPECT_EQ(o.krum_f, 2);
  EXPECT_EQ(o.krum_m, 3);
  EXPECT_EQ(o.clip_tau, 0.5);
  EXPECT_EQ(o.trim, 2);
  EXPECT_EQ(o.gate_gamma, 0.25);
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->learning.robust, o);
  Status bad = ParseError(std::string(kMinimal) + "[learning]\nrobust = \"geomed\"\n");
  EXPECT_NE(bad.message().find("trimmed_mean"), std::string::npos) << bad.ToString();
}

TEST(StalenessConfig, PolynomialByDefaultAndTheFunctionAndItsParametersAsGiven) {
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->learning.staleness,
            (training::StalenessOptions{training::StalenessKind::kPolynomial, 0.5, 4}));
  auto c = ParseNodeConfig(std::string(kMinimal) +
                               "[learning]\nstaleness = \"hinge\"\nstaleness_a = 10\n"
                               "staleness_b = 2\n",
                           "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const training::StalenessOptions o{training::StalenessKind::kHinge, 10, 2};
  EXPECT_EQ(c->learning.staleness, o);
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->learning.staleness, o);
  Status bad = ParseError(std::string(kMinimal) + "[learning]\nstaleness = \"exponential\"\n");
  EXPECT_NE(bad.message().find("polynomial"), std::string::npos) << bad.ToString();
  Status negative = ParseError(std::string(kMinimal) + "[learning]\nstaleness_a = -1\n");
  EXPECT_NE(negative.message().find("staleness_a"), std::string::npos) << negative.ToString();
}

TEST(Config, RenderedConfigParsesBackEqual) {
  auto c = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(c.ok());
  c->training.learning_rate = 0.003;
  c->learning.merge_min_score = 0.25;
  c->http_port = 0;
  c->learning.clusters = {{"node-1", 0}, {"node-2", 1}};
  c->learning.sampler = topology::SamplerKind::kOracle;
  c->emd.witness = true;
  c->clustering.cluster_after = 12;
  c->clustering.algorithm = similarity::ClusterAlgorithm::kLouvain;
  c->clustering.distance_threshold = 0.85;
  c->clustering.linkage = similarity::Linkage::kSingle;
  c->signature.k = 3;
  c->signature.threshold = 0.23;
  c->signature.max_samples = 600;
  c->advertise = "tcp://box-1:5555";
  c->mesh_size = 9;
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << RenderNodeConfig(*c);
  EXPECT_EQ(RenderNodeConfig(*again), RenderNodeConfig(*c));
  EXPECT_EQ(again->training.learning_rate, 0.003);
  EXPECT_EQ(again->learning.merge_min_score, 0.25);
  EXPECT_EQ(again->learning.clusters, c->learning.clusters);
  EXPECT_TRUE(again->emd.witness);
  EXPECT_EQ(again->clustering.cluster_after, 12);
  EXPECT_EQ(again->clustering.algorithm, similarity::ClusterAlgorithm::kLouvain);
  EXPECT_EQ(again->clustering.distance_threshold, 0.85);
  EXPECT_EQ(again->clustering.linkage, similarity::Linkage::kSingle);
  EXPECT_EQ(again->signature.k, 3);
  EXPECT_EQ(again->signature.threshold, 0.23);
  EXPECT_EQ(again->signature.max_samples, 600);
  EXPECT_EQ(again->advertise, "tcp://box-1:5555");
  EXPECT_EQ(again->mesh_size, 9);
}

// Every section is read and written by one description: a config whose every section differs
// from the defaults reads back equal, and so does one with only defaults.
TEST(Config, EverySectionRendersAndReadsBackEqual) {
  auto defaults = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  auto plain = ParseNodeConfig(RenderNodeConfig(*defaults), "rendered.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(*plain, *defaults);

  NodeConfig c = *defaults;
  c.log_level = spdlog::level::debug;
  c.seed = 77;
  c.http_bind = "0.0.0.0";
  c.peers.push_back({"node-3", "tcp://127.0.0.4:5555"});
  c.model = {training::Architecture::kCnn, 64, "model.pt"};
  c.training.optimizer = training::OptimizerKind::kSgd;
  c.training.weight_decay = 1e-4;
  c.training.patience = 7;
  c.learning.tau = 12.5;
  c.learning.tau_schedule = topology::TauSchedule::kSigmoid;
  c.learning.two_hop = topology::TwoHopRule::kSmallest;
  c.learning.two_hop_row = topology::TwoHopRow::kDirect;
  c.learning.two_hop_cap = topology::TwoHopCap::kOff;
  c.learning.explore_rounds = 1;
  c.learning.aggregation = training::AggregationKind::kFedSim;
  c.learning.sampler = topology::SamplerKind::kRandom;
  c.learning.graph = topology::GraphKind::kEdges;
  c.learning.edges = {{"node-1", "node-3"}, {"node-3", "node-7"}};
  c.emd = {true, std::nullopt, similarity::EmdSolverKind::kSinkhorn, 100, 0.5, 3, 2, true};
  c.attack.kind = AttackKind::kNoise;
  c.attack.allies = {"node-3", "node-1"};
  c.attack.sybils = 7;
  c.attack.sybil_address = SybilAddress::kNowhere;
  c.clustering.recluster_every = 0;
  c.signature.max_samples = 64;
  c.round = {false, 2.5, 5, 0.25, 0.125, 4096, 3, RestingRule::kFetch, 9};
  c.compression = {CompressionCodec::kFp16, 200, 0.05, CompressionCodec::kFp16, 8, 0.25,
                   CompressionCodec::kInt8};
  c.privacy = {true, 1.1, std::nullopt, 1e-6, 0.5, 8.0, true};
  auto again = ParseNodeConfig(RenderNodeConfig(c), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << RenderNodeConfig(c);
  EXPECT_EQ(*again, c) << RenderNodeConfig(c);
  EXPECT_EQ(RenderNodeConfig(*again), RenderNodeConfig(c));
}

// The state machine's parts get their settings from the sections that own them: one deadline
// for every request, the exchanges' roles from the metric and the sampler.
TEST(Config, EachPartOfTheStateMachineIsSetFromItsSections) {
  auto c = ParseNodeConfig(std::string(kMinimal) + R"(
[training]
rounds = 12
[learning]
metric = "emd"
sampler = "emd_cluster"
peers_per_round = 3
[emd]
enabled = true
epsilon = 0.5
max_samples = 64
witness = true
[signature]
threshold = 0.7
[round]
sync = false
round_deadline_s = 2.5
linger_s = 0.5
min_round_s = 0.25
)",
                           "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Clock::duration deadline = std::chrono::milliseconds(2500);

  RoundConfig rounds = c->round.Driver(c->learning, c->training);
  EXPECT_EQ(rounds.peers_per_round, 3);
  EXPECT_FALSE(rounds.sync);
  EXPECT_FALSE(rounds.fetch_updates);  // emd_cluster runs no clustering policy
  EXPECT_EQ(rounds.round_deadline, deadline);
  EXPECT_EQ(rounds.rounds, 12);
  EXPECT_EQ(rounds.linger, std::chrono::milliseconds(500));
  EXPECT_EQ(rounds.min_round, std::chrono::milliseconds(250));
  EXPECT_EQ(rounds.resting, RestingRule::kSilent);  // the default

  ParamLayout layout;
  EmdExchangeConfig emd = c->emd.Exchange(c->learning, c->round, layout, 99);
  EXPECT_TRUE(emd.enabled);
  EXPECT_EQ(emd.epsilon, 0.5);
  EXPECT_EQ(emd.max_samples, 64u);
  EXPECT_TRUE(emd.witness);
  EXPECT_TRUE(emd.metric);
  EXPECT_TRUE(emd.cluster_sampler);
  EXPECT_EQ(emd.nonce, 99u);
  EXPECT_EQ(emd.round_deadline, deadline);

  SignatureConfig signatures = c->signature.Exchange(c->learning, c->round, {});
  EXPECT_FALSE(signatures.enabled);  // neither metric "centroid" nor sampler "centroid_cluster"
  EXPECT_EQ(signatures.threshold, 0.7);
  EXPECT_EQ(signatures.request_deadline, deadline);

  EXPECT_EQ(c->round.Serving(layout, 50).hold_limit, deadline);
  topology::SamplerConfig sampler = c->learning.Sampler(c->id);
  EXPECT_EQ(sampler.sampler, topology::SamplerKind::kEmdCluster);
  EXPECT_EQ(sampler.self, "node-1");
}

TEST(Config, AMeshSizeLetsANodeStartWithoutPeersAndAdvertiseIsAnEndpoint) {
  const char* alone = "id = \"a\"\nlisten = \"tcp://0.0.0.0:1\"\n[data]\nshard = \"x\"\n";
  EXPECT_NE(ParseError(alone).message().find("or set 'mesh_size'"), std::string::npos);
  auto waiting = ParseNodeConfig(std::string("mesh_size = 4\n") + alone, "node.toml");
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  EXPECT_TRUE(waiting->peers.empty());
  EXPECT_TRUE(waiting->advertise.empty()) << "default: the bound endpoint";
  EXPECT_NE(ParseError(std::string("advertise = \"box-1\"\n") + kMinimal)
                .message()
                .find("'advertise' = 'box-1' must look like"),
            std::string::npos);
  EXPECT_NE(ParseError(std::string("advertise = \"tcp://box-1:*\"\n") + kMinimal)
                .message()
                .find("'advertise' = 'tcp://box-1:*'"),
            std::string::npos);
}

TEST(Config, EmdEpsilonIsAutoByDefaultOrANumber) {
  auto c = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->emd.epsilon.has_value());  // "auto"
  auto fixed = ParseNodeConfig(std::string(kMinimal) + "\n[emd]\nepsilon = 0.009\n", "n.toml");
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->emd.epsilon, 0.009);
  auto again = ParseNodeConfig(RenderNodeConfig(*fixed), "rendered.toml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->emd.epsilon, 0.009);
  auto automatic =
      ParseNodeConfig(std::string(kMinimal) + "\n[emd]\nepsilon = \"auto\"\n", "n.toml");
  ASSERT_TRUE(automatic.ok());
  EXPECT_FALSE(automatic->emd.epsilon.has_value());
  auto rendered = ParseNodeConfig(RenderNodeConfig(*automatic), "rendered.toml");
  ASSERT_TRUE(rendered.ok());
  EXPECT_FALSE(rendered->emd.epsilon.has_value());
  for (const char* bad : {"\"sometimes\"", "11", "true"}) {
    Status s = ParseError(std::string(kMinimal) + "\n[emd]\nepsilon = " + bad + "\n");
    EXPECT_NE(s.message().find("must be \"auto\" or a number in [-10, 10]"), std::string::npos)
        << s.ToString();
  }
}

TEST(Config, UnknownKeyIsRejectedWithItsNameAndLine) {
  Status s = ParseError(std::string(kMinimal) + "\n[training]\nlearning_rat = 0.1\n");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown key 'training.learning_rat'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("node.toml:13"), std::string::npos) << s.message();
}

TEST(Config, BadValuesNameKeyValueAndWhatIsAllowed) {
  Status metric = ParseError(std::string(kMinimal) + "[learning]\nmetric = \"cosine\"\n");
  EXPECT_NE(metric.message().find("'learning.metric' = 'cosine'"), std::string::npos)
      << metric.message();
  EXPECT_NE(metric.message().find("\"cos_weights\""), std::string::npos);

  Status lr = ParseError(std::string(kMinimal) + "[training]\nlearning_rate = -1\n");
  EXPECT_NE(lr.message().find("'training.learning_rate' = -1 must be in (0, 10]"),
            std::string::npos)
      << lr.message();

  Status algorithm = ParseError(std::string(kMinimal) + "[clustering]\nalgorithm = \"kmeans\"\n");
  EXPECT_NE(algorithm.message().find("'clustering.algorithm' = 'kmeans'"), std::string::npos)
      << algorithm.message();
  EXPECT_NE(algorithm.message().find("\"agglomerative\""), std::string::npos);

  Status k = ParseError(std::string(kMinimal) + "[signature]\nk = 0\n");
  EXPECT_NE(k.message().find("'signature.k' = 0 must be in [1, 1024]"), std::string::npos)
      << k.message();
  Status threshold = ParseError(std::string(kMinimal) + "[signature]\nthreshold = 0\n");
  EXPECT_NE(threshold.message().find("'signature.threshold' = 0"), std::string::npos)
      << threshold.message();

  Status type = ParseError(std::string(kMinimal) + "[round]\nsync = \"yes\"\n");
  EXPECT_NE(type.message().find("must be true or false"), std::string::npos) << type.message();
}

// [relay]: unwritten when unset, read and written back, and the rules between its keys named.
TEST(Config, RelayServesOrIsUsedAndSaysWhatIsNotAllowed) {
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(RenderNodeConfig(*plain).find("[relay]"), std::string::npos)
      << "unwritten when unset: configs render as before the section existed";

  auto relayed = ParseNodeConfig(
      std::string(kMinimal) + "[relay]\nvia = \"tcp://203.0.113.5:6000\"\n", "node.toml");
  ASSERT_TRUE(relayed.ok()) << relayed.status().ToString();
  EXPECT_EQ(relayed->relay.via, "tcp://203.0.113.5:6000");
  EXPECT_EQ(relayed->relay.max_clients, 16);
  auto again = ParseNodeConfig(RenderNodeConfig(*relayed), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *relayed);

  // A Z85 key may hold '{' and '}': data, not a template's placeholder.
  auto keyed =
      ParseNodeConfig(std::string(kMinimal) +
                          "[relay]\nvia = \"tcp://203.0.113.5:6000\"\n"
                          "via_public_key = \"<j*+#iWAU--ma{iaR*v!dtJ@yW9&{1ae}Wi!cbHU\"\n",
                      "node.toml");
  ASSERT_TRUE(keyed.ok()) << keyed.status().ToString();
  EXPECT_EQ(keyed->relay.via_public_key, "<j*+#iWAU--ma{iaR*v!dtJ@yW9&{1ae}Wi!cbHU");

  auto relay = ParseNodeConfig(
      std::string(kMinimal) + "[relay]\nserve_at = \"tcp://0.0.0.0:6000\"\nmax_clients = 4\n",
      "node.toml");
  ASSERT_TRUE(relay.ok()) << relay.status().ToString();
  EXPECT_EQ(relay->relay.max_clients, 4);

  Status both =
      ParseError(std::string(kMinimal) +
                 "[relay]\nserve_at = \"tcp://0.0.0.0:6000\"\nvia = \"tcp://10.0.0.1:6000\"\n");
  EXPECT_NE(both.message().find("a node behind a relay ('via') cannot serve as one ('serve_at')"),
            std::string::npos)
      << both.message();
  Status bad = ParseError(std::string(kMinimal) + "[relay]\nvia = \"tcp://300.1.2.3:6000\"\n");
  EXPECT_NE(bad.message().find("'relay.via'"), std::string::npos) << bad.message();
  Status zero = ParseError(std::string(kMinimal) + "[relay]\nmax_circuits = 0\n");
  EXPECT_NE(zero.message().find("'relay.max_circuits' = 0 must be in [1, 100000]"),
            std::string::npos)
      << zero.message();
}

// [compression] (a scenario's [node.compression]): the codec the node serves its model in,
// read, written back and handed to the model server; what is not allowed is named.
TEST(Config, CompressionChoosesTheServedCodecAndTopKSettings) {
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->compression.codec, CompressionCodec::kNone);
  EXPECT_EQ(RenderNodeConfig(*plain).find("[compression]"), std::string::npos)
      << "unwritten when unset: configs render as before the section existed";

  auto int8 = ParseNodeConfig(
      std::string(kMinimal) + "[compression]\ncodec = \"int8\"\nblock_size = 64\n", "node.toml");
  ASSERT_TRUE(int8.ok()) << int8.status().ToString();
  EXPECT_EQ(int8->compression.codec, CompressionCodec::kInt8);
  EXPECT_EQ(int8->compression.Settings().block_size, 64u);
  auto again = ParseNodeConfig(RenderNodeConfig(*int8), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *int8);

  Status codec = ParseError(std::string(kMinimal) + "[compression]\ncodec = \"zip\"\n");
  EXPECT_NE(codec.message().find("'compression.codec' = 'zip'"), std::string::npos)
      << codec.message();
  EXPECT_NE(codec.message().find("\"int8\""), std::string::npos) << codec.message();
  Status block = ParseError(std::string(kMinimal) + "[compression]\nblock_size = 32\n");
  EXPECT_NE(block.message().find("'compression.block_size' = 32 must be in [64, 256]"),
            std::string::npos)
      << block.message();
  auto topk = ParseNodeConfig(std::string(kMinimal) +
                                  "[compression]\ncodec = \"topk\"\ntopk_fraction = 0.05\n"
                                  "topk_values = \"fp16\"\npeer_estimates = 8\n"
                                  "consensus_step = 0.75\n",
                              "node.toml");
  ASSERT_TRUE(topk.ok()) << topk.status().ToString();
  EXPECT_EQ(topk->compression.Settings().codec, CompressionCodec::kTopK);
  EXPECT_EQ(topk->compression.Settings().topk_fraction, 0.05);
  EXPECT_EQ(topk->compression.Settings().topk_values, CompressionCodec::kFp16);
  EXPECT_EQ(topk->compression.peer_estimates, 8);
  EXPECT_EQ(topk->compression.consensus_step, 0.75);
  auto topk_again = ParseNodeConfig(RenderNodeConfig(*topk), "rendered.toml");
  ASSERT_TRUE(topk_again.ok()) << topk_again.status().ToString();
  EXPECT_EQ(*topk_again, *topk);
  Status fraction = ParseError(std::string(kMinimal) + "[compression]\ntopk_fraction = 0\n");
  EXPECT_EQ(fraction.code(), ErrorCode::kInvalidArgument);
  Status estimates = ParseError(std::string(kMinimal) + "[compression]\npeer_estimates = -1\n");
  EXPECT_NE(estimates.message().find("'compression.peer_estimates' = -1"), std::string::npos)
      << estimates.message();
  Status step = ParseError(std::string(kMinimal) + "[compression]\nconsensus_step = 1.5\n");
  EXPECT_NE(step.message().find("'compression.consensus_step' = 1.5 must be in [0, 1]"),
            std::string::npos)
      << step.message();
  Status values = ParseError(std::string(kMinimal) + "[compression]\ntopk_values = \"none\"\n");
  EXPECT_NE(values.message().find("allowed: fp16, int8"), std::string::npos) << values.message();
}

// [compression] embeddings: the codec of the node's EMD rows, apart from the model's codec, with
// the same block size; top-k and a node announcing version 2 are refused with what is allowed.
TEST(Config, CompressionEmbeddingsChoosesTheCodecOfTheEmdRowsAlone) {
  auto int8 = ParseNodeConfig(
      std::string(kMinimal) + "[compression]\nembeddings = \"int8\"\nblock_size = 64\n",
      "node.toml");
  ASSERT_TRUE(int8.ok()) << int8.status().ToString();
  EXPECT_EQ(int8->compression.codec, CompressionCodec::kNone) << "models still travel float32";
  EXPECT_EQ(int8->compression.Settings().codec, CompressionCodec::kNone);
  EXPECT_EQ(int8->compression.EmbeddingSettings().codec, CompressionCodec::kInt8);
  EXPECT_EQ(int8->compression.EmbeddingSettings().block_size, 64u);
  auto again = ParseNodeConfig(RenderNodeConfig(*int8), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *int8);

  Status topk = ParseError(std::string(kMinimal) + "[compression]\nembeddings = \"topk\"\n");
  EXPECT_EQ(topk.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(topk.message().find("embeddings = \"topk\" is not allowed (allowed: none, fp16, int8)"),
            std::string::npos)
      << topk.message();
  Status v2 =
      ParseError(std::string(kMinimal) +
                 "[round]\nmax_protocol_version = 2\n[compression]\nembeddings = \"fp16\"\n");
  EXPECT_EQ(v2.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(v2.message().find("embeddings = \"fp16\" needs protocol version 3"), std::string::npos)
      << v2.message();
}

// [round] max_protocol_version (interoperability tests): the version the node announces; a
// compressed codec needs version 3.
TEST(Config, MaxProtocolVersionIsAnnouncedAndCompressionNeedsVersion3) {
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->round.ProtocolVersion(), kProtocolVersion);
  auto v2 =
      ParseNodeConfig(std::string(kMinimal) + "[round]\nmax_protocol_version = 2\n", "node.toml");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->round.ProtocolVersion(), 2);
  auto again = ParseNodeConfig(RenderNodeConfig(*v2), "rendered.toml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->round.ProtocolVersion(), 2);
  Status future = ParseError(std::string(kMinimal) + "[round]\nmax_protocol_version = 4\n");
  EXPECT_NE(future.message().find("'round.max_protocol_version' = 4 must be in [0, 3]"),
            std::string::npos)
      << future.message();
  Status both = ParseError(std::string(kMinimal) +
                           "[round]\nmax_protocol_version = 2\n[compression]\ncodec = \"fp16\"\n");
  EXPECT_EQ(both.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(both.message().find("needs protocol version 3"), std::string::npos) << both.message();
}

TEST(Config, NonPositiveMetricWithDacNeedsUnscoredZero) {
  std::string dac =
      std::string(kMinimal) + "[learning]\nmetric = \"centroid\"\nsampler = \"dac\"\n";
  Status s = ParseError(dac);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unscored = \"zero\""), std::string::npos) << s.message();
  EXPECT_TRUE(ParseError(dac + "unscored = \"zero\"\nnormalize = \"minmax\"\n").ok());
  EXPECT_TRUE(ParseError(std::string(kMinimal) +
                         "[learning]\nmetric = \"centroid\"\nsampler = \"centroid_cluster\"\n")
                  .ok());
}

TEST(Config, PrivacyTakesANoiseMultiplierOrATargetEpsilonAndRendersBack) {
  auto off = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->privacy.enabled);
  const std::string with_target =
      std::string(kMinimal) +
      "[privacy]\nenabled = true\ntarget_epsilon = 3\ndelta = 1e-6\nmax_grad_norm = 0.5\n"
      "max_epsilon = 2.5\n";
  auto c = ParseNodeConfig(with_target, "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->privacy.enabled);
  EXPECT_EQ(c->privacy.target_epsilon, 3.0);
  EXPECT_FALSE(c->privacy.noise_multiplier.has_value());
  EXPECT_EQ(c->privacy.delta, 1e-6);
  EXPECT_EQ(c->privacy.max_grad_norm, 0.5);
  EXPECT_EQ(c->privacy.max_epsilon, 2.5);
  auto again = ParseNodeConfig(RenderNodeConfig(*c), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->privacy, c->privacy);
}

TEST(Config, PrivacyNeedsExactlyOneNoiseSettingAndSaneValues) {
  const std::string base = std::string(kMinimal) + "[privacy]\nenabled = true\n";
  Status neither = ParseError(base);
  EXPECT_NE(neither.message().find("exactly one of 'noise_multiplier'"), std::string::npos)
      << neither.message();
  EXPECT_FALSE(ParseError(base + "noise_multiplier = 1\ntarget_epsilon = 3\n").ok());
  EXPECT_TRUE(ParseError(base + "noise_multiplier = 1.1\n").ok());
  Status zero = ParseError(base + "noise_multiplier = 0\n");
  EXPECT_NE(zero.message().find("noise_multiplier"), std::string::npos) << zero.message();
  EXPECT_NE(zero.message().find("(0, 10000]"), std::string::npos) << zero.message();
  EXPECT_FALSE(ParseError(base + "noise_multiplier = 1\ndelta = 0\n").ok());
  EXPECT_FALSE(ParseError(base + "noise_multiplier = 1\nmax_grad_norm = -1\n").ok());
  Status script =
      ParseError(std::string(kMinimal) +
                 "[model]\narchitecture = \"torchscript\"\ntorchscript_path = \"m.pt\"\n"
                 "[privacy]\nenabled = true\nnoise_multiplier = 1\n");
  EXPECT_NE(script.message().find("per-sample gradients"), std::string::npos) << script.message();
}

// The plug-in points (docs/plugins.md): each "torchscript" choice needs its file's key; a path
// without its choice is kept (a method may choose a built-in over a scenario's path); the keys
// are written only when set, so a default node.toml is unchanged.
TEST(Config, EachTorchScriptPlugInNeedsItsFileAndItsKeyIsWrittenOnlyWhenSet) {
  const std::pair<std::string, std::string> choices[] = {
      {"[learning]\nmetric = \"torchscript\"\n", "'learning.metric_path'"},
      {"[learning]\nrobust = \"torchscript\"\n", "'learning.merge_path'"},
      {"[attack]\nkind = \"torchscript\"\n", "'attack.attack_path'"}};
  for (const auto& [choice, key] : choices) {
    Status refused = ParseError(std::string(kMinimal) + choice);
    EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument) << choice;
    EXPECT_NE(refused.message().find("= \"torchscript\" needs " + key), std::string::npos)
        << refused.message();
  }
  auto chosen = ParseNodeConfig(std::string(kMinimal) +
                                    "[learning]\nmetric = \"torchscript\"\nmetric_path = \"m.pt\"\n"
                                    "robust = \"torchscript\"\nmerge_path = \"r.pt\"\n"
                                    "[attack]\nkind = \"torchscript\"\nattack_path = \"a.pt\"\n",
                                "node.toml");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->learning.metric, similarity::MetricKind::kTorchScript);
  EXPECT_EQ(chosen->learning.robust.kind, training::RobustKind::kTorchScript);
  EXPECT_EQ(chosen->attack.kind, AttackKind::kTorchScript);
  auto again = ParseNodeConfig(RenderNodeConfig(*chosen), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->learning.metric_path, "m.pt");
  EXPECT_EQ(again->learning.merge_path, "r.pt");
  EXPECT_EQ(again->attack.attack_path, "a.pt");
  EXPECT_TRUE(ParseError(std::string(kMinimal) + "[learning]\nmetric_path = \"m.pt\"\n").ok());
  auto plain = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(plain.ok());
  const std::string rendered = RenderNodeConfig(*plain);
  for (const char* key : {"metric_path", "merge_path", "attack_path"}) {
    EXPECT_EQ(rendered.find(key), std::string::npos) << key << " written though not set";
  }
}

TEST(Config, PrivacyWithEmdOrFltSignaturesIsRefusedWithoutTheOverride) {
  const std::string privacy = "[privacy]\nenabled = true\nnoise_multiplier = 1\n";
  const std::string emd = std::string(kMinimal) + "[emd]\nenabled = true\n" + privacy;
  Status refused = ParseError(emd);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("[emd] enabled = true sends embeddings"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("allow_data_exchanges = true"), std::string::npos);
  const std::string flt = std::string(kMinimal) +
                          "[learning]\nmetric = \"centroid\"\nsampler = \"centroid_cluster\"\n" +
                          privacy;
  Status flt_refused = ParseError(flt);
  EXPECT_NE(flt_refused.message().find("FLT signatures"), std::string::npos)
      << flt_refused.message();
  // With the override the config loads, and the rendered node.toml records it.
  auto allowed = ParseNodeConfig(emd + "allow_data_exchanges = true\n", "node.toml");
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_NE(RenderNodeConfig(*allowed).find("allow_data_exchanges = true"), std::string::npos);
  EXPECT_TRUE(ParseError(flt + "allow_data_exchanges = true\n").ok());
  // Without DP the exchanges need no override.
  EXPECT_TRUE(ParseError(std::string(kMinimal) + "[emd]\nenabled = true\n").ok());
}

TEST(Config, StructuralMistakesAreExplained) {
  EXPECT_NE(ParseError("id = \"a\"\nlisten = \"tcp://127.0.0.1:1\"\n[data]\nshard = \"x\"\n")
                .message()
                .find("at least one [[peers]]"),
            std::string::npos);
  EXPECT_NE(ParseError(R"(id = "a"
listen = "127.0.0.1:1"
[[peers]]
id = "b"
address = "tcp://127.0.0.1:2"
[data]
shard = "x"
)")
                .message()
                .find("tcp://<ip>:<port>"),
            std::string::npos);
  EXPECT_NE(ParseError("id = \"a\"\nlisten = \n").message().find("TOML syntax error"),
            std::string::npos);
  EXPECT_NE(ParseError(std::string(kMinimal) + "[learning]\nsampler = \"oracle\"\n")
                .message()
                .find("[learning.clusters]"),
            std::string::npos);
  EXPECT_NE(ParseError(R"(id = "a"
listen = "tcp://127.0.0.1:1"
[[peers]]
id = "a"
address = "tcp://127.0.0.1:2"
[data]
shard = "x"
)")
                .message()
                .find("lists the node itself"),
            std::string::npos);
}

// Issue 17, item 6: node ids follow the protocol's id rule already in the config, wherever an id
// is written.
TEST(Config, NodeIdsOutsideTheSafeAlphabetAreRefusedWithTheirLine) {
  std::string config = kMinimal;
  Status own = ParseError(std::string(config).replace(config.find("node-1"), 6, "node 1"));
  EXPECT_EQ(own.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(own.message().find("node.toml:2: 'id' = 'node 1' is not a node id: 1 to 64 "
                               "characters from A-Z a-z 0-9 . _ -"),
            std::string::npos)
      << own.message();
  Status peer = ParseError(std::string(config).replace(config.find("node-2"), 6, "../etc"));
  EXPECT_NE(peer.message().find("node.toml:6: 'peers[0].id' = '../etc' is not a node id"),
            std::string::npos)
      << peer.message();
  Status cluster = ParseError(config + "[learning.clusters]\n\"n\\u00e9\" = 1\n");
  EXPECT_EQ(cluster.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(cluster.message().find("is not a node id"), std::string::npos) << cluster.message();
  EXPECT_TRUE(ParseError(config + "[learning.clusters]\n\"node-2\" = 1\n").ok());
  for (const char* bad :
       {"\"\"", "\"-x\"", "\"x\\u0000\"",
        "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""}) {
    std::string text = config;
    text.replace(text.find("\"node-1\""), 8, bad);
    EXPECT_EQ(ParseError(text).code(), ErrorCode::kInvalidArgument) << bad;
  }
}

// Issue 17, item 12: an address that is no address is refused at load, naming why.
TEST(Config, AnInvalidPeerAddressIsRefusedWithTheCause) {
  std::string config = kMinimal;
  auto with_address = [&](const std::string& address) {
    return ParseError(
        std::string(config).replace(config.find("tcp://127.0.0.3:5555"), 20, address));
  };
  Status ip = with_address("tcp://300.1.2.3:5555");
  EXPECT_NE(ip.message().find("'300.1.2.3' is not an IPv4 address"), std::string::npos)
      << ip.message();
  EXPECT_NE(with_address("tcp://127.0.0.3:0").message().find("port '0' must be a number from 1"),
            std::string::npos);
  EXPECT_NE(with_address("tcp://[::1x]:5").message().find("is not an IPv6 address"),
            std::string::npos);
  EXPECT_NE(with_address("tcp://bad_host:5").message().find("neither an IP address nor a host"),
            std::string::npos);
  EXPECT_TRUE(with_address("tcp://machine-b.lan:5555").ok());
  EXPECT_TRUE(with_address("tcp://[::1]:5555").ok());
}

// [round] view_size (issue 59): 0, full membership, by default, and a config that leaves the view
// keys at their defaults renders without them (as before they existed); set, they read back.
TEST(Config, FullMembershipIsTheDefaultAndAViewSizeReadsBack) {
  auto c = ParseNodeConfig(kMinimal, "node.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->round.view_size, 0);
  EXPECT_EQ(c->round.shuffle_length, 8);
  EXPECT_EQ(RenderNodeConfig(*c).find("view_size"), std::string::npos);
  EXPECT_EQ(RenderNodeConfig(*c).find("shuffle_length"), std::string::npos);
  auto view = ParseNodeConfig(
      std::string(kMinimal) + "[round]\nview_size = 64\nshuffle_length = 4\n", "node.toml");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  auto again = ParseNodeConfig(RenderNodeConfig(*view), "rendered.toml");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->round.view_size, 64);
  EXPECT_EQ(again->round.shuffle_length, 4);
  Status big = ParseError(std::string(kMinimal) + "[round]\nview_size = 5000\n");
  EXPECT_NE(big.message().find("'round.view_size' = 5000 must be in [0, 4096]"), std::string::npos)
      << big.message();
  Status one = ParseError(std::string(kMinimal) + "[round]\nshuffle_length = 1\n");
  EXPECT_NE(one.message().find("'round.shuffle_length' = 1 must be in [2, 64]"), std::string::npos)
      << one.message();
}

TEST(Config, MissingFileIsNotFound) {
  auto c = LoadNodeConfig("/nonexistent/node.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/node.toml"), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::node
