#include "similarity/clustering.h"

#include <igraph.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>

namespace meshlearn::similarity {
namespace {

// Checks a NodeMatrix against the header specification; `what` names the caller in messages.
Status CheckNodeMatrix(const NodeMatrix& matrix, const std::string& what) {
  const size_t n = matrix.size();
  if (matrix.values.size() != n * n) {
    return Status::InvalidArgument(what + ": " + std::to_string(matrix.values.size()) +
                                   " values for " + std::to_string(n) + " ids (expected n²)");
  }
  std::vector<std::string> sorted = matrix.ids;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && sorted.front().empty()) {
    return Status::InvalidArgument(what + ": an empty node id");
  }
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeated != sorted.end()) {
    return Status::InvalidArgument(what + ": node id " + *repeated + " appears twice");
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const double value = matrix.at(i, j), mirror = matrix.at(j, i);
      if (!std::isfinite(value)) {
        return Status::NonFinite(what + ": NaN or Inf between " + matrix.ids[i] + " and " +
                                 matrix.ids[j]);
      }
      if (value < 0) {
        return Status::InvalidArgument(what + ": negative entry between " + matrix.ids[i] +
                                       " and " + matrix.ids[j]);
      }
      if (std::abs(value - mirror) > 1e-12 * std::max({1.0, value, mirror})) {
        return Status::InvalidArgument(what + ": the matrix is not symmetric between " +
                                       matrix.ids[i] + " and " + matrix.ids[j]);
      }
    }
  }
  return Status::Ok();
}

// The positions of the ids in ascending id order: order[p] is the input index of the p-th id.
std::vector<size_t> IdOrder(const NodeMatrix& matrix) {
  std::vector<size_t> order(matrix.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return matrix.ids[a] < matrix.ids[b]; });
  return order;
}

// Maps labels computed over the id-sorted nodes (sorted_labels[p] for the p-th id) to canonical
// labels (numbered by first appearance) in input order.
std::vector<int> CanonicalLabels(const std::vector<size_t>& order,
                                 const std::vector<int>& sorted_labels) {
  std::map<int, int> canonical;
  std::vector<int> labels(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    const int next = static_cast<int>(canonical.size());
    labels[order[p]] = canonical.emplace(sorted_labels[p], next).first->second;
  }
  return labels;
}

// igraph 0.10 is built without thread support (IGRAPH_THREAD_SAFE 0): its default RNG, error
// handler and cleanup stack are process globals, and in-process mode runs many nodes as threads.
std::mutex& IgraphLock() {
  static std::mutex lock;
  return lock;
}

