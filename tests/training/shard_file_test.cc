// Shard files round-trip exactly, and a corrupt, truncated, foreign or missing shard gives a
// clear error instead of a partial load.

#include "training/shard_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/training/test_support.h"

namespace meshlearn::training {
namespace {

using testing::TempDir;

std::vector<ClientShard> SomeShards(ShiftKind shift) {
  const Dataset pool = testing::MakeImagePool(300, 4, 0, 6);
  PartitionConfig c = testing::SizedConfig(shift, 4, 30, 7, 9, 3);
  c.rotations_deg = {0, 33};
  auto shards =
      shift == ShiftKind::kSynthetic ? BuildClientShards({}, c) : BuildClientShards({{&pool}}, c);
  EXPECT_TRUE(shards.ok()) << shards.status().ToString();
  return *shards;
}

TEST(ShardFile, WriteThenReadRoundTripsExactly) {
  const std::string dir = TempDir();
  for (ShiftKind shift : {ShiftKind::kCovariate, ShiftKind::kSynthetic}) {
    for (const ClientShard& shard : SomeShards(shift)) {
      const std::string path = ShardPath(dir + "/" + ShiftKindName(shift), shard.client_id);
      ASSERT_TRUE(WriteShard(path, shard).ok());
      Result<ClientShard> back = ReadShard(path);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(*back, shard);
      EXPECT_EQ(EncodeShard(*back), testing::ReadAll(path));
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/covariate/client-3.shard"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/covariate/client-3.shard.tmp"));
}

TEST(ShardFile, EveryFlippedByteIsDetected) {
  const std::string bytes = EncodeShard(SomeShards(ShiftKind::kNone)[0]);
  for (size_t at = 0; at < bytes.size(); at += 97) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x5A);
    Result<ClientShard> r = DecodeShard(bad, "x.shard");
    ASSERT_FALSE(r.ok()) << "flip at byte " << at << " went unnoticed";
    EXPECT_EQ(r.status().message().rfind("x.shard: ", 0), 0u) << r.status().ToString();
  }
  std::string bad = bytes;
  bad[bytes.size() / 2] ^= 1;
  EXPECT_NE(DecodeShard(bad, "x.shard").status().message().find("checksum mismatch"),
            std::string::npos);
}

TEST(ShardFile, TruncatedForeignAndNewerFilesAreRejected) {
  const std::string dir = TempDir();
  const std::string bytes = EncodeShard(SomeShards(ShiftKind::kNone)[1]);
  for (size_t keep : {size_t{0}, size_t{5}, size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
    const std::string path = dir + "/cut.shard";
    testing::WriteFile(path, bytes.substr(0, keep));
    Result<ClientShard> r = ReadShard(path);
    EXPECT_EQ(r.status().code(), ErrorCode::kMalformed) << keep;
    EXPECT_NE(r.status().message().find(path), std::string::npos);
  }
  Result<ClientShard> foreign = DecodeShard("GIF89a and more bytes here", "pic.shard");
  EXPECT_NE(foreign.status().message().find("not a meshlearn shard file"), std::string::npos);
  std::string newer = bytes;
  newer[8] = 2;
  EXPECT_EQ(DecodeShard(newer, "n.shard").status().code(), ErrorCode::kUnsupportedVersion);
  Result<ClientShard> missing = ReadShard(dir + "/absent.shard");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("absent.shard"), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::training
