// Public estimates for top-k gossip (node/logic/public_estimates.h): the owner's update chains and
// the requester's per-peer estimates.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "node/logic/public_estimates.h"
#include "protocol/codec.h"

namespace meshlearn::node::testing {
namespace {

constexpr size_t kSize = 1000;

CompressionSettings TopK(double fraction) {
  CompressionSettings s;
  s.codec = CompressionCodec::kTopK;
  s.topk_fraction = fraction;
  s.topk_values = CompressionCodec::kInt8;
  s.block_size = 64;
  return s;
}

std::vector<float> Gaussian(uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> v(kSize);
  for (float& x : v) x = normal(rng);
  return v;
}

// The model of round r: the initial model plus r small steps, as training would move it.
std::vector<float> ModelOfRound(const std::vector<float>& initial, int64_t round) {
  std::vector<float> model = initial;
  for (int64_t r = 0; r <= round; ++r) {
    std::vector<float> step = Gaussian(100 + static_cast<uint32_t>(r), 0.01f);
    for (size_t i = 0; i < kSize; ++i) model[i] += step[i];
  }
  return model;
}

// The chain survives the wire: encoded in a Model and decoded again, as a requester receives it.
EstimateChain OverTheWire(const EstimateChain& chain) {
  Model m;
  m.layout.tensors = {{"w", {static_cast<int64_t>(kSize)}, 0}};
  m.encoding = TopK(0.1);
  m.chain = chain;
  auto decoded = Decode(Encode(MakeMessage("owner", 1, 0, m)));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return *std::get<Model>(decoded->body).chain;
}

// Publishes the models of rounds [first, last); `requester` pulls peer "a" after each round r with
// pulls(r).
void PublishRounds(EstimateOwner& owner, PeerEstimates& requester,
                   const std::vector<float>& initial, int64_t first, int64_t last,
                   const std::function<bool(int64_t)>& pulls) {
  for (int64_t round = first; round < last; ++round) {
    owner.Publish(round, ModelOfRound(initial, round));
    if (!pulls(round)) continue;
    auto chain = owner.ChainTo(round, requester.Held("a"));
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    ASSERT_TRUE(requester.Apply("a", *chain).ok()) << "round " << round;
  }
}

bool Always(int64_t) { return true; }

double Distance(std::span<const float> a, std::span<const float> b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum);
}

// A requester that fetches every round applies one update each time and holds the owner's
// estimate bit for bit; the estimate follows the model, and error feedback makes a model that
// stops changing arrive whole over time.
TEST(PublicEstimates, ARequesterOfEveryRoundHoldsTheOwnersEstimateBitForBit) {
  const std::vector<float> initial = Gaussian(1);
  EstimateOwner owner(TopK(0.1), initial);
  PeerEstimates requester(FloatArray::Own(initial), 8);
  std::vector<float> model;
  for (int64_t round = 0; round < 30; ++round) {
    model = ModelOfRound(initial, std::min<int64_t>(round, 5));  // stops changing after round 5
    owner.Publish(round, model);
    auto chain = owner.ChainTo(round, requester.Held("a"));
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    EXPECT_FALSE(chain->base) << "round " << round << ": the requester holds the previous round";
    EXPECT_EQ(chain->updates.size(), 1u) << round;
    auto estimate = requester.Apply("a", OverTheWire(*chain));
    ASSERT_TRUE(estimate.ok()) << estimate.status().ToString();
    EXPECT_EQ(requester.Held("a"), (HeldEstimate{-1, round}));
    EXPECT_EQ(EstimateChecksum(estimate->view()), chain->checksum);
  }
  auto last = requester.Apply("a", *owner.ChainTo(29, requester.Held("a")));
  ASSERT_TRUE(last.ok());
  const double start_gap = Distance(initial, model);
  const double gap = Distance(last->view(), model);
  EXPECT_LT(gap, 0.02 * start_gap) << "what top-k left out was sent later (error feedback)";
}

// A requester that skipped rounds gets the updates it missed, in one chain; one that asks for an
// older round than it holds, or from another lineage, gets the base whole.
TEST(PublicEstimates, ARequesterThatSkippedRoundsGetsTheUpdatesItMissed) {
  const std::vector<float> initial = Gaussian(2);
  EstimateOwner owner(TopK(0.05), initial);
  PeerEstimates requester(FloatArray::Own(initial), 8);
  PeerEstimates every_round(FloatArray::Own(initial), 8);
  for (int64_t round = 0; round < 10; ++round) {
    owner.Publish(round, ModelOfRound(initial, round));
    ASSERT_TRUE(every_round.Apply("a", *owner.ChainTo(round, every_round.Held("a"))).ok());
    if (round == 2 || round == 9) {
      auto chain = owner.ChainTo(round, requester.Held("a"));
      ASSERT_TRUE(chain.ok());
      EXPECT_FALSE(chain->base);
      EXPECT_EQ(chain->updates.size(), round == 2 ? 3u : 7u);
      auto estimate = requester.Apply("a", OverTheWire(*chain));
      ASSERT_TRUE(estimate.ok()) << estimate.status().ToString();
      EXPECT_EQ(*estimate, *every_round.Apply("a", *owner.ChainTo(round, every_round.Held("a"))))
          << "one chain or one update at a time: the same bits";
    }
  }
  auto older = owner.ChainTo(5, requester.Held("a"));  // holds round 9
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(older->base);
  auto other_lineage = owner.ChainTo(9, HeldEstimate{3, 7});
  ASSERT_TRUE(other_lineage.ok());
  EXPECT_TRUE(other_lineage->base);
  EXPECT_EQ(owner.ChainTo(10, requester.Held("a")).status().code(), ErrorCode::kNotFound);
}

// The owner keeps at most one float32 model's bytes of updates; older updates are folded into the
// base. A requester further behind gets, for the newest round, the estimate itself whole and no
// update; for an older kept round, the base whole plus the kept updates up to it. Either way it
// ends with the owner's estimate of that round.
TEST(PublicEstimates, OldUpdatesFoldIntoTheBaseAndFarBehindRequestersGetTheEstimateWhole) {
  const std::vector<float> initial = Gaussian(3);
  EstimateOwner owner(TopK(0.3), initial);  // about 600 bytes per update, 4,000 per model
  PeerEstimates current(FloatArray::Own(initial), 8);
  PublishRounds(owner, current, initial, 0, 20, Always);
  EXPECT_GT(owner.base_round(), -1) << "20 updates of 30% do not fit one model's bytes";
  EXPECT_LT(owner.kept_updates(), 20u);
  PeerEstimates behind(FloatArray::Own(initial), 8);
  auto chain = owner.ChainTo(19, behind.Held("a"));
  ASSERT_TRUE(chain.ok());
  ASSERT_TRUE(chain->base);
  EXPECT_EQ(chain->from_round, 19);
  EXPECT_TRUE(chain->updates.empty());
  auto estimate = behind.Apply("a", OverTheWire(*chain));
  ASSERT_TRUE(estimate.ok()) << estimate.status().ToString();
  EXPECT_EQ(*estimate, *current.Apply("a", *owner.ChainTo(19, current.Held("a"))));

  // A round before the newest: the base, then every kept update up to that round.
  const int64_t older = 18;
  PeerEstimates late(FloatArray::Own(initial), 8);
  auto old_chain = owner.ChainTo(older, late.Held("a"));
  ASSERT_TRUE(old_chain.ok());
  ASSERT_TRUE(old_chain->base);
  EXPECT_EQ(old_chain->from_round, owner.base_round());
  EXPECT_EQ(old_chain->updates.size(), owner.kept_updates() - 1);
  auto old_estimate = late.Apply("a", OverTheWire(*old_chain));
  ASSERT_TRUE(old_estimate.ok()) << old_estimate.status().ToString();
  EXPECT_EQ(EstimateChecksum(old_estimate->view()), old_chain->checksum);
}

// After a resume the owner starts a new lineage at the model it serves: a requester holding the
// old lineage gets the base; one whose shared initial model differs fails the checksum, loses its
// copy and is served the base next time.
TEST(PublicEstimates, ANewLineageOrAnotherInitialModelIsDetected) {
  const std::vector<float> initial = Gaussian(4);
  EstimateOwner owner(TopK(0.1), initial);
  PeerEstimates requester(FloatArray::Own(initial), 8);
  PublishRounds(owner, requester, initial, 0, 3, Always);
  owner.Restart(3, ModelOfRound(initial, 3));
  owner.Publish(4, ModelOfRound(initial, 4));
  auto chain = owner.ChainTo(4, requester.Held("a"));
  ASSERT_TRUE(chain.ok());
  EXPECT_TRUE(chain->base) << "the requester holds lineage -1, the owner is at lineage 3";
  ASSERT_TRUE(requester.Apply("a", *chain).ok());
  EXPECT_EQ(requester.Held("a"), (HeldEstimate{3, 4}));

  PeerEstimates stranger(FloatArray::Own(Gaussian(5)), 8);  // another shared initial model
  EstimateOwner fresh(TopK(0.1), initial);
  fresh.Publish(0, ModelOfRound(initial, 0));
  auto mismatched = stranger.Apply("a", *fresh.ChainTo(0, stranger.Held("a")));
  EXPECT_EQ(mismatched.status().code(), ErrorCode::kMalformed) << mismatched.status().ToString();
  EXPECT_NE(mismatched.status().message().find("checksum"), std::string::npos);
  EXPECT_EQ(stranger.Held("a"), HeldEstimate{});
  fresh.Publish(1, ModelOfRound(initial, 1));
  auto wrong_start = stranger.Apply("a", *fresh.ChainTo(1, HeldEstimate{-1, 0}));
  EXPECT_EQ(wrong_start.status().code(), ErrorCode::kInvalidArgument)
      << "a chain from round 0 for a requester that holds nothing";
}

// A damaged update refuses the chain and drops the copy; the requester keeps at most `capacity`
// peers, dropping the least recently used.
TEST(PublicEstimates, ADamagedUpdateIsRefusedAndOnlyTheRecentPeersAreKept) {
  const std::vector<float> initial = Gaussian(6);
  EstimateOwner owner(TopK(0.1), initial);
  owner.Publish(0, ModelOfRound(initial, 0));
  PeerEstimates requester(FloatArray::Own(initial), 2);
  EstimateChain chain = *owner.ChainTo(0, requester.Held("a"));
  chain.updates[0].resize(chain.updates[0].size() - 1);
  EXPECT_EQ(requester.Apply("a", chain).status().code(), ErrorCode::kMalformed);
  EXPECT_EQ(requester.size(), 0u);
  for (const char* peer : {"a", "b", "a", "c"}) {
    ASSERT_TRUE(requester.Apply(peer, *owner.ChainTo(0, requester.Held(peer))).ok()) << peer;
  }
  EXPECT_EQ(requester.size(), 2u);
  EXPECT_EQ(requester.Held("b"), HeldEstimate{}) << "b was used least recently";
  EXPECT_EQ(requester.Held("a"), (HeldEstimate{-1, 0}));
  EXPECT_EQ(requester.Held("c"), (HeldEstimate{-1, 0}));
}

// A checkpoint keeps both sides whole: an owner and a requester restored from their exports go on
// exactly as the originals, and a state of another model's size is refused.
TEST(PublicEstimates, ExportedStatesRestoreToTheSameChainsAndEstimates) {
  const std::vector<float> initial = Gaussian(7);
  EstimateOwner owner(TopK(0.3), initial);
  PeerEstimates requester(FloatArray::Own(initial), 8);
  PublishRounds(owner, requester, initial, 0, 12, [](int64_t round) { return round % 3 == 0; });
  EstimateOwner restored_owner(TopK(0.3), initial);
  ASSERT_TRUE(restored_owner.Restore(owner.Export()).ok());
  EXPECT_EQ(restored_owner.Export(), owner.Export());
  PeerEstimates restored(FloatArray::Own(initial), 8);
  ASSERT_TRUE(restored.Restore(requester.Export()).ok());
  EXPECT_EQ(restored.Held("a"), requester.Held("a"));
  owner.Publish(12, ModelOfRound(initial, 12));
  restored_owner.Publish(12, ModelOfRound(initial, 12));
  EXPECT_EQ(*restored_owner.ChainTo(12, restored.Held("a")),
            *owner.ChainTo(12, requester.Held("a")));
  auto a = requester.Apply("a", *owner.ChainTo(12, requester.Held("a")));
  auto b = restored.Apply("a", *restored_owner.ChainTo(12, restored.Held("a")));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);

  EstimateOwnerState wrong = owner.Export();
  wrong.estimate.pop_back();
  EXPECT_EQ(restored_owner.Restore(wrong).code(), ErrorCode::kLayoutMismatch);
  wrong = owner.Export();
  wrong.estimate[0] += 1;
  EXPECT_EQ(restored_owner.Restore(wrong).code(), ErrorCode::kMalformed) << "checksum";
  std::vector<PeerEstimateState> short_peer = requester.Export();
  short_peer[0].values.resize(3);
  EXPECT_EQ(restored.Restore(short_peer).code(), ErrorCode::kLayoutMismatch);
  EXPECT_EQ(restored.Held("a"), requester.Held("a")) << "nothing restored";
}

}  // namespace
}  // namespace meshlearn::node::testing