// Runs igraph's multilevel method on the n × n weights (row-major, already in id order) and
// returns igraph's membership vector. Holds IgraphLock(); installs a seeded RNG and an error
// handler that returns codes instead of aborting, and restores both before returning.
Result<std::vector<int>> Multilevel(const std::vector<double>& weights, size_t n, uint64_t seed,
                                    double resolution) {
  std::lock_guard<std::mutex> guard(IgraphLock());
  igraph_error_handler_t* previous_errors = igraph_set_error_handler(igraph_error_handler_ignore);
  igraph_warning_handler_t* previous_warnings =
      igraph_set_warning_handler(igraph_warning_handler_ignore);
  igraph_rng_t rng;
  igraph_rng_init(&rng, &igraph_rngtype_mt19937);
  igraph_rng_seed(&rng, seed);
  // igraph_rng_set_default() copies the struct, so a saved copy restores the previous default.
  igraph_rng_t previous_rng = *igraph_rng_default();
  igraph_rng_set_default(&rng);

  // Edges i <= j with a positive weight, self-loops included.
  std::vector<igraph_integer_t> ends;
  std::vector<igraph_real_t> positive;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i; j < n; ++j) {
      if (weights[i * n + j] <= 0) continue;
      ends.push_back(static_cast<igraph_integer_t>(i));
      ends.push_back(static_cast<igraph_integer_t>(j));
      positive.push_back(weights[i * n + j]);
    }
  }
  // Views over the std::vectors (igraph does not write to them); the membership is igraph's own.
  igraph_vector_int_t edges;
  igraph_vector_t edge_weights;
  igraph_vector_int_view(&edges, ends.data(), static_cast<igraph_integer_t>(ends.size()));
  igraph_vector_view(&edge_weights, positive.data(),
                     static_cast<igraph_integer_t>(positive.size()));
  igraph_t graph;
  igraph_vector_int_t membership;
  igraph_error_t error = igraph_vector_int_init(&membership, 0);
  if (error == IGRAPH_SUCCESS) {
    error = igraph_create(&graph, &edges, static_cast<igraph_integer_t>(n), IGRAPH_UNDIRECTED);
  }
  if (error == IGRAPH_SUCCESS) {
    error = igraph_community_multilevel(&graph, &edge_weights, resolution, &membership, nullptr,
                                        nullptr);
    igraph_destroy(&graph);
  }
  std::vector<int> labels;
  if (error == IGRAPH_SUCCESS) {
    for (size_t i = 0; i < n; ++i) labels.push_back(static_cast<int>(VECTOR(membership)[i]));
  }
  igraph_vector_int_destroy(&membership);
  igraph_rng_set_default(&previous_rng);
  igraph_rng_destroy(&rng);
  igraph_set_warning_handler(previous_warnings);
  igraph_set_error_handler(previous_errors);
  if (error != IGRAPH_SUCCESS) {
    return Status::Internal(std::string("louvain: igraph failed: ") + igraph_strerror(error));
  }
  return labels;
}

}  // namespace

std::vector<int> ClustersFromNeighbourhoods(const std::vector<std::vector<bool>>& accepted) {
  const size_t n = accepted.size();
  std::map<std::vector<bool>, int> cluster_of_neighbourhood;
  std::vector<int> clusters(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<bool> neighbourhood(n, false);
    for (size_t j = 0; j < n && j < accepted[i].size(); ++j) neighbourhood[j] = accepted[i][j];
    neighbourhood[i] = true;
    const int next_id = static_cast<int>(cluster_of_neighbourhood.size());
    clusters[i] = cluster_of_neighbourhood.emplace(std::move(neighbourhood), next_id).first->second;
  }
  return clusters;
}

double AdjustedRandIndex(std::span<const int> truth, std::span<const int> predicted) {
  if (truth.size() != predicted.size()) return std::numeric_limits<double>::quiet_NaN();
  // The pair confusion matrix, as scikit-learn's pair_confusion_matrix: counts of ordered pairs
  // of distinct nodes together in both (tp), in predicted only (fp), in truth only (fn), in
  // neither (tn).
  std::map<std::pair<int, int>, int64_t> contingency;
  std::map<int, int64_t> truth_sizes, predicted_sizes;
  for (size_t k = 0; k < truth.size(); ++k) {
    ++contingency[{truth[k], predicted[k]}];
    ++truth_sizes[truth[k]];
    ++predicted_sizes[predicted[k]];
  }
  const auto sum_of_squares = [](const auto& counts) {
    double sum = 0;
    for (const auto& [key, count] : counts) sum += static_cast<double>(count) * count;
    return sum;
  };
  const double n = static_cast<double>(truth.size());
  const double both = sum_of_squares(contingency);
  const double tp = both - n;
  const double fp = sum_of_squares(predicted_sizes) - both;
  const double fn = sum_of_squares(truth_sizes) - both;
  const double tn = n * n - fp - fn - both;
  if (fn == 0 && fp == 0) return 1.0;
  return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn));
}

