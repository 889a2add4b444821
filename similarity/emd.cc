#include "similarity/emd.h"

#include <lemon/network_simplex.h>
#include <lemon/static_graph.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "similarity/assignment.h"
#include "similarity/dot_products.h"

namespace meshlearn::similarity {
namespace {

// Checks one point set and returns its rows scaled to unit L2 norm, in double (header
// specification of emd.h). `which` names the set in messages ("a", "b").
Result<std::vector<double>> UnitRows(const PointSet& set, const char* which) {
  const std::string name = std::string("emd: point set ") + which;
  MESHLEARN_RETURN_IF_ERROR(CheckPointSet(set, name));
  std::vector<double> unit(set.values.size());
  for (size_t i = 0; i < set.rows; ++i) {
    const float* row = set.values.data() + i * set.cols;
    double norm2 = 0;
    for (size_t k = 0; k < set.cols; ++k) norm2 += static_cast<double>(row[k]) * row[k];
    if (norm2 == 0) {
      return Status::InvalidArgument(name + ": row " + std::to_string(i) +
                                     " has zero norm (no direction, so no cosine)");
    }
    const double inverse_norm = 1 / std::sqrt(norm2);
    double* out = unit.data() + i * set.cols;
    for (size_t k = 0; k < set.cols; ++k) out[k] = row[k] * inverse_norm;
  }
  return unit;
}

// The shared validation of a Distance() call.
Status CheckPair(const PointSet& a, const PointSet& b) {
  if (a.rows == 0 || a.cols == 0 || b.rows == 0 || b.cols == 0) {
    return Status::InvalidArgument("emd: empty point set (" + std::to_string(a.rows) + " x " +
                                   std::to_string(a.cols) + " and " + std::to_string(b.rows) +
                                   " x " + std::to_string(b.cols) + ")");
  }
  if (a.cols != b.cols) {
    return Status::LayoutMismatch("emd: point sets have " + std::to_string(a.cols) + " and " +
                                  std::to_string(b.cols) + " columns");
  }
  if (b.rows > kMaxTransportArcs / a.rows) {
    return Status::TooMany("emd: " + std::to_string(a.rows) + " x " + std::to_string(b.rows) +
                           " pairs of points exceed the limit of " +
                           std::to_string(kMaxTransportArcs));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Exact solver.

// The transportation problem as a min-cost flow on the complete bipartite network: node i < n_a
// (point a_i) supplies n_b units, node n_a + j (point b_j) demands n_a units, arc (i, j) costs
// C_ij. Totals match (n_a · n_b); a flow F gives the plan P = F / (n_a · n_b).
// Rationale for integers: LEMON's network simplex is exact with integer supplies and costs, while
// its floating-point mode can stall on ties. Costs are rounded to multiples of 2^-40 (an error of
// at most 5e-13 per unit of mass), which can only change the plan between near-ties; the returned
// value is the plan's cost under the unrounded double costs, so it differs from the true optimum
// by at most 1e-12 (far below the 1e-6 target of DESIGN.md "Performance targets").
class TransportNetwork {
 public:
  using Simplex = lemon::NetworkSimplex<lemon::StaticDigraph, int32_t, int64_t>;

  TransportNetwork(size_t rows_a, size_t rows_b)
      : rows_a_(rows_a), rows_b_(rows_b), supply_(graph_) {
    std::vector<std::pair<int, int>> arcs;
    arcs.reserve(rows_a * rows_b);
    for (size_t i = 0; i < rows_a; ++i) {
      for (size_t j = 0; j < rows_b; ++j) {
        arcs.emplace_back(static_cast<int>(i), static_cast<int>(rows_a + j));
      }
    }
    graph_.build(static_cast<int>(rows_a + rows_b), arcs.begin(), arcs.end());
    for (size_t i = 0; i < rows_a; ++i) {
      supply_[graph_.node(static_cast<int>(i))] = static_cast<int32_t>(rows_b);
    }
    for (size_t j = 0; j < rows_b; ++j) {
      supply_[graph_.node(static_cast<int>(rows_a + j))] = -static_cast<int32_t>(rows_a);
    }
    simplex_ = std::make_unique<Simplex>(graph_);
  }

  size_t rows_a() const { return rows_a_; }
  size_t rows_b() const { return rows_b_; }

  // Solves for the row-major n_a × n_b `cost` and returns the optimal cost of the uniform plan.
  Result<double> Solve(const std::vector<double>& cost) {
    const RoundedCost rounded{&graph_, cost.data()};
    simplex_->costMap(rounded).supplyMap(supply_);
    const Simplex::ProblemType outcome = simplex_->run(Simplex::BLOCK_SEARCH);
    if (outcome != Simplex::OPTIMAL) {
      return Status::Internal("emd: the network simplex found no optimal plan (outcome " +
                              std::to_string(static_cast<int>(outcome)) + ")");
    }
    double total = 0;
    for (int arc = 0; arc < graph_.arcNum(); ++arc) {
      const int32_t flow = simplex_->flow(graph_.arc(arc));
      if (flow != 0) total += flow * cost[arc];
    }
    return total / (static_cast<double>(rows_a_) * static_cast<double>(rows_b_));
  }

 private:
  static constexpr double kCostScale = 1099511627776.0;  // 2^40

  // A read-only LEMON arc map: the cost of an arc rounded to an integer multiple of 2^-40,
  // clamped at 0 (rounding gives identical points -1e-16, and non-negative costs keep LEMON's
  // int64 potentials clear of overflow). StaticDigraph numbers arcs in the order of the list given
  // to build(), so arc (i, j) has id i * n_b + j, its index in the row-major cost matrix.
  struct RoundedCost {
    using Key = lemon::StaticDigraph::Arc;
    using Value = int64_t;
    const lemon::StaticDigraph* graph;
    const double* cost;
    int64_t operator[](Key arc) const {
      // Non-negative, so adding 0.5 and truncating rounds to nearest (std::llround is slower).
      return static_cast<int64_t>(std::max(0.0, cost[graph->id(arc)]) * kCostScale + 0.5);
    }
  };

  size_t rows_a_;
  size_t rows_b_;
  lemon::StaticDigraph graph_;
  lemon::StaticDigraph::NodeMap<int32_t> supply_;
  std::unique_ptr<Simplex> simplex_;
};

// "exact": for two sets of the same size, the optimal plan of uniform weights is a permutation
// (Birkhoff–von Neumann: the plan is n × doubly stochastic, and its polytope's vertices are the
// permutation matrices), so W is the least-cost assignment's cost over n, found by Jonker and
// Volgenant's algorithm (similarity/assignment.h). When one size divides the other (n = k · m),
// the optimal flow is integral too: each of the n points goes whole to one of the m, each of which
// takes k, a capacitated assignment. Other sizes go to LEMON's network simplex on
// TransportNetwork.
// Rationale: the exchange measures sets whose sizes divide (similarity/emd.h,
// node/logic/learner.h), and the assignment solvers take a fraction of the network simplex's time
// (issue 19: `meshlearn-bench --benchmark_filter=Emd`). The network of the last shape is kept
// between calls. Rationale: building it touches ~16 MB at 512 × 600 (fresh pages, a third of the
// solve time), and calls of one shape (a solver used on sets whose sizes do not divide) reuse it.
// Calls are serialised by a mutex; drop the solver to release the memory.
class ExactEmdSolver final : public EmdSolver {
 public:
  std::string_view Name() const override { return "exact"; }

  Result<double> Distance(const PointSet& a, const PointSet& b) const override {
    // W is symmetric: the capacitated assignment takes the larger set as its rows.
    if (a.rows > 0 && a.rows < b.rows && b.rows % a.rows == 0) return Distance(b, a);
    Result<std::vector<double>> cost = CosineCostMatrix(a, b);
    if (!cost.ok()) return cost.status();
    if (a.rows % b.rows == 0) {
      // Each point of a carries 1/n_a of the mass; each of b takes the mass of n_a / n_b of them
      // (one each for equal sizes: an assignment).
      Result<Assignment> matching =
          MinCostCapacitatedAssignment(*cost, a.rows, b.rows, a.rows / b.rows);
      if (!matching.ok()) return matching.status().WithContext("emd");
      return std::max(0.0, matching->total_cost / static_cast<double>(a.rows));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (network_ == nullptr || network_->rows_a() != a.rows || network_->rows_b() != b.rows) {
      network_.reset();  // free the old network before allocating the new one
      network_ = std::make_unique<TransportNetwork>(a.rows, b.rows);
    }
    Result<double> distance = network_->Solve(*cost);
    if (!distance.ok()) return distance;
    return std::max(0.0, *distance);
  }

 private:
  mutable std::mutex mutex_;
  mutable std::unique_ptr<TransportNetwork> network_;
};

// ---------------------------------------------------------------------------------------------
// Sinkhorn solver.

// Returns the log-sum-exp of (potential_j − cost_j) / epsilon over j, times epsilon.
double SoftMin(const double* potential, const double* cost, size_t n, double epsilon) {
  double largest = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < n; ++j) largest = std::max(largest, potential[j] - cost[j]);
  double sum = 0;
  for (size_t j = 0; j < n; ++j) sum += std::exp((potential[j] - cost[j] - largest) / epsilon);
  return largest + epsilon * std::log(sum);
}

// "sinkhorn": entropy-regularised transport (Cuturi 2013) with the log-domain (potential) updates
// f_i = ε log a_i − ε LSE_j((g_j − C_ij)/ε), g_j = ε log b_j − ε LSE_i((f_i − C_ij)/ε).
// Rationale for the log domain: at the small ε that approximates the exact W, exp(−C/ε) underflows
// to 0 in the classical matrix-scaling form.
class SinkhornEmdSolver final : public EmdSolver {
 public:
  explicit SinkhornEmdSolver(const EmdOptions& options) : options_(options) {}

  std::string_view Name() const override { return "sinkhorn"; }

  Result<double> Distance(const PointSet& a, const PointSet& b) const override {
    Result<std::vector<double>> cost_or = CosineCostMatrix(a, b);
    if (!cost_or.ok()) return cost_or.status();
    const std::vector<double>& cost = *cost_or;
    const size_t n_a = a.rows, n_b = b.rows;
    const double largest_cost = *std::max_element(cost.begin(), cost.end());
    if (!(largest_cost > 0)) return 0.0;  // every pair of directions coincides
    const double epsilon = options_.sinkhorn_regularization * largest_cost;
    std::vector<double> cost_t(cost.size());
    for (size_t i = 0; i < n_a; ++i) {
      for (size_t j = 0; j < n_b; ++j) cost_t[j * n_a + i] = cost[i * n_b + j];
    }
    const double log_mass_a = -std::log(static_cast<double>(n_a));
    const double log_mass_b = -std::log(static_cast<double>(n_b));
    std::vector<double> f(n_a, 0.0), g(n_b, 0.0);
    for (int iteration = 0; iteration < options_.sinkhorn_max_iterations; ++iteration) {
      for (size_t i = 0; i < n_a; ++i) {
        f[i] = epsilon * log_mass_a - SoftMin(g.data(), cost.data() + i * n_b, n_b, epsilon);
      }
      for (size_t j = 0; j < n_b; ++j) {
        g[j] = epsilon * log_mass_b - SoftMin(f.data(), cost_t.data() + j * n_a, n_a, epsilon);
      }
      // After the g update the column marginals are exact; the row marginals measure progress.
      if (iteration % 10 == 9 || iteration + 1 == options_.sinkhorn_max_iterations) {
        double row_error = 0;
        for (size_t i = 0; i < n_a; ++i) {
          const double row_mass =
              std::exp((f[i] - SoftMin(g.data(), cost.data() + i * n_b, n_b, epsilon)) / epsilon);
          row_error += std::abs(row_mass - 1 / static_cast<double>(n_a));
        }
        if (row_error < options_.sinkhorn_tolerance) break;
      }
    }
    double total = 0;
    for (size_t i = 0; i < n_a; ++i) {
      const double* row = cost.data() + i * n_b;
      for (size_t j = 0; j < n_b; ++j) total += std::exp((f[i] + g[j] - row[j]) / epsilon) * row[j];
    }
    if (!std::isfinite(total)) {
      return Status::Internal("emd: Sinkhorn diverged (regularisation " +
                              std::to_string(options_.sinkhorn_regularization) + ")");
    }
    return std::max(0.0, total);
  }

 private:
  EmdOptions options_;
};

// ---------------------------------------------------------------------------------------------
// The factory table (STYLE.md: "one explicit factory table ... the only place strings meet
// types").

constexpr NamedValue<EmdSolverKind> kSolverNames[] = {{"exact", EmdSolverKind::kExact},
                                                      {"sinkhorn", EmdSolverKind::kSinkhorn}};

}  // namespace

Result<std::vector<double>> CosineCostMatrix(const PointSet& a, const PointSet& b) {
  MESHLEARN_RETURN_IF_ERROR(CheckPair(a, b));
  Result<std::vector<double>> unit_a = UnitRows(a, "a");
  if (!unit_a.ok()) return unit_a.status();
  Result<std::vector<double>> unit_b = UnitRows(b, "b");
  if (!unit_b.ok()) return unit_b.status();
  const size_t n_a = a.rows, n_b = b.rows, d = a.cols;
  std::vector<double> cost(n_a * n_b);
  DotProducts(unit_a->data(), n_a, unit_b->data(), n_b, d, cost.data());
  for (double& c : cost) c = 1 - c;
  return cost;
}

NameTable<EmdSolverKind> EmdSolverKindNames() { return kSolverNames; }

Result<std::unique_ptr<EmdSolver>> MakeEmdSolver(const EmdOptions& options) {
  if (options.solver == EmdSolverKind::kExact) {
    return std::unique_ptr<EmdSolver>(std::make_unique<ExactEmdSolver>());
  }
  if (!(options.sinkhorn_regularization > 0) || !std::isfinite(options.sinkhorn_regularization)) {
    return Status::InvalidArgument("emd: sinkhorn_regularization must be > 0, got " +
                                   std::to_string(options.sinkhorn_regularization));
  }
  if (options.sinkhorn_max_iterations < 1) {
    return Status::InvalidArgument("emd: sinkhorn_max_iterations must be >= 1, got " +
                                   std::to_string(options.sinkhorn_max_iterations));
  }
  if (!(options.sinkhorn_tolerance > 0)) {
    return Status::InvalidArgument("emd: sinkhorn_tolerance must be > 0, got " +
                                   std::to_string(options.sinkhorn_tolerance));
  }
  return std::unique_ptr<EmdSolver>(std::make_unique<SinkhornEmdSolver>(options));
}

}  // namespace meshlearn::similarity
