// Fixed graphs (topology/fixed_graph.h), against hand-worked neighbour sets, and the sampler a
// graph makes: every neighbour drawn each round, nobody else (issue 47).
#include "topology/fixed_graph.h"

#include <gtest/gtest.h>

#include "topology/sampler_factory.h"

namespace meshlearn::topology {
namespace {

using Ids = std::vector<std::string>;

Ids Numbered(int n) {
  Ids ids;
  for (int i = n - 1; i >= 0; --i) ids.push_back(std::to_string(i));  // any order
  return ids;
}

Ids NeighboursOf(GraphKind kind, const std::string& self, const Ids& members,
                 const std::vector<GraphEdge>& edges = {}) {
  auto neighbours = GraphNeighbours(kind, self, members, edges);
  EXPECT_TRUE(neighbours.ok()) << neighbours.status().ToString();
  return neighbours.ok() ? *neighbours : Ids{};
}

TEST(FixedGraph, MeshOrderIsNumericForNumberedNodesElseById) {
  EXPECT_EQ(MeshOrder({"10", "9", "1", "0"}), (Ids{"0", "1", "9", "10"}));
  EXPECT_EQ(MeshOrder({"n10", "n9", "n1"}), (Ids{"n1", "n10", "n9"}));
}

TEST(FixedGraph, RingJoinsEachNodeToItsTwoNeighboursInMeshOrder) {
  const Ids mesh = Numbered(12);
  EXPECT_EQ(NeighboursOf(GraphKind::kRing, "0", mesh), (Ids{"1", "11"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kRing, "9", mesh), (Ids{"10", "8"}));  // sorted by id
  EXPECT_EQ(NeighboursOf(GraphKind::kRing, "0", Numbered(2)), (Ids{"1"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kRing, "0", Numbered(1)), (Ids{}));
}

TEST(FixedGraph, DumbbellIsTwoCliquesJoinedByOneEdge) {
  // 7 nodes: cliques {0, 1, 2, 3} and {4, 5, 6}, joined by 3 - 4.
  const Ids mesh = Numbered(7);
  EXPECT_EQ(NeighboursOf(GraphKind::kDumbbell, "0", mesh), (Ids{"1", "2", "3"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kDumbbell, "3", mesh), (Ids{"0", "1", "2", "4"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kDumbbell, "4", mesh), (Ids{"3", "5", "6"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kDumbbell, "6", mesh), (Ids{"4", "5"}));
}

TEST(FixedGraph, EdgesAreUndirectedAndMustJoinTwoMembers) {
  const Ids mesh = {"a", "b", "c"};
  const std::vector<GraphEdge> edges = {{"a", "b"}, {"c", "a"}, {"b", "a"}};
  EXPECT_EQ(NeighboursOf(GraphKind::kEdges, "a", mesh, edges), (Ids{"b", "c"}));
  EXPECT_EQ(NeighboursOf(GraphKind::kEdges, "c", mesh, edges), (Ids{"a"}));
  auto stranger = GraphNeighbours(GraphKind::kEdges, "a", mesh, {{"a", "z"}});
  ASSERT_FALSE(stranger.ok());
  EXPECT_NE(stranger.status().ToString().find("'z'"), std::string::npos);
  EXPECT_FALSE(GraphNeighbours(GraphKind::kEdges, "a", mesh, {{"b", "b"}}).ok());
  EXPECT_FALSE(GraphNeighbours(GraphKind::kRing, "x", mesh, {}).ok()) << "self not in the mesh";
}

TEST(FixedGraph, ItsSamplerDrawsEveryNeighbourAndNobodyElse) {
  SamplerConfig config;
  config.sampler = SamplerKind::kRandom;
  config.self = "0";
  config.graph = GraphKind::kRing;
  config.members = Numbered(6);
  auto sampler = MakePeerSampler(config);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  EXPECT_EQ((*sampler)->Name(), "graph");
  for (const std::string& peer : Numbered(6)) {
    if (peer != "0") {
      ASSERT_TRUE((*sampler)->AddPeer(peer).ok());
    }
  }
  Rng rng(7);
  for (int round = 0; round < 5; ++round) {
    Ids drawn;
    for (const SampledPeer& p : (*sampler)->Sample(5, {}, rng)) {
      drawn.push_back(p.peer);
      EXPECT_DOUBLE_EQ(p.probability, 0.5);
    }
    std::sort(drawn.begin(), drawn.end());
    EXPECT_EQ(drawn, (Ids{"1", "5"}));
  }
}

}  // namespace
}  // namespace meshlearn::topology
