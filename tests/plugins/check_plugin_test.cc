// `check-plugin` (plugins/check_plugin.h): the plug-in point comes from forward's signature, a
// good file's report says what it returned, and a file that breaks its contract, or a symmetric
// metric that is not, is the error.
#include "plugins/check_plugin.h"

#include <gtest/gtest.h>

#include <optional>

#include "tests/plugins/plugin_test_support.h"

namespace meshlearn::plugins {
namespace {

using testing::Example;
using testing::ExpectError;
using testing::Fixture;

// The kind of the file at `path`; a test failure, and nullopt, when it has none.
std::optional<PlugInKind> KindOf(const std::string& path) {
  Result<PlugInKind> kind = PlugInKindOf(path);
  EXPECT_TRUE(kind.ok()) << kind.status().ToString();
  return kind.ok() ? std::optional<PlugInKind>(*kind) : std::nullopt;
}

TEST(CheckPlugIn, FindsThePlugInPointFromTheSignature) {
  EXPECT_EQ(KindOf(Example("cos_weights")), PlugInKind::kMetric);
  EXPECT_EQ(KindOf(Fixture("metric_inverse_loss")), PlugInKind::kMetric);
  EXPECT_EQ(KindOf(Example("geometric_median")), PlugInKind::kMerge);
  EXPECT_EQ(KindOf(Example("min_max")), PlugInKind::kAttack);
  ExpectError(PlugInKindOf(Fixture("metric_two_arguments")).status(), ErrorCode::kInvalidArgument,
              {Fixture("metric_two_arguments"), "no plug-in's"});
  ExpectError(PlugInKindOf("/nonexistent.pt").status(), ErrorCode::kNotFound, {"/nonexistent.pt"});
}

TEST(CheckPlugIn, ReportsWhatEachTrialReturned) {
  auto metric = CheckPlugIn(Example("cos_weights"), 300, 4, 1);
  ASSERT_TRUE(metric.ok()) << metric.status().ToString();
  EXPECT_NE(metric->find("a similarity metric ([learning] metric"), std::string::npos) << *metric;
  EXPECT_NE(metric->find("symmetric yes"), std::string::npos) << *metric;
  EXPECT_NE(metric->find("trial 4: peer at distance"), std::string::npos) << *metric;
  EXPECT_NE(metric->find("ok: 4 trials on models of 300 floats"), std::string::npos) << *metric;
  auto merge = CheckPlugIn(Example("fedavg"), 300, 5, 1);
  ASSERT_TRUE(merge.ok()) << merge.status().ToString();
  EXPECT_NE(merge->find("trial 5: 5 peers: merged model norm"), std::string::npos) << *merge;
  auto attack = CheckPlugIn(Example("min_max"), 300, 4, 1);
  ASSERT_TRUE(attack.ok()) << attack.status().ToString();
  EXPECT_NE(attack->find("trial 4: 3 fetched: served model norm"), std::string::npos) << *attack;
}

TEST(CheckPlugIn, AFaultIsTheErrorWithItsTrial) {
  ExpectError(CheckPlugIn(Fixture("merge_short_result"), 64, 3, 1).status(),
              ErrorCode::kLayoutMismatch, {"the probe with 1 peer of 64 floats"});
  // every_third_nan passes the probe (call 1) and trial 1 (call 2), and fails trial 2.
  ExpectError(CheckPlugIn(Fixture("metric_every_third_nan"), 64, 3, 1).status(),
              ErrorCode::kNonFinite, {"trial 2", "not a finite score"});
  ExpectError(CheckPlugIn(Fixture("metric_false_symmetric"), 64, 3, 1).status(),
              ErrorCode::kInvalidArgument, {"symmetric = True, but trial 1 scores"});
}

}  // namespace
}  // namespace meshlearn::plugins