Result<std::vector<int>> LouvainCommunities(const NodeMatrix& similarity, uint64_t seed,
                                            double resolution) {
  MESHLEARN_RETURN_IF_ERROR(CheckNodeMatrix(similarity, "louvain"));
  if (!std::isfinite(resolution) || !(resolution > 0)) {
    return Status::InvalidArgument("louvain: resolution must be finite and > 0, got " +
                                   std::to_string(resolution));
  }
  const size_t n = similarity.size();
  if (n == 0) return std::vector<int>{};
  const std::vector<size_t> order = IdOrder(similarity);
  std::vector<double> sorted(n * n);
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = 0; q < n; ++q) sorted[p * n + q] = similarity.at(order[p], order[q]);
  }
  Result<std::vector<int>> membership = Multilevel(sorted, n, seed, resolution);
  if (!membership.ok()) return membership.status();
  return CanonicalLabels(order, *membership);
}

Result<std::vector<int>> AgglomerativeClusters(const NodeMatrix& distance, double threshold,
                                               Linkage linkage) {
  MESHLEARN_RETURN_IF_ERROR(CheckNodeMatrix(distance, "agglomerative"));
  if (std::isnan(threshold)) return Status::InvalidArgument("agglomerative: threshold is NaN");
  const size_t n = distance.size();
  const std::vector<size_t> order = IdOrder(distance);
  // Cluster p (named by its first member in id order) while active; between[p * n + q] is the
  // linkage distance between clusters p and q.
  std::vector<double> between(n * n);
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = 0; q < n; ++q) between[p * n + q] = distance.at(order[p], order[q]);
  }
  std::vector<size_t> size(n, 1);
  std::vector<int> cluster_of(n);
  std::iota(cluster_of.begin(), cluster_of.end(), 0);
  std::vector<char> active(n, 1);
  while (true) {
    size_t best_p = n, best_q = n;
    double best = std::numeric_limits<double>::infinity();
    for (size_t p = 0; p < n; ++p) {
      if (!active[p]) continue;
      for (size_t q = p + 1; q < n; ++q) {
        if (active[q] && between[p * n + q] < best) {
          best = between[p * n + q];
          best_p = p;
          best_q = q;
        }
      }
    }
    if (best_p == n || !(best < threshold)) break;
    // Merge q into p (p < q, so the merged cluster keeps its first member's name); Lance–Williams.
    for (size_t r = 0; r < n; ++r) {
      if (!active[r] || r == best_p || r == best_q) continue;
      const double dp = between[best_p * n + r], dq = between[best_q * n + r];
      double merged = 0;
      switch (linkage) {
        case Linkage::kSingle:
          merged = std::min(dp, dq);
          break;
        case Linkage::kComplete:
          merged = std::max(dp, dq);
          break;
        case Linkage::kAverage:
          merged =
              (static_cast<double>(size[best_p]) * dp + static_cast<double>(size[best_q]) * dq) /
              static_cast<double>(size[best_p] + size[best_q]);
          break;
      }
      between[best_p * n + r] = between[r * n + best_p] = merged;
    }
    size[best_p] += size[best_q];
    active[best_q] = 0;
    for (int& c : cluster_of) {
      if (c == static_cast<int>(best_q)) c = static_cast<int>(best_p);
    }
  }
  return CanonicalLabels(order, cluster_of);
}

Result<double> ClusteringTemperature(const NodeMatrix& distance) {
  MESHLEARN_RETURN_IF_ERROR(CheckNodeMatrix(distance, "temperature"));
  const size_t n = distance.size();
  if (n < 2) {
    return Status::InvalidArgument("temperature: needs at least 2 nodes, got " + std::to_string(n));
  }
  double sum_of_squares = 0;
  for (double d : distance.values) sum_of_squares += d * d;
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1);
  return std::sqrt(sum_of_squares) / (2 * std::sqrt(pairs));
}

std::string IgraphVersion() {
  const char* text = nullptr;
  int major = 0, minor = 0, patch = 0;
  igraph_version(&text, &major, &minor, &patch);
  return text ? text : "";
}

}  // namespace meshlearn::similarity
