#include "similarity/assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace meshlearn::similarity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A partial matching of the rows of an n × m matrix (n ≤ m) with column potentials v. Invariant
// (dual feasibility): every matched row's column minimises its reduced cost c_ij − v_j over j, so
// with u_i = that minimum, u_i + v_j ≤ c_ij everywhere and equality holds on matched pairs.
struct Matching {
  std::vector<int> column_of_row;  // -1: free
  std::vector<int> row_of_column;  // -1: free
  std::vector<double> v;
};

// Jonker and Volgenant (1987), for an n × m row-major matrix `c` with n ≤ m. Square matrices
// start with their two cheap phases (column reduction, augmenting row reduction), which match
// most rows; every row still free is then matched by a shortest augmenting path (Dijkstra over
// reduced costs). Rectangular matrices go to the augmenting paths directly from v = 0, which
// keeps the unmatched columns' potentials at 0 as optimality requires there.
class JonkerVolgenant {
 public:
  JonkerVolgenant(const double* c, size_t n, size_t m) : c_(c), n_(n), m_(m) {
    matching_.column_of_row.assign(n, -1);
    matching_.row_of_column.assign(m, -1);
    matching_.v.assign(m, 0.0);
  }

  Result<std::vector<int>> Solve() {
    std::vector<int> free_rows;
    if (n_ == m_ && n_ > 1) {
      free_rows = ReduceColumns();
      // Two passes, as Jonker and Volgenant recommend: later passes rarely free fewer rows.
      for (int pass = 0; pass < 2 && !free_rows.empty(); ++pass) {
        free_rows = ReduceRows(std::move(free_rows));
      }
    } else {
      for (size_t i = 0; i < n_; ++i) free_rows.push_back(static_cast<int>(i));
    }
    for (int row : free_rows) MESHLEARN_RETURN_IF_ERROR(Augment(row));
    return std::move(matching_.column_of_row);
  }

 private:
  double at(size_t i, size_t j) const { return c_[i * m_ + j]; }

  // Column reduction and reduction transfer: each column's potential is its smallest cost and
  // its cheapest row takes it (a row that is cheapest in several columns keeps its cheapest);
  // a row matched once then moves its slack into its column's potential. Returns the rows that
  // are cheapest in no column.
  std::vector<int> ReduceColumns() {
    std::vector<int>& x = matching_.column_of_row;
    std::vector<int>& y = matching_.row_of_column;
    std::vector<double>& v = matching_.v;
    std::vector<int> times_cheapest(n_, 0);
    for (size_t j = m_; j-- > 0;) {
      size_t best = 0;
      for (size_t i = 1; i < n_; ++i) {
        if (at(i, j) < at(best, j)) best = i;
      }
      v[j] = at(best, j);
      if (times_cheapest[best]++ == 0) {
        x[best] = static_cast<int>(j);
        y[j] = static_cast<int>(best);
      } else if (v[j] < v[x[best]]) {
        y[x[best]] = -1;
        x[best] = static_cast<int>(j);
        y[j] = static_cast<int>(best);
      }
    }
    std::vector<int> free_rows;
    for (size_t i = 0; i < n_; ++i) {
      if (times_cheapest[i] == 0) {
        free_rows.push_back(static_cast<int>(i));
      } else if (times_cheapest[i] == 1) {
        const auto own = static_cast<size_t>(x[i]);
        double slack = kInf;
        for (size_t j = 0; j < m_; ++j) {
          if (j != own) slack = std::min(slack, at(i, j) - v[j]);
        }
        v[own] -= slack;
      }
    }
    return free_rows;
  }

  // Augmenting row reduction: each free row takes its cheapest column under the reduced costs,
  // lowering that column's potential to its second-cheapest (so the displaced row, if any, now
  // prefers another column) and displacing its previous row. Returns the rows left free.
  // Rationale for the step budget (2n per pass): with floating-point costs two rows can trade a
  // column back and forth while its potential falls by tiny steps, and on dense cosine costs
  // (n = 512, d = 115) the phase took about 64n steps to match every row, each step a pass over a
  // row, slower than the augmenting paths that finish the few rows a short phase leaves.
  // Stopping early is always safe: the invariant holds after every step.
  std::vector<int> ReduceRows(std::vector<int> todo) {
    std::vector<int>& x = matching_.column_of_row;
    std::vector<int>& y = matching_.row_of_column;
    std::vector<double>& v = matching_.v;
    std::vector<int> still_free;
    size_t budget = 2 * n_;
    size_t k = 0;
    while (k < todo.size()) {
      if (budget-- == 0) {
        still_free.insert(still_free.end(), todo.begin() + static_cast<std::ptrdiff_t>(k),
                          todo.end());
        break;
      }
      const auto i = static_cast<size_t>(todo[k++]);
      double first = kInf, second = kInf;
      size_t first_j = 0, second_j = 0;
      for (size_t j = 0; j < m_; ++j) {
        const double reduced = at(i, j) - v[j];
        if (reduced < second) {
          if (reduced < first) {
            second = first;
            second_j = first_j;
            first = reduced;
            first_j = j;
          } else {
            second = reduced;
            second_j = j;
          }
        }
      }
      size_t take = first_j;
      int displaced = y[take];
      const bool lowered = first < second;
      if (lowered) {
        v[take] -= second - first;
      } else if (displaced >= 0) {
        // A tie: take the second column instead, which may be free.
        take = second_j;
        displaced = y[take];
      }
      x[i] = static_cast<int>(take);
      y[take] = static_cast<int>(i);
      if (displaced >= 0) {
        x[displaced] = -1;
        if (lowered) {
          todo[--k] = displaced;  // continue with the displaced row at once
        } else {
          still_free.push_back(displaced);
        }
      }
    }
    return still_free;
  }

