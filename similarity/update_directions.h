#pragma once
// The latest update direction of every node a node has met, and the similarity matrices over them:
// the node-local part of FLIC's matrix S and of OCFL's matrix Γ (DESIGN.md "Other seed methods as
// decentralized policies"; file 002 section 3, file 003 eq. 1).
//
// Specification.
// - The store keeps one direction per node id (self included): the flat update vector the caller
//   holds for j (file 002's δ_j = w^{t-1} − w_j^t; the node passes j's own last local update, see
//   node/learner/training_learner.cc ObserveAndCluster). Observing a node again replaces its
//   direction, and every cosine involving it is recomputed; the others are kept.
//   Rationale: file 002, section 3: "it keeps the most recent update if a client has already been
//   sampled and does not forget previously stored updates ... if a similarity between two clients
//   has already been computed, we keep the most recent one". Cosines between two stored vectors
//   are therefore always those of their latest versions.
// - All directions have one length (the model's parameter count); the first observation fixes it.
//   A direction that is empty or has zero norm is kInvalidArgument, one holding NaN/Inf is
//   kNonFinite, one of another length is kLayoutMismatch. A rejected observation changes nothing.
//   Rationale: vectors come from peers; the cosine is undefined for a zero vector.
// - Matrices list the stored nodes in ascending id order (see similarity/clustering.h):
//   - Similarity(): FLIC's s_ij = 1 + cos(δ_i, δ_j) in [0, 2], diagonal 2 (file 002, eq. 7);
//   - CosineDistance(): OCFL's γ_ij = 1 − cos(δ_i, δ_j) in [0, 2], diagonal 0 (file 003, eq. 1).
//   Both are exactly symmetric: one cosine is stored per pair.
// - Cost: an observation reads its vector and every stored one once (one fused pass per pair,
//   similarity/vector_kernels.h); memory is one float vector per stored node. For large models and
//   many peers the caller may store a fixed-length sketch instead of the full vector (e.g. the
//   same random projection on every node); cosines are then approximate.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "similarity/clustering.h"

namespace meshlearn::similarity {

// Latest update directions by node id, with the cosine of every stored pair (header
// specification).
class UpdateDirections {
 public:
  // Stores `direction` as `node`'s latest update direction, replacing an older one, and recomputes
  // its cosines with every other stored node. Returns kInvalidArgument for an empty id, an empty or
  // zero-norm direction; kNonFinite for NaN/Inf; kLayoutMismatch for a length other than the
  // stored directions'. On error nothing changes.
  Status Observe(std::string_view node, std::span<const float> direction);
  // Forgets `node`'s direction and cosines. Returns kNotFound when it is not stored.
  Status Forget(std::string_view node);

  // True when `node` has a stored direction.
  bool Has(std::string_view node) const;
  // The number of stored nodes.
  size_t size() const { return ids_.size(); }
  // The stored node ids, ascending.
  const std::vector<std::string>& Ids() const { return ids_; }
  // The cosine between two stored nodes' directions (1 for a node with itself). Requires both to
  // be stored; returns NaN otherwise.
  double Cosine(std::string_view a, std::string_view b) const;

  // FLIC's similarity matrix s = 1 + cos over the stored nodes, diagonal 2.
  NodeMatrix Similarity() const;
  // OCFL's cosine-distance matrix 1 − cos over the stored nodes, diagonal 0.
  NodeMatrix CosineDistance() const;
  // The cosine-distance matrix restricted to the stored nodes among `nodes` (ascending id order;
  // ids not stored are skipped).
  NodeMatrix CosineDistance(std::span<const std::string> nodes) const;

 private:
  size_t Position(std::string_view node) const;
  // Builds {ids[p] for p in positions} with entries f(cos) off the diagonal and `diagonal` on it.
  template <typename Entry>
  NodeMatrix Build(const std::vector<size_t>& positions, Entry entry, double diagonal) const;

  // Parallel, in ascending id order.
  std::vector<std::string> ids_;
  std::vector<std::vector<float>> directions_;
  // cosine_[p][q] for stored positions p, q (1 on the diagonal).
  std::vector<std::vector<double>> cosine_;
};

}  // namespace meshlearn::similarity
