// The base library: Status/Result, parameter layouts, shared float arrays, atomic file writes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/deflate.h"
#include "base/float_array.h"
#include "base/param_layout.h"
#include "base/stable_hash.h"
#include "base/status.h"
#include "tests/fresh_dir.h"

namespace meshlearn {
namespace {

std::string TempDir() { return testing::FreshTestDir("meshlearn-base-test"); }

TEST(Status, NamesAndContext) {
  Status s = Status::TooLarge("frame is big").WithContext("peer node-3");
  EXPECT_EQ(s.ToString(), "too_large: peer node-3: frame is big");
  EXPECT_EQ(Status().ToString(), "OK");
  EXPECT_STREQ(ErrorCodeName(static_cast<ErrorCode>(999)), "unknown");
  Result<int> r = Status::Ok();  // an OK status without a value is a bug, reported as internal
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

TEST(Layout, ValidateExplainsTheProblem) {
  ParamLayout dup = MakeContiguousLayout({{"a", {2}}, {"a", {2}}});
  EXPECT_NE(dup.Validate().message().find("twice"), std::string::npos);
  ParamLayout ok = MakeContiguousLayout({{"w", {4, 5}}, {"b", {5}}, {"s", {}}});
  EXPECT_TRUE(ok.Validate().ok());
  EXPECT_EQ(ok.total_floats(), 26u);
}

TEST(Layout, ValidateRejectsElementCountsBeyond64Bits) {
  ParamLayout product = MakeContiguousLayout({{"w", {1ll << 40, 1ll << 40}}});
  EXPECT_EQ(product.Validate().code(), ErrorCode::kLayoutMismatch);
  ParamLayout sum =
      MakeContiguousLayout({{"a", {1ll << 40, 1ll << 23}}, {"b", {1ll << 40, 1ll << 23}}});
  EXPECT_EQ(sum.Validate().code(), ErrorCode::kLayoutMismatch);
  EXPECT_NE(sum.Validate().message().find("'b'"), std::string::npos) << sum.Validate().message();
  ParamLayout empty = MakeContiguousLayout({{"w", {1ll << 40, 0, 1ll << 40, 1ll << 40}}});
  EXPECT_TRUE(empty.Validate().ok()) << empty.Validate().ToString();
  EXPECT_EQ(empty.total_floats(), 0u);
}

TEST(FloatArray, CopiesShareTheValuesAndAViewKeepsItsOwnerAlive) {
  FloatArray owned = FloatArray::Own({1.f, 2.f, 3.f});
  FloatArray copy = owned;
  EXPECT_EQ(copy.view().data(), owned.view().data());
  FloatArray tail = FloatArray::View(owned.view().data() + 1, 2, owned.owner());
  owned = FloatArray();
  copy = FloatArray();
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail.view()[0], 2.f);
  EXPECT_EQ(tail.view()[1], 3.f);
  EXPECT_EQ(tail, FloatArray::Own({2.f, 3.f}));
  EXPECT_FALSE(tail == FloatArray::Own({2.f}));
}

TEST(FloatArray, CheckFiniteNamesTheFirstBadIndex) {
  std::vector<float> values(100, 0.5f);
  EXPECT_TRUE(CheckFinite(values).ok());
  values[41] = std::numeric_limits<float>::infinity();
  values[77] = std::numeric_limits<float>::quiet_NaN();
  Status bad = CheckFinite(values);
  EXPECT_EQ(bad.code(), ErrorCode::kNonFinite);
  EXPECT_NE(bad.message().find("#41 of 100"), std::string::npos) << bad.ToString();
}

// The check is vectorised in blocks with a scalar tail: a single bad value is found wherever it
// sits (first, inside a block, at a block's edge, in the tail), whatever its kind.
TEST(FloatArray, CheckFiniteFindsOneBadValueAtAnyPosition) {
  const size_t size = 1027;  // not a multiple of any vector width
  const std::vector<size_t> positions = {0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 511, 1000, 1024, 1026};
  const float kinds[] = {std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(), -std::nanf("0x1")};
  std::vector<float> values(size, -3.0e38f);  // large finite values: all exponent bits but one
  ASSERT_TRUE(CheckFinite(values).ok());
  for (size_t position : positions) {
    for (float bad : kinds) {
      std::vector<float> with_bad = values;
      with_bad[position] = bad;
      Status status = CheckFinite(with_bad);
      EXPECT_EQ(status.code(), ErrorCode::kNonFinite) << position;
      std::string index = "#";
      index += std::to_string(position);
      EXPECT_NE(status.message().find(index + " of 1027"), std::string::npos) << status.ToString();
    }
  }
}

TEST(AtomicFile, ReplacesWholeFilesAndReportsMissingOnes) {
  const std::string path = TempDir() + "/nested/folder/file.bin";
  ASSERT_TRUE(WriteFileAtomically(path, std::string("first version, long", 19)).ok());
  ASSERT_TRUE(WriteFileAtomically(path, std::string("2nd\0", 4)).ok());
  Result<std::string> back = ReadWholeFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, std::string("2nd\0", 4));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(ReadWholeFile(path + ".absent").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(WriteFileAtomically("/proc/meshlearn/x", "y").code(), ErrorCode::kIoError);
}

TEST(StableHash, ValuesAreFrozenAndTheSeedIsMixedIntoTheBasis) {
  // Frozen: seeds of every run derive from these values.
  EXPECT_EQ(StableHash(""), 1469598103934665603ull);
  EXPECT_EQ(StableHash("a"), 4953267810257967366ull);
  EXPECT_EQ(StableHash("", 7), 1469598103934665603ull ^ 7);
  EXPECT_NE(StableHash("node-1", 1), StableHash("node-1", 2));
  EXPECT_NE(StableHash("node-1", 1), StableHash("node-2", 1));
}

TEST(Deflate, BytesComeBackWholeAndACheckpointsNumbersShrink) {
  // A node's generator state as a checkpoint holds it: 312 decimal numbers.
  std::string numbers;
  for (uint64_t i = 0; i < 312; ++i) numbers += std::to_string(i * 0x9E3779B97F4A7C15ull) + " ";
  numbers += std::string("\0binary\xff", 9);
  DeflatedBytes packed = Deflate(numbers);
  EXPECT_EQ(packed.size, numbers.size());
  EXPECT_LT(packed.deflated.size(), numbers.size() * 6 / 10) << "digits take under 4 bits each";
  Result<std::string> back = Inflate(packed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, numbers);

  Result<std::string> empty = Inflate(Deflate(""));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");

  DeflatedBytes damaged = packed;
  damaged.deflated[damaged.deflated.size() / 2] ^= 0x5a;
  damaged.deflated.resize(damaged.deflated.size() - 4);
  EXPECT_EQ(Inflate(damaged).status().code(), ErrorCode::kInternal);
  DeflatedBytes wrong_size = packed;
  wrong_size.size += 1;
  EXPECT_EQ(Inflate(wrong_size).status().code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace meshlearn
