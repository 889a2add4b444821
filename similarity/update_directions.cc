#include "similarity/update_directions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "similarity/vector_kernels.h"

namespace meshlearn::similarity {

size_t UpdateDirections::Position(std::string_view node) const {
  return static_cast<size_t>(std::lower_bound(ids_.begin(), ids_.end(), node) - ids_.begin());
}

bool UpdateDirections::Has(std::string_view node) const {
  const size_t at = Position(node);
  return at < ids_.size() && ids_[at] == node;
}

Status UpdateDirections::Observe(std::string_view node, std::span<const float> direction) {
  if (node.empty()) return Status::InvalidArgument("update directions: empty node id");
  const std::string id(node);
  if (direction.empty()) {
    return Status::InvalidArgument("update directions: empty direction from " + id);
  }
  if (!directions_.empty() && direction.size() != directions_.front().size()) {
    return Status::LayoutMismatch("update directions: " + id + " sent " +
                                  std::to_string(direction.size()) + " values, stored ones have " +
                                  std::to_string(directions_.front().size()));
  }
  const double norm2 = FusedSquaredNorm(direction);
  if (!std::isfinite(norm2)) {
    return Status::NonFinite("update directions: NaN or Inf in the direction of " + id);
  }
  if (norm2 == 0) {
    return Status::InvalidArgument("update directions: zero direction from " + id + " (no cosine)");
  }
  size_t at = Position(node);
  if (at == ids_.size() || ids_[at] != node) {
    ids_.insert(ids_.begin() + at, id);
    directions_.insert(directions_.begin() + at, std::vector<float>());
    for (std::vector<double>& row : cosine_) row.insert(row.begin() + at, 0.0);
    cosine_.insert(cosine_.begin() + at, std::vector<double>(ids_.size(), 0.0));
  }
  directions_[at].assign(direction.begin(), direction.end());
  for (size_t q = 0; q < ids_.size(); ++q) {
    double cosine = 1;
    if (q != at) {
      const DotAndNorms sums = FusedDotAndNorms(directions_[at], directions_[q]);
      cosine = std::clamp(sums.dot / std::sqrt(sums.norm2_a * sums.norm2_b), -1.0, 1.0);
    }
    cosine_[at][q] = cosine_[q][at] = cosine;
  }
  return Status::Ok();
}

Status UpdateDirections::Forget(std::string_view node) {
  if (!Has(node)) {
    return Status::NotFound("update directions: no direction of " + std::string(node));
  }
  const size_t at = Position(node);
  ids_.erase(ids_.begin() + at);
  directions_.erase(directions_.begin() + at);
  cosine_.erase(cosine_.begin() + at);
  for (std::vector<double>& row : cosine_) row.erase(row.begin() + at);
  return Status::Ok();
}

double UpdateDirections::Cosine(std::string_view a, std::string_view b) const {
  if (!Has(a) || !Has(b)) return std::numeric_limits<double>::quiet_NaN();
  return cosine_[Position(a)][Position(b)];
}

template <typename Entry>
NodeMatrix UpdateDirections::Build(const std::vector<size_t>& positions, Entry entry,
                                   double diagonal) const {
  NodeMatrix matrix;
  const size_t n = positions.size();
  matrix.values.resize(n * n);
  for (size_t p = 0; p < n; ++p) {
    matrix.ids.push_back(ids_[positions[p]]);
    for (size_t q = 0; q < n; ++q) {
      matrix.values[p * n + q] = p == q ? diagonal : entry(cosine_[positions[p]][positions[q]]);
    }
  }
  return matrix;
}

NodeMatrix UpdateDirections::Similarity() const {
  std::vector<size_t> all(ids_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return Build(
      all, [](double cosine) { return 1 + cosine; }, 2.0);
}

NodeMatrix UpdateDirections::CosineDistance() const { return CosineDistance(ids_); }

NodeMatrix UpdateDirections::CosineDistance(std::span<const std::string> nodes) const {
  std::vector<size_t> positions;
  for (const std::string& node : nodes) {
    if (Has(node)) positions.push_back(Position(node));
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return Build(
      positions, [](double cosine) { return 1 - cosine; }, 0.0);
}

}  // namespace meshlearn::similarity
