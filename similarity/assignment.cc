#include "similarity/assignment.h"

#include <cmath>
#include <limits>
#include <string>

namespace meshlearn::similarity {
namespace {

// The Hungarian method for n ≤ m (shortest augmenting paths with potentials): returns, for each of
// the n rows, its column. `at(i, j)` is the cost of row i, column j (0-based). Rows are added one
// at a time; each addition finds the cheapest augmenting path by a Dijkstra-like scan over the
// reduced costs cost(i, j) − u_i − v_j ≥ 0, which the potentials keep non-negative.
template <typename Cost>
Result<std::vector<int>> Hungarian(size_t n, size_t m, Cost at) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // 1-based as in the textbook form: index 0 is the virtual column/row that starts each search.
  std::vector<double> u(n + 1, 0), v(m + 1, 0), min_reduced(m + 1);
  std::vector<size_t> row_of_column(m + 1, 0), previous_column(m + 1, 0);
  std::vector<char> visited(m + 1);
  for (size_t row = 1; row <= n; ++row) {
    row_of_column[0] = row;
    size_t column = 0;
    std::fill(min_reduced.begin(), min_reduced.end(), kInf);
    std::fill(visited.begin(), visited.end(), 0);
    do {
      visited[column] = 1;
      const size_t i = row_of_column[column];
      double delta = kInf;
      size_t next = 0;
      for (size_t j = 1; j <= m; ++j) {
        if (visited[j]) continue;
        const double reduced = at(i - 1, j - 1) - u[i] - v[j];
        if (reduced < min_reduced[j]) {
          min_reduced[j] = reduced;
          previous_column[j] = column;
        }
        if (min_reduced[j] < delta) {
          delta = min_reduced[j];
          next = j;
        }
      }
      // Unreachable with bounded finite costs and m >= n (an unvisited column always remains).
      if (next == 0) return Status::Internal("assignment: no augmenting path found");
      for (size_t j = 0; j <= m; ++j) {
        if (visited[j]) {
          u[row_of_column[j]] += delta;
          v[j] -= delta;
        } else {
          min_reduced[j] -= delta;
        }
      }
      column = next;
    } while (row_of_column[column] != 0);
    // Flip the augmenting path back to the virtual column.
    do {
      const size_t before = previous_column[column];
      row_of_column[column] = row_of_column[before];
      column = before;
    } while (column != 0);
  }
  std::vector<int> column_of_row(n, -1);
  for (size_t j = 1; j <= m; ++j) {
    if (row_of_column[j] != 0) column_of_row[row_of_column[j] - 1] = static_cast<int>(j - 1);
  }
  return column_of_row;
}

}  // namespace

Result<Assignment> MinCostAssignment(std::span<const double> cost, size_t rows, size_t cols) {
  if (rows == 0 || cols == 0) {
    return Status::InvalidArgument("assignment: empty cost matrix (" + std::to_string(rows) +
                                   " x " + std::to_string(cols) + ")");
  }
  if (cols > kMaxAssignmentEntries / rows) {
    return Status::TooMany("assignment: " + std::to_string(rows) + " x " + std::to_string(cols) +
                           " costs exceed the limit of " + std::to_string(kMaxAssignmentEntries));
  }
  if (cost.size() != rows * cols) {
    return Status::InvalidArgument("assignment: " + std::to_string(cost.size()) +
                                   " costs, expected " + std::to_string(rows) + " x " +
                                   std::to_string(cols));
  }
  for (size_t k = 0; k < cost.size(); ++k) {
    if (!std::isfinite(cost[k])) {
      return Status::NonFinite("assignment: NaN or Inf cost at row " + std::to_string(k / cols));
    }
    if (std::abs(cost[k]) > kMaxAssignmentCost) {
      return Status::InvalidArgument("assignment: cost magnitude above 1e150 at row " +
                                     std::to_string(k / cols));
    }
  }
  Assignment result;
  if (rows <= cols) {
    auto matched = Hungarian(rows, cols, [&](size_t i, size_t j) { return cost[i * cols + j]; });
    if (!matched.ok()) return matched.status();
    result.column_of_row = std::move(matched).value();
  } else {
    // Match the columns (the smaller side) into the rows of the transposed matrix.
    auto matched = Hungarian(cols, rows, [&](size_t j, size_t i) { return cost[i * cols + j]; });
    if (!matched.ok()) return matched.status();
    result.column_of_row.assign(rows, -1);
    for (size_t j = 0; j < cols; ++j) result.column_of_row[(*matched)[j]] = static_cast<int>(j);
  }
  for (size_t i = 0; i < rows; ++i) {
    if (result.column_of_row[i] >= 0) result.total_cost += cost[i * cols + result.column_of_row[i]];
  }
  return result;
}

}  // namespace meshlearn::similarity
