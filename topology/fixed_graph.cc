#include "topology/fixed_graph.h"

#include <algorithm>
#include <set>

namespace meshlearn::topology {
namespace {

bool IsDecimal(const std::string& id) {
  return !id.empty() && id.size() < 19 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The undirected edges of a ring or dumbbell over `order`.
std::vector<GraphEdge> ShapeEdges(GraphKind kind, const std::vector<std::string>& order) {
  const size_t n = order.size();
  std::vector<GraphEdge> edges;
  if (kind == GraphKind::kRing) {
    for (size_t p = 0; n > 1 && p < n; ++p) edges.emplace_back(order[p], order[(p + 1) % n]);
    return edges;
  }
  const size_t first = (n + 1) / 2;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      if ((a < first) == (b < first)) edges.emplace_back(order[a], order[b]);
    }
  }
  if (first < n) edges.emplace_back(order[first - 1], order[first]);
  return edges;
}

}  // namespace

std::vector<std::string> MeshOrder(std::vector<std::string> members) {
  const bool numeric = std::all_of(members.begin(), members.end(), IsDecimal);
  std::sort(members.begin(), members.end(), [numeric](const std::string& a, const std::string& b) {
    if (numeric && a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

Result<std::vector<std::string>> GraphNeighbours(GraphKind kind, const std::string& self,
                                                 const std::vector<std::string>& members,
                                                 const std::vector<GraphEdge>& edges) {
  const std::set<std::string> mesh(members.begin(), members.end());
  if (!mesh.contains(self)) {
    return Status::InvalidArgument("graph: node '" + self + "' is not a member of its mesh");
  }
  if (kind == GraphKind::kNone) return std::vector<std::string>{};
  const std::vector<GraphEdge> all =
      kind == GraphKind::kEdges ? edges : ShapeEdges(kind, MeshOrder(members));
  std::set<std::string> neighbours;
  for (const auto& [a, b] : all) {
    if (!mesh.contains(a) || !mesh.contains(b) || a == b) {
      return Status::InvalidArgument("graph: edge '" + a + "' - '" + b +
                                     "' must join two different nodes of the mesh");
    }
    if (a == self) neighbours.insert(b);
    if (b == self) neighbours.insert(a);
  }
  return std::vector<std::string>(neighbours.begin(), neighbours.end());
}

}  // namespace meshlearn::topology
