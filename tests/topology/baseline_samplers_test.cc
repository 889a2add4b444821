// The baselines (random, oracle, local) and the sampler factory table.

#include "topology/baseline_samplers.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/dac_sampler.h"
#include "topology/sampler_factory.h"

namespace meshlearn::topology {
namespace {

// The config of sampler `name` for node "a", with every node's cluster.
SamplerConfig Config(std::string_view name) {
  SamplerConfig config;
  std::optional<SamplerKind> kind = ValueNamed(SamplerKindNames(), name);
  EXPECT_TRUE(kind.has_value()) << name;
  config.sampler = kind.value_or(SamplerKind::kDac);
  config.self = "a";
  config.clusters = {{"a", 0}, {"b", 1}, {"c", 0}, {"d", 0}, {"e", 1}};
  return config;
}

std::unique_ptr<PeerSampler> Make(const SamplerConfig& config,
                                  const std::vector<std::string>& peers) {
  auto sampler = MakePeerSampler(config);
  EXPECT_TRUE(sampler.ok()) << sampler.status().ToString();
  for (const std::string& peer : peers) EXPECT_TRUE((*sampler)->AddPeer(peer).ok());
  return std::move(sampler).value();
}

TEST(SamplerFactoryTest, BuildsEverySamplerOfTheTableUnderItsName) {
  EXPECT_EQ(NamesOf(SamplerKindNames()),
            (std::vector<std::string>{"dac", "random", "oracle", "local", "emd_cluster", "louvain",
                                      "temperature", "centroid_cluster"}));
  for (const NamedValue<SamplerKind>& entry : SamplerKindNames()) {
    auto sampler = MakePeerSampler(Config(entry.name));
    ASSERT_TRUE(sampler.ok()) << entry.name;
    EXPECT_EQ((*sampler)->Name(), entry.name);
    EXPECT_EQ((*sampler)->self(), "a");
  }
}

TEST(SamplerFactoryTest, NamesTheDacOptionsAndPassesThemToTheSampler) {
  EXPECT_EQ(NamesOf(UnscoredRuleNames()), (std::vector<std::string>{"exclude", "zero"}));
  EXPECT_EQ(NamesOf(TauScheduleNames()), (std::vector<std::string>{"constant", "sigmoid"}));
  EXPECT_EQ(NamesOf(ScoreNormalizationNames()), (std::vector<std::string>{"none", "minmax"}));
  EXPECT_EQ(NamesOf(TwoHopRuleNames()), (std::vector<std::string>{"largest", "smallest", "off"}));
  EXPECT_EQ(NamesOf(TwoHopCapNames()), (std::vector<std::string>{"witness", "off"}));
  SamplerConfig config = Config("dac");
  config.dac = {140, UnscoredRule::kZero, TauSchedule::kSigmoid, ScoreNormalization::kMinMax,
                TwoHopRule::kSmallest};
  auto sampler = MakePeerSampler(config);
  ASSERT_TRUE(sampler.ok());
  const DacOptions& options = dynamic_cast<const DacSampler&>(**sampler).options();
  EXPECT_EQ(options.tau, 140);
  EXPECT_EQ(options.unscored, UnscoredRule::kZero);
  EXPECT_EQ(options.tau_schedule, TauSchedule::kSigmoid);
  EXPECT_EQ(options.normalize, ScoreNormalization::kMinMax);
  EXPECT_EQ(options.two_hop, TwoHopRule::kSmallest);
}

TEST(SamplerFactoryTest, RejectsUnknownNamesAndBadOptions) {
  EXPECT_FALSE(ValueNamed(SamplerKindNames(), "louvian").has_value());
  EXPECT_FALSE(ValueNamed(TwoHopRuleNames(), "nonsense").has_value());
  SamplerConfig negative = Config("dac");
  negative.dac.tau = -1;
  EXPECT_FALSE(MakePeerSampler(negative).ok());
  SamplerConfig anonymous = Config("random");
  anonymous.self = "";
  EXPECT_FALSE(MakePeerSampler(anonymous).ok());
  SamplerConfig unclustered = Config("oracle");
  unclustered.clusters = {{"b", 1}};
  EXPECT_FALSE(MakePeerSampler(unclustered).ok());
}

TEST(SamplerFactoryTest, OnlyTheClusterSamplersTakeACluster) {
  for (const NamedValue<SamplerKind>& entry : SamplerKindNames()) {
    auto sampler = Make(Config(entry.name), {"b", "c", "d"});
    bool clustered = sampler->SetCluster(std::vector<std::string>{"c"});
    bool cluster_kind = entry.value == SamplerKind::kLouvain ||
                        entry.value == SamplerKind::kTemperature ||
                        entry.value == SamplerKind::kCentroidCluster;
    EXPECT_EQ(clustered, cluster_kind) << entry.name;
    if (cluster_kind) {
      EXPECT_DOUBLE_EQ(sampler->Find("c")->probability, 1.0) << entry.name;
      EXPECT_DOUBLE_EQ(sampler->Find("b")->probability, 0.0) << entry.name;
    }
  }
}

TEST(RandomSamplerTest, IsUniformOverKnownPeersAndIgnoresScores) {
  auto random = Make(Config("random"), {"b", "c", "d", "e"});
  ASSERT_TRUE(random->Update(1, std::vector<PeerObservation>{{"b", 0.99, {}}, {"c", -1, {}}}).ok());
  for (const PeerRecord& record : random->Records()) EXPECT_DOUBLE_EQ(record.probability, 0.25);
  // The scores are kept for scores.csv.
  EXPECT_EQ(random->Find("b")->score, 0.99);
  ASSERT_TRUE(random->RemovePeer("e").ok());
  EXPECT_DOUBLE_EQ(random->Find("b")->probability, 1.0 / 3);
}

TEST(OracleSamplerTest, IsUniformWithinTheGroundTruthCluster) {
  // a's cluster is {a, c, d}; f is not in the scenario's map.
  auto oracle = Make(Config("oracle"), {"b", "c", "d", "e", "f"});
  EXPECT_DOUBLE_EQ(oracle->Find("c")->probability, 0.5);
  EXPECT_DOUBLE_EQ(oracle->Find("d")->probability, 0.5);
  EXPECT_EQ(oracle->Find("b")->probability, 0);
  EXPECT_EQ(oracle->Find("f")->probability, 0);
  Rng rng(3);
  for (int draw = 0; draw < 50; ++draw) {
    for (const SampledPeer& peer : oracle->Sample(5, {}, rng)) {
      EXPECT_TRUE(peer.peer == "c" || peer.peer == "d");
    }
  }
}

TEST(LocalSamplerTest, NeverSamples) {
  auto local = Make(Config("local"), {"b", "c"});
  Rng rng(3);
  EXPECT_TRUE(local->Sample(5, {}, rng).empty());
  for (const PeerRecord& record : local->Records()) EXPECT_EQ(record.probability, 0);
}

TEST(EmdClusterSamplerTest, UniformUntilDecidedThenOnlyMutuallyAcceptedPeers) {
  auto sampler = Make(Config("emd_cluster"), {"b", "c", "d"});
  for (const PeerRecord& r : sampler->Records()) EXPECT_NEAR(r.probability, 1.0 / 3, 1e-12);
  std::vector<PeerObservation> decided = {{"b", 1.0, {}}, {"c", -1.0, {}}};
  ASSERT_TRUE(sampler->Update(1, decided).ok());
  EXPECT_DOUBLE_EQ(sampler->Find("b")->probability, 1.0);
  EXPECT_DOUBLE_EQ(sampler->Find("c")->probability, 0.0);
  EXPECT_DOUBLE_EQ(sampler->Find("d")->probability, 0.0);  // undecided once others are decided
  Rng rng(5);
  for (int i = 0; i < 20; ++i) {
    auto drawn = sampler->Sample(2, {}, rng);
    ASSERT_EQ(drawn.size(), 1u);
    EXPECT_EQ(drawn[0].peer, "b");
  }
  std::vector<PeerObservation> rejected = {{"b", -1.0, {}}};
  ASSERT_TRUE(sampler->Update(2, rejected).ok());
  EXPECT_TRUE(sampler->Sample(2, {}, rng).empty());  // no accepted peer: learn alone
}

ClusterSampler& AsCluster(std::unique_ptr<PeerSampler>& sampler) {
  return dynamic_cast<ClusterSampler&>(*sampler);
}

TEST(ClusterSamplerTest, UniformOverAllUntilClusteredThenOnlyWithinTheCluster) {
  for (const std::string name : {"louvain", "temperature"}) {
    auto sampler = Make(Config(name), {"b", "c", "d", "e"});
    EXPECT_EQ(sampler->Name(), name);
    for (const PeerRecord& r : sampler->Records()) EXPECT_DOUBLE_EQ(r.probability, 0.25);
    // Unordered, repeated, self and an unknown id: only the known mates c and e count.
    AsCluster(sampler).SetCluster(std::vector<std::string>{"e", "a", "c", "zz", "e"});
    EXPECT_EQ(AsCluster(sampler).cluster(), (std::vector<std::string>{"a", "c", "e", "zz"}));
    EXPECT_DOUBLE_EQ(sampler->Find("c")->probability, 0.5);
    EXPECT_DOUBLE_EQ(sampler->Find("e")->probability, 0.5);
    EXPECT_EQ(sampler->Find("b")->probability, 0);
    EXPECT_EQ(sampler->Find("d")->probability, 0);
    Rng rng(7);
    for (int draw = 0; draw < 30; ++draw) {
      for (const SampledPeer& peer : sampler->Sample(3, {}, rng)) {
        EXPECT_TRUE(peer.peer == "c" || peer.peer == "e") << peer.peer;
      }
    }
    // Scores are recorded but do not move the probabilities.
    ASSERT_TRUE(sampler->Update(1, std::vector<PeerObservation>{{"b", 9.0, {}}}).ok());
    EXPECT_EQ(sampler->Find("b")->probability, 0);
    EXPECT_EQ(sampler->Find("b")->score, 9.0);
    // A mate met after the clustering joins the draw; a stranger does not.
    ASSERT_TRUE(sampler->AddPeer("zz").ok());
    ASSERT_TRUE(sampler->AddPeer("f").ok());
    EXPECT_NEAR(sampler->Find("zz")->probability, 1.0 / 3, 1e-12);
    EXPECT_EQ(sampler->Find("f")->probability, 0);
    // An empty cluster: learn alone. Back to nullopt: uniform again.
    AsCluster(sampler).SetCluster(std::vector<std::string>{});
    EXPECT_TRUE(sampler->Sample(3, {}, rng).empty());
    AsCluster(sampler).SetCluster(std::nullopt);
    for (const PeerRecord& r : sampler->Records()) EXPECT_NEAR(r.probability, 1.0 / 6, 1e-12);
  }
}

TEST(BaselineSamplerTest, SnapshotRoundTripsThroughTheSameKind) {
  auto oracle = Make(Config("oracle"), {"b", "c"});
  auto other = Make(Config("oracle"), {});
  ASSERT_TRUE(other->Restore(oracle->Snapshot()).ok());
  EXPECT_DOUBLE_EQ(other->Find("c")->probability, 1.0);
  auto random = Make(Config("random"), {});
  EXPECT_FALSE(random->Restore(oracle->Snapshot()).ok());
}

}  // namespace
}  // namespace meshlearn::topology
