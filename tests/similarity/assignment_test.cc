// The assignment solver (similarity/assignment.h): hand-checked matrices, brute force over all
// permutations, rectangular shapes and bad input.

#include "similarity/assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace meshlearn::similarity {
namespace {

// The cheapest total over every one-to-one matching of the smaller side, by enumeration.
double BruteForce(const std::vector<double>& cost, size_t rows, size_t cols) {
  const bool wide = rows <= cols;
  const size_t small = wide ? rows : cols, large = wide ? cols : rows;
  const auto at = [&](size_t s, size_t l) {
    return wide ? cost[s * cols + l] : cost[l * cols + s];
  };
  std::vector<size_t> perm(large);
  std::iota(perm.begin(), perm.end(), size_t{0});
  double best = std::numeric_limits<double>::infinity();
  do {
    double total = 0;
    for (size_t s = 0; s < small; ++s) total += at(s, perm[s]);
    best = std::min(best, total);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// Checks that `result` is a matching of the smaller side and that its total is its cost.
void ExpectValidMatching(const Assignment& result, const std::vector<double>& cost, size_t rows,
                         size_t cols) {
  ASSERT_EQ(result.column_of_row.size(), rows);
  std::vector<int> used(cols, 0);
  size_t matched = 0;
  double total = 0;
  for (size_t i = 0; i < rows; ++i) {
    const int j = result.column_of_row[i];
    if (j < 0) continue;
    ASSERT_LT(static_cast<size_t>(j), cols);
    EXPECT_EQ(used[j]++, 0) << "column " << j << " matched twice";
    ++matched;
    total += cost[i * cols + j];
  }
  EXPECT_EQ(matched, std::min(rows, cols));
  EXPECT_DOUBLE_EQ(result.total_cost, total);
}

TEST(MinCostAssignmentTest, BeatsGreedyOnAHandCheckedMatrix) {
  // Greedy (row 0 takes its cheapest column 0, row 1 gets column 1) pays 1 + 100; the optimum
  // crosses over: 2 + 2.
  const std::vector<double> cost = {1, 2,  //
                                    2, 100};
  Result<Assignment> result = MinCostAssignment(cost, 2, 2);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->column_of_row, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(result->total_cost, 4);
}

TEST(MinCostAssignmentTest, ThreeByThreeHandChecked) {
  // Optimum: row 0 -> 1 (1), row 1 -> 0 (2), row 2 -> 2 (2) = 5.
  const std::vector<double> cost = {4, 1, 3,  //
                                    2, 0, 5,  //
                                    3, 2, 2};
  Result<Assignment> result = MinCostAssignment(cost, 3, 3);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->column_of_row, (std::vector<int>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(result->total_cost, 5);
}

TEST(MinCostAssignmentTest, NegativeCostsAndASingleEntry) {
  const std::vector<double> cost = {-1, 0,  //
                                    0, -1};
  Result<Assignment> result = MinCostAssignment(cost, 2, 2);
  ASSERT_TRUE(result.ok());
  EXPECT_DOUBLE_EQ(result->total_cost, -2);
  Result<Assignment> one = MinCostAssignment(std::vector<double>{7.5}, 1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->column_of_row, (std::vector<int>{0}));
  EXPECT_DOUBLE_EQ(one->total_cost, 7.5);
}

TEST(MinCostAssignmentTest, RectangularMatchesTheSmallerSideEitherWay) {
  // 2 x 3: the optimum is row 0 -> 1 (2), row 1 -> 0 (2) = 4; column 2 stays unmatched.
  const std::vector<double> wide = {1, 2, 3,  //
                                    2, 4, 6};
  Result<Assignment> result = MinCostAssignment(wide, 2, 3);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->column_of_row, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(result->total_cost, 4);
  // Its transpose, 3 x 2: row 2 stays unmatched (-1).
  const std::vector<double> tall = {1, 2,  //
                                    2, 4,  //
                                    3, 6};
  Result<Assignment> transposed = MinCostAssignment(tall, 3, 2);
  ASSERT_TRUE(transposed.ok());
  EXPECT_EQ(transposed->column_of_row, (std::vector<int>{1, 0, -1}));
  EXPECT_DOUBLE_EQ(transposed->total_cost, 4);
}

TEST(MinCostAssignmentTest, MatchesBruteForceOnRandomMatrices) {
  std::mt19937_64 rng(2024);
  const auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  struct Shape {
    size_t rows, cols;
  };
  for (const Shape shape : {Shape{6, 6}, Shape{4, 6}, Shape{6, 4}, Shape{1, 5}, Shape{5, 1}}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<double> cost(shape.rows * shape.cols);
      // Half the trials use small integers, so that many matchings tie for the optimum.
      for (double& c : cost) c = trial % 2 ? std::floor(uniform() * 4) : uniform() * 10 - 3;
      Result<Assignment> result = MinCostAssignment(cost, shape.rows, shape.cols);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      ExpectValidMatching(*result, cost, shape.rows, shape.cols);
      EXPECT_NEAR(result->total_cost, BruteForce(cost, shape.rows, shape.cols), 1e-9)
          << shape.rows << " x " << shape.cols << " trial " << trial;
      // Deterministic: the same matrix gives the same matching.
      EXPECT_EQ(MinCostAssignment(cost, shape.rows, shape.cols)->column_of_row,
                result->column_of_row);
    }
  }
}

TEST(MinCostCapacitatedAssignmentTest, EqualsTheAssignmentOfTheRepeatedColumns) {
  // Each column of capacity k is k interchangeable columns of capacity 1.
  std::mt19937_64 rng(7);
  const auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  struct Shape {
    size_t cols, capacity;
  };
  for (const Shape shape :
       {Shape{1, 1}, Shape{1, 4}, Shape{3, 2}, Shape{5, 5}, Shape{20, 5}, Shape{37, 3}}) {
    const size_t rows = shape.cols * shape.capacity;
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<double> cost(rows * shape.cols);
      // Half the trials use small integers, so that many plans tie for the optimum.
      for (double& c : cost) c = trial % 2 ? std::floor(uniform() * 4) : uniform() * 10 - 3;
      std::vector<double> repeated(rows * rows);
      for (size_t i = 0; i < rows; ++i) {
        for (size_t j = 0; j < rows; ++j)
          repeated[i * rows + j] = cost[i * shape.cols + j / shape.capacity];
      }
      Result<Assignment> capacitated =
          MinCostCapacitatedAssignment(cost, rows, shape.cols, shape.capacity);
      ASSERT_TRUE(capacitated.ok()) << capacitated.status().ToString();
      Result<Assignment> reference = MinCostAssignment(repeated, rows, rows);
      ASSERT_TRUE(reference.ok());
      EXPECT_NEAR(capacitated->total_cost, reference->total_cost, 1e-9)
          << rows << " x " << shape.cols << " trial " << trial;
      // A valid plan: every row placed, every column exactly full, the total its cost.
      std::vector<size_t> load(shape.cols, 0);
      double total = 0;
      for (size_t i = 0; i < rows; ++i) {
        const int j = capacitated->column_of_row[i];
        ASSERT_GE(j, 0);
        ASSERT_LT(static_cast<size_t>(j), shape.cols);
        ++load[static_cast<size_t>(j)];
        total += cost[i * shape.cols + static_cast<size_t>(j)];
      }
      for (size_t l : load) EXPECT_EQ(l, shape.capacity);
      EXPECT_DOUBLE_EQ(capacitated->total_cost, total);
    }
  }
}

TEST(MinCostCapacitatedAssignmentTest, RejectsRowsThatDoNotFillTheColumns) {
  const std::vector<double> six = {1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(MinCostCapacitatedAssignment(six, 3, 2, 2).status().code() ==
              ErrorCode::kInvalidArgument);
  EXPECT_EQ(MinCostCapacitatedAssignment(six, 6, 1, 0).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(MinCostCapacitatedAssignment(six, 6, 1, 6).ok());
  std::vector<double> bad = six;
  bad[2] = NAN;
  EXPECT_EQ(MinCostCapacitatedAssignment(bad, 6, 1, 6).status().code(), ErrorCode::kNonFinite);
}

TEST(MinCostAssignmentTest, RejectsBadInput) {
  const std::vector<double> four = {1, 2, 3, 4};
  EXPECT_EQ(MinCostAssignment({}, 0, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MinCostAssignment(four, 0, 4).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MinCostAssignment(four, 2, 3).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MinCostAssignment(four, 1, 3).status().code(), ErrorCode::kInvalidArgument);
  for (double bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<double> cost = four;
    cost[3] = bad;
    EXPECT_EQ(MinCostAssignment(cost, 2, 2).status().code(), ErrorCode::kNonFinite) << bad;
  }
  std::vector<double> huge = four;
  huge[0] = 1e200;
  EXPECT_EQ(MinCostAssignment(huge, 2, 2).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MinCostAssignment(four, 4096, 4096).status().code(), ErrorCode::kTooMany);
}

}  // namespace
}  // namespace meshlearn::similarity
