// The store of latest update directions and its FLIC / OCFL matrices
// (similarity/update_directions.h).

#include "similarity/update_directions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace meshlearn::similarity {
namespace {

TEST(UpdateDirectionsTest, CosinesAndMatricesInIdOrder) {
  UpdateDirections store;
  // Observed out of id order: c, a, b.
  ASSERT_TRUE(store.Observe("c", std::vector<float>{1, 1}).ok());
  ASSERT_TRUE(store.Observe("a", std::vector<float>{1, 0}).ok());
  ASSERT_TRUE(store.Observe("b", std::vector<float>{0, 2}).ok());
  EXPECT_EQ(store.Ids(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_NEAR(store.Cosine("a", "c"), 1 / std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(store.Cosine("a", "b"), 0, 1e-12);
  EXPECT_EQ(store.Cosine("b", "b"), 1);
  EXPECT_TRUE(std::isnan(store.Cosine("a", "zz")));

  const NodeMatrix s = store.Similarity();
  EXPECT_EQ(s.ids, store.Ids());
  const double h = 1 + 1 / std::sqrt(2.0);
  const std::vector<double> expected_s = {2, 1, h,  //
                                          1, 2, h,  //
                                          h, h, 2};
  ASSERT_EQ(s.values.size(), 9u);
  for (size_t k = 0; k < 9; ++k) EXPECT_NEAR(s.values[k], expected_s[k], 1e-12) << k;

  const NodeMatrix d = store.CosineDistance();
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(d.at(i, j), 2 - s.at(i, j), 1e-12);
    EXPECT_EQ(d.at(i, i), 0);
  }
  const std::vector<std::string> some = {"c", "zz", "a"};
  const NodeMatrix restricted = store.CosineDistance(some);
  EXPECT_EQ(restricted.ids, (std::vector<std::string>{"a", "c"}));
  EXPECT_NEAR(restricted.at(0, 1), 1 - 1 / std::sqrt(2.0), 1e-12);
}

TEST(UpdateDirectionsTest, ANewerDirectionReplacesTheOldOneAndItsCosines) {
  UpdateDirections store;
  ASSERT_TRUE(store.Observe("a", std::vector<float>{1, 0}).ok());
  ASSERT_TRUE(store.Observe("b", std::vector<float>{0, 1}).ok());
  ASSERT_TRUE(store.Observe("c", std::vector<float>{-1, 0}).ok());
  EXPECT_NEAR(store.Cosine("a", "b"), 0, 1e-12);
  ASSERT_TRUE(store.Observe("b", std::vector<float>{3, 0}).ok());
  EXPECT_EQ(store.size(), 3u);
  EXPECT_NEAR(store.Cosine("a", "b"), 1, 1e-12);
  EXPECT_NEAR(store.Cosine("c", "b"), -1, 1e-12);
  EXPECT_NEAR(store.Cosine("a", "c"), -1, 1e-12);  // untouched pair kept
  EXPECT_NEAR(store.Similarity().at(0, 2), 0, 1e-12);
}

TEST(UpdateDirectionsTest, ForgetRemovesANode) {
  UpdateDirections store;
  ASSERT_TRUE(store.Observe("a", std::vector<float>{1, 0}).ok());
  ASSERT_TRUE(store.Observe("b", std::vector<float>{1, 1}).ok());
  ASSERT_TRUE(store.Forget("a").ok());
  EXPECT_FALSE(store.Has("a"));
  EXPECT_EQ(store.Ids(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(store.Similarity().values, (std::vector<double>{2}));
  EXPECT_EQ(store.Forget("a").code(), ErrorCode::kNotFound);
}

TEST(UpdateDirectionsTest, RejectsBadDirectionsAndChangesNothing) {
  UpdateDirections store;
  ASSERT_TRUE(store.Observe("a", std::vector<float>{1, 0, 0}).ok());
  EXPECT_EQ(store.Observe("", std::vector<float>{1, 0, 0}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.Observe("b", std::vector<float>{}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.Observe("b", std::vector<float>{0, 0, 0}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store.Observe("b", std::vector<float>{1, NAN, 0}).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(store.Observe("b", std::vector<float>{1, 0}).code(), ErrorCode::kLayoutMismatch);
  EXPECT_EQ(store.Observe("a", std::vector<float>{INFINITY, 0, 0}).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(store.Ids(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(store.Cosine("a", "a"), 1);
}

}  // namespace
}  // namespace meshlearn::similarity