  // Matches the free row `start` by a shortest augmenting path over the reduced costs
  // (Dijkstra with the columns split into ready, scanned-at-the-minimum and to-do), then
  // updates the ready columns' potentials so that dual feasibility holds again.
  Status Augment(int start) {
    std::vector<int>& x = matching_.column_of_row;
    std::vector<int>& y = matching_.row_of_column;
    std::vector<double>& v = matching_.v;
    columns_.resize(m_);
    distance_.resize(m_);
    previous_row_.resize(m_);
    for (size_t j = 0; j < m_; ++j) {
      columns_[j] = static_cast<int>(j);
      distance_[j] = at(static_cast<size_t>(start), j) - v[j];
      previous_row_[j] = start;
    }
    // columns_[0, low) are ready, [low, up) lie at the current minimum and wait to be scanned,
    // [up, m) are still to do.
    size_t low = 0, up = 0, ready = 0;
    double minimum = 0;
    int end = -1;
    while (end < 0) {
      if (low == up) {
        if (up == m_) return Status::Internal("assignment: no augmenting path found");
        ready = low;
        minimum = distance_[columns_[up++]];
        for (size_t k = up; k < m_; ++k) {
          const int j = columns_[k];
          const double d = distance_[j];
          if (d <= minimum) {
            if (d < minimum) {
              up = low;
              minimum = d;
            }
            columns_[k] = columns_[up];
            columns_[up++] = j;
          }
        }
        for (size_t k = low; k < up; ++k) {
          if (y[columns_[k]] < 0) {
            end = columns_[k];
            break;
          }
        }
        if (end >= 0) break;
      }
      const int j1 = columns_[low++];
      const auto i = static_cast<size_t>(y[j1]);
      const double offset = at(i, static_cast<size_t>(j1)) - v[j1] - minimum;
      for (size_t k = up; k < m_; ++k) {
        const int j = columns_[k];
        const double d = at(i, static_cast<size_t>(j)) - v[j] - offset;
        if (d < distance_[j]) {
          previous_row_[j] = static_cast<int>(i);
          if (d == minimum) {
            if (y[j] < 0) {
              end = j;
              break;
            }
            columns_[k] = columns_[up];
            columns_[up++] = j;
          }
          distance_[j] = d;
        }
      }
    }
    for (size_t k = 0; k < ready; ++k) {
      const int j = columns_[k];
      v[j] += distance_[j] - minimum;
    }
    // Flip the path: every row on it moves to the column that led to it.
    for (;;) {
      const int i = previous_row_[end];
      y[end] = i;
      std::swap(end, x[i]);
      if (i == start) break;
    }
    return Status::Ok();
  }

  const double* c_;
  size_t n_, m_;
  Matching matching_;
  std::vector<int> columns_;  // scratch of Augment()
  std::vector<double> distance_;
  std::vector<int> previous_row_;
};

// The capacitated assignment (MinCostCapacitatedAssignment): n = k · m rows of an n × m row-major
// matrix, each column taking k of them. Column potentials v ≤ 0 stay 0 until a column is full;
// every matched row's column minimises its reduced cost c_ij − v_j (as in JonkerVolgenant).
class CapacitatedAssignment {
 public:
  CapacitatedAssignment(const double* c, size_t n, size_t m, size_t k)
      : c_(c), n_(n), m_(m), k_(k), column_of_row_(n, -1), rows_of_column_(m), v_(m, 0.0) {}

  Result<std::vector<int>> Solve() {
    // With v = 0 a row may take its cheapest column while it has room.
    std::vector<size_t> waiting;
    for (size_t i = 0; i < n_; ++i) {
      const double* row = c_ + i * m_;
      const size_t cheapest = static_cast<size_t>(std::min_element(row, row + m_) - row);
      if (rows_of_column_[cheapest].size() < k_) {
        Place(i, cheapest);
      } else {
        waiting.push_back(i);
      }
    }
    for (size_t i : waiting) MESHLEARN_RETURN_IF_ERROR(Augment(i));
    return std::move(column_of_row_);
  }

 private:
  double at(size_t i, size_t j) const { return c_[i * m_ + j]; }

