// `meshlearn-launch bytes-to-target` on two real simulated runs of the quickstart, uncompressed
// and int8 (issue 31, "Bytes to target").
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>

#include "base/csv.h"
#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

// True when `cell` is a whole decimal number (a finite one when `fraction`).
bool IsNumber(const std::string& cell, bool fraction) {
  double value = 0;
  const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  return !cell.empty() && ec == std::errc() && ptr == cell.data() + cell.size() &&
         std::isfinite(value) && (fraction || value == std::floor(value));
}

TEST(BytesToTarget, Int8SendsFewerBytesThanNoneAndTheTableIsWellFormed) {
  const std::string dir = ::testing::TempDir() + "/e2e_bytes_to_target";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string scenario = std::string(MESHLEARN_SOURCE_DIR) + "/configs/quickstart.toml";
  for (const std::string codec : {"none", "int8"}) {
    Finished run =
        RunToEnd({MESHLEARN_LAUNCH_BIN, scenario, "--simulate", "--methods", "cos_weights",
                  "--nodes", "4", "--set", "node.training.rounds=3", "--set",
                  "node.compression.codec=" + codec, "--out", dir + "/" + codec},
                 dir + "/" + codec + ".log");
    ASSERT_TRUE(ExitedWith(run.status, 0)) << run.log;
  }
  const std::string table = dir + "/table";
  Finished measured = RunToEnd({MESHLEARN_LAUNCH_BIN, "bytes-to-target", dir + "/int8",
                                "--baseline", dir + "/none", "--out", table},
                               dir + "/table.log");
  ASSERT_TRUE(ExitedWith(measured.status, 0)) << measured.log;
  EXPECT_NE(measured.log.find("cos_weights  int8"), std::string::npos) << measured.log;

  const std::string path = table + "/bytes_to_target.csv";
  auto records = ParseCsv(ReadText(path), path);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 3u) << "a header, the baseline's row and the int8 run's";
  const std::vector<std::string> header = {"run",         "method",       "codec",
                                           "seed",        "baseline",     "final_acc",
                                           "target_acc",  "target_round", "bytes_to_target",
                                           "bytes_total", "ratio",        "time_to_target_s"};
  ASSERT_EQ((*records)[0].fields, header);
  for (size_t r = 1; r < 3; ++r) {
    const std::vector<std::string>& row = (*records)[r].fields;
    ASSERT_EQ(row.size(), header.size()) << path << " line " << (*records)[r].line;
    EXPECT_EQ(row[0], dir + (r == 1 ? "/none" : "/int8"));
    EXPECT_EQ(row[1], "cos_weights");
    EXPECT_EQ(row[2], r == 1 ? "none" : "int8") << "read from the nodes' node.toml";
    EXPECT_EQ(row[3], "1") << "the quickstart's seed, from manifest.toml";
    EXPECT_EQ(row[4], dir + "/none");
    ASSERT_TRUE(IsNumber(row[5], true) && IsNumber(row[6], true)) << row[5] << " " << row[6];
    EXPECT_GE(std::stod(row[5]), 0);
    EXPECT_LE(std::stod(row[5]), 100);
    // Reached: round, bytes and ratio; never: all three empty (the baseline always reaches its
    // own target).
    if (!row[7].empty()) {
      EXPECT_TRUE(IsNumber(row[7], false) && IsNumber(row[8], false) && IsNumber(row[10], true))
          << (*records)[r].line;
    } else {
      EXPECT_EQ(r, 2u) << "the baseline reaches its own target";
      EXPECT_EQ(row[8] + row[10], "");
    }
    EXPECT_TRUE(IsNumber(row[9], false)) << row[9];
  }
  const double none_total = std::stod((*records)[1].fields[9]);
  const double int8_total = std::stod((*records)[2].fields[9]);
  // int8 sends one byte and a 128th of a scale per weight instead of four: under half the bytes
  // even with the messages that are not models.
  EXPECT_LT(int8_total, none_total / 2) << ReadText(path);
  EXPECT_EQ((*records)[1].fields[10], "1");

  auto means = ParseCsv(ReadText(table + "/bytes_to_target_mean.csv"), "mean");
  ASSERT_TRUE(means.ok()) << means.status().ToString();
  ASSERT_EQ(means->size(), 3u) << "one row per codec";
  EXPECT_EQ((*means)[2].fields[1], "int8");
}

}  // namespace
}  // namespace meshlearn::e2e
