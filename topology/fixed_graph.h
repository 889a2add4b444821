#pragma once
// Fixed communication graphs for robustness experiments ([learning] graph; DESIGN.md "DAC
// sampler", "Fixed graphs"; issue 47): a node samples all its neighbours every round, as in
// ClippedGossip's ring and dumbbell experiments (He, Karimireddy, Jaggi 2022).
//
// Specification.
// - The mesh's members (every node, self included) are ordered by numeric value when every id
//   is a decimal integer (the launcher's "0" .. "N-1"), else by id.
//   Rationale: the launcher numbers the nodes cluster by cluster, so ring neighbours and the
//   dumbbell's cliques follow the scenario's clusters; "10" must come after "9".
// - ring: the member at position p is joined to those at p − 1 and p + 1 (mod N).
// - dumbbell: the first ⌈N/2⌉ members form one clique, the others a second, and one edge joins
//   the last member of the first clique to the first of the second (ClippedGossip's two cliques).
// - edges: the given undirected edges, nothing else.
// - A node's neighbours are the members joined to it, sorted by id, without repeats. An edge
//   that names a node outside the mesh or joins a node to itself, and a self that is not a
//   member, are errors (kInvalidArgument, naming them).

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace meshlearn::topology {

// The graph a node samples on ([learning] graph); kNone: its sampler decides.
enum class GraphKind { kNone, kRing, kDumbbell, kEdges };

// One undirected edge between two node ids.
using GraphEdge = std::pair<std::string, std::string>;

// `members` in the mesh order of the specification.
std::vector<std::string> MeshOrder(std::vector<std::string> members);

// The neighbours of `self` in graph `kind` over the mesh `members` (self included, any order),
// with `edges` for kEdges (see the specification). kNone has no neighbours.
Result<std::vector<std::string>> GraphNeighbours(GraphKind kind, const std::string& self,
                                                 const std::vector<std::string>& members,
                                                 const std::vector<GraphEdge>& edges);

}  // namespace meshlearn::topology