  void Place(size_t row, size_t column) {
    column_of_row_[row] = static_cast<int>(column);
    rows_of_column_[column].push_back(static_cast<int>(row));
  }

  // Places the unmatched row `start` by a shortest augmenting path: Dijkstra over the columns,
  // where reaching a full column j at distance μ leads on through each of its rows r to every
  // column j' at μ + (c_rj' − v_j') − (c_rj − v_j).
  Status Augment(size_t start) {
    distance_.assign(m_, 0.0);
    previous_row_.assign(m_, static_cast<int>(start));
    ready_.assign(m_, 0);
    scanned_.clear();
    for (size_t j = 0; j < m_; ++j) distance_[j] = at(start, j) - v_[j];
    size_t end = m_;
    double minimum = 0;
    while (end == m_) {
      size_t next = m_;
      for (size_t j = 0; j < m_; ++j) {
        if (!ready_[j] && (next == m_ || distance_[j] < distance_[next])) next = j;
      }
      if (next == m_) return Status::Internal("assignment: no augmenting path found");
      minimum = distance_[next];
      if (rows_of_column_[next].size() < k_) {
        end = next;
        break;
      }
      ready_[next] = 1;
      scanned_.push_back(next);
      for (int r : rows_of_column_[next]) {
        const auto row = static_cast<size_t>(r);
        const double offset = minimum - (at(row, next) - v_[next]);
        for (size_t j = 0; j < m_; ++j) {
          if (ready_[j]) continue;
          const double d = at(row, j) - v_[j] + offset;
          if (d < distance_[j]) {
            distance_[j] = d;
            previous_row_[j] = r;
          }
        }
      }
    }
    for (size_t j : scanned_) v_[j] += distance_[j] - minimum;
    // Along the path each row moves to the column that led to it; the first row is `start`.
    size_t column = end;
    for (;;) {
      const auto row = static_cast<size_t>(previous_row_[column]);
      const int left = column_of_row_[row];
      Place(row, column);
      if (row == start) break;
      std::vector<int>& old = rows_of_column_[static_cast<size_t>(left)];
      old.erase(std::find(old.begin(), old.end(), static_cast<int>(row)));
      column = static_cast<size_t>(left);
    }
    return Status::Ok();
  }

  const double* c_;
  size_t n_, m_, k_;
  std::vector<int> column_of_row_;
  std::vector<std::vector<int>> rows_of_column_;
  std::vector<double> v_;
  std::vector<double> distance_;  // scratch of Augment()
  std::vector<int> previous_row_;
  std::vector<char> ready_;
  std::vector<size_t> scanned_;
};

// The input checks shared by both entry points (header specification).
Status CheckCosts(std::span<const double> cost, size_t rows, size_t cols) {
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
  return Status::Ok();
}

}  // namespace

Result<Assignment> MinCostAssignment(std::span<const double> cost, size_t rows, size_t cols) {
  MESHLEARN_RETURN_IF_ERROR(CheckCosts(cost, rows, cols));
  Assignment result;
  if (rows <= cols) {
    auto matched = JonkerVolgenant(cost.data(), rows, cols).Solve();
    if (!matched.ok()) return matched.status();
    result.column_of_row = std::move(matched).value();
  } else {
    // Match the columns (the smaller side) into the rows of the transposed matrix.
    std::vector<double> transposed(cost.size());
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < cols; ++j) transposed[j * rows + i] = cost[i * cols + j];
    }
    auto matched = JonkerVolgenant(transposed.data(), cols, rows).Solve();
    if (!matched.ok()) return matched.status();
    result.column_of_row.assign(rows, -1);
    for (size_t j = 0; j < cols; ++j) result.column_of_row[(*matched)[j]] = static_cast<int>(j);
  }
  for (size_t i = 0; i < rows; ++i) {
    if (result.column_of_row[i] >= 0) result.total_cost += cost[i * cols + result.column_of_row[i]];
  }
  return result;
}

Result<Assignment> MinCostCapacitatedAssignment(std::span<const double> cost, size_t rows,
                                                size_t cols, size_t capacity) {
  if (capacity == 1 && rows == cols) return MinCostAssignment(cost, rows, cols);
  MESHLEARN_RETURN_IF_ERROR(CheckCosts(cost, rows, cols));
  if (capacity == 0 || rows != capacity * cols) {
    return Status::InvalidArgument("assignment: " + std::to_string(rows) + " rows cannot fill " +
                                   std::to_string(cols) + " columns of capacity " +
                                   std::to_string(capacity) + " exactly");
  }
  Assignment result;
  auto matched = CapacitatedAssignment(cost.data(), rows, cols, capacity).Solve();
  if (!matched.ok()) return matched.status();
  result.column_of_row = std::move(matched).value();
  for (size_t i = 0; i < rows; ++i) result.total_cost += cost[i * cols + result.column_of_row[i]];
  return result;
}

}  // namespace meshlearn::similarity
