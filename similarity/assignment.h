#pragma once
// The linear assignment problem: match the rows of a cost matrix to distinct columns at the least
// total cost. FLT's distance between two nodes' centroid sets is such a matching
// (similarity/centroid_signature.h; file 001), and so is the exact EMD between two point clouds
// of the same size (similarity/emd.h).
//
// Specification.
// - The input is a rows × cols cost matrix, row-major, rows ≥ 1, cols ≥ 1, every entry finite;
//   negative entries are allowed. Rectangular matrices are accepted: the smaller side is matched
//   completely, each of its members to a distinct member of the larger side, and the rest of the
//   larger side stays unmatched.
//   Rationale: two peers may send different numbers of centroids (k is a per-node setting); FLT's
//   released code matches the smaller set into the larger one.
// - The result is an optimal matching: no other matching of the smaller side has a smaller total
//   (up to floating-point rounding of the sums). Among optimal matchings, which one is returned is
//   a fixed function of the matrix, so two calls on the same matrix agree.
// - The algorithm is Jonker and Volgenant's (1987): for a square matrix, column reduction and a
//   bounded augmenting row reduction match most rows cheaply; every row left is then matched by a
//   shortest augmenting path over reduced costs (Dijkstra with column potentials). A rectangular
//   matrix goes to the shortest augmenting paths directly. O(s² · l) time in the worst case for
//   s = min(rows, cols) and l = max(rows, cols), O(rows · cols) memory.
//   Rationale: trying all k! permutations, as FLT's released code does, is 3.6 million sums at
//   k = 10; and the exact EMD of two equal-size uniform clouds is an assignment (similarity/emd.h),
//   where at n = 512 this takes about a quarter of the network simplex's time (issue 19).
// - Bad input is a Status, never a crash: an empty matrix or a cost span that is not rows × cols
//   long is kInvalidArgument, a NaN or Inf entry kNonFinite, an entry of magnitude above
//   kMaxAssignmentCost kInvalidArgument, more than kMaxAssignmentEntries entries kTooMany.
//   Rationale: the dual potentials are sums and differences of costs; bounding the costs keeps
//   them finite, so the search always terminates.

#include <cstddef>
#include <span>
#include <vector>

#include "base/status.h"

namespace meshlearn::similarity {

// The largest rows × cols MinCostAssignment() accepts (2^22, as the EMD solvers).
// Rationale: the cost of a call grows as s² · l; a peer must not be able to make a node spend
// minutes on one matching.
inline constexpr size_t kMaxAssignmentEntries = size_t{1} << 22;

// The largest |cost| MinCostAssignment() accepts. Squared distances between float points stay far
// below it.
inline constexpr double kMaxAssignmentCost = 1e150;

// An optimal matching of a cost matrix.
struct Assignment {
  // column_of_row[i] = the column matched to row i, or -1 when row i is unmatched (only when
  // rows > cols). Size: rows.
  std::vector<int> column_of_row;
  // The sum of cost[i][column_of_row[i]] over the matched rows, added in row order.
  double total_cost = 0;
};

// Returns a minimum-cost matching of the rows × cols matrix `cost` (row-major), as in the header
// specification, or kInvalidArgument / kNonFinite / kTooMany for bad input.
Result<Assignment> MinCostAssignment(std::span<const double> cost, size_t rows, size_t cols);

// The assignment with column capacities: every row goes to one column and each column takes
// exactly `capacity` rows, rows = capacity · cols (capacity ≥ 1), at the least total cost. This is
// the transportation problem between rows of mass 1/rows and columns of mass 1/cols (an optimal
// transport plan between uniform sets whose sizes divide, similarity/emd.h); its optimal flow is
// integral. Returns column_of_row (every row matched) and the total; the same input errors as
// MinCostAssignment, and kInvalidArgument when rows ≠ capacity · cols. Capacity 1 is
// MinCostAssignment's problem, and is solved by it.
// The algorithm: rows take their cheapest column while it has room, then every row left is placed
// by a shortest augmenting path over reduced costs (Dijkstra over the columns; a full column is
// crossed through any of its rows), as in MinCostAssignment. Rationale: the exchange's EMD between
// 500 training and 100 validation rows took the network simplex 150 times the time of a 100 × 100
// assignment (issue 19).
Result<Assignment> MinCostCapacitatedAssignment(std::span<const double> cost, size_t rows,
                                                size_t cols, size_t capacity);

}  // namespace meshlearn::similarity
