#pragma once
// Earth Mover's distance between two point clouds: the optimal-transport cost of EMD-CFL (file 000;
// DESIGN.md "EMD embedding exchange", step 3). Solvers are chosen by name through MakeEmdSolver(),
// the only place where solver strings meet types.
//
// Specification.
// - W(a, b) is the optimal-transport cost between the uniform distribution on a's rows (mass
//   1/n_a each) and the uniform distribution on b's rows (mass 1/n_b each) under the cosine cost
//   C_ij = 1 − cos(a_i, b_j). W is in [0, 2]; W(a, a) = 0.
//   Rationale: DESIGN.md fixes uniform weights and the cosine cost, as in the authors' code.
// - Solvers (EmdOptions::solver):
//   - "exact": the transportation problem solved to optimality, and the same value as Python
//     POT's ot.emd2 on the same cost matrix to 1e-9 relative (tests/similarity/emd_test.cc). Two
//     sets of the same size are an assignment problem (the optimal plan of uniform weights is a
//     permutation), solved by Jonker and Volgenant's algorithm (similarity/assignment.h); when
//     one size divides the other, a capacitated assignment (each point of the larger set goes
//     whole to one of the smaller set, which takes n_large / n_small of them); other sizes go to
//     LEMON's network simplex.
//   - "sinkhorn": log-domain stabilised Sinkhorn iterations on the entropy-regularised problem;
//     returns the transport cost <P, C> of the regularised plan P (the entropy term excluded, like
//     POT's ot.sinkhorn2), which is >= the exact W and approaches it as the regularisation shrinks.
// - Inputs come from peers (their projected embeddings), so every shape or value problem is a
//   Status, never a crash: an empty set or a values span whose size is not rows × cols is
//   kInvalidArgument; a NaN or Inf value is kNonFinite; a zero-norm row (no direction, so no
//   cosine) is kInvalidArgument; column counts that differ are kLayoutMismatch; more than
//   kMaxTransportArcs pairs of rows is kTooMany. Rationale: a bad peer must cost an error line,
//   never a crash or a NaN (similarity/metric.h).
// - The cost matrix is computed in double from the float inputs as one matrix product of the
//   rows scaled to unit norm (DESIGN.md "Performance targets": exact EMD at n = 512, d = 115 in at
//   most half of POT's time). Every entry has the same bits on every machine (no fused
//   multiply-add, one summation order).

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "similarity/point_set.h"

namespace meshlearn::similarity {

// The largest n_a × n_b a solver accepts (2048 × 2048). Larger inputs are kTooMany.
// Rationale: the exact solver stores about 60 bytes per pair of rows (the dense bipartite network),
// 250 MB at this limit; DESIGN.md caps each set at max_samples = 512 anyway.
inline constexpr size_t kMaxTransportArcs = size_t{1} << 22;

// An optimal-transport solver for W(a, b) (header specification). Implementations are const and may
// be called from several threads at once.
class EmdSolver {
 public:
  virtual ~EmdSolver() = default;

  // The config name of this solver ("exact", "sinkhorn"), as accepted in EmdOptions::solver.
  virtual std::string_view Name() const = 0;
  // Returns W(a, b) >= 0 under the cosine cost, or an error as in the header specification.
  // Never returns NaN or Inf.
  virtual Result<double> Distance(const PointSet& a, const PointSet& b) const = 0;
};

// The EMD solvers.
enum class EmdSolverKind {
  kExact,     // "exact": an assignment when one size divides the other, else the network simplex
  kSinkhorn,  // "sinkhorn": entropic regularisation
};

// The config name of every EmdSolverKind ([emd] solver), in documentation order.
NameTable<EmdSolverKind> EmdSolverKindNames();

// How MakeEmdSolver() builds a solver (DESIGN.md "EMD embedding exchange": "exact optimal
// transport ... Sinkhorn is an option").
struct EmdOptions {
  EmdSolverKind solver = EmdSolverKind::kExact;
  // Sinkhorn only: the entropic regularisation, relative to the cost scale. The absolute
  // regularisation is sinkhorn_regularization × max_ij C_ij, so the same option means the same
  // blur whatever the spread of the cosines. Must be > 0. On Gaussian clouds with d = 115 the value
  // is above the exact W by about 1% (0.7% at n = 40, 1.4% at n = 512) at 0.01, and by 0.02% at
  // 0.001. Each iteration costs three passes of exp() over the n_a × n_b costs (seconds for 1000
  // iterations at n = 512): use "exact" unless an approximation is wanted.
  double sinkhorn_regularization = 0.01;
  // Sinkhorn only: the maximum number of iterations (each one updates both potentials). When it is
  // reached before `sinkhorn_tolerance`, the cost of the current plan is returned (as POT does).
  // Must be >= 1.
  int sinkhorn_max_iterations = 1000;
  // Sinkhorn only: stop when the L1 error of the plan's row marginals (total mass 1) falls below
  // this. Must be > 0.
  double sinkhorn_tolerance = 1e-9;
};

// Builds the solver of `options.solver`. kInvalidArgument when a Sinkhorn option is out of range.
Result<std::unique_ptr<EmdSolver>> MakeEmdSolver(const EmdOptions& options);

// Returns the n_a × n_b cosine cost matrix C_ij = 1 − cos(a_i, b_j), row-major, computed in double
// as 1 − (the unit rows of a)(the unit rows of b)ᵀ, or the input error of the header
// specification. Exposed so
// that tests and benchmarks can hand exactly the solver's matrix to a reference implementation.
Result<std::vector<double>> CosineCostMatrix(const PointSet& a, const PointSet& b);

}  // namespace meshlearn::similarity
