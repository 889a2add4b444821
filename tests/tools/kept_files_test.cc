// Every file results/ keeps reads back through the strict reader of its description
// (docs/DESIGN.md "Files described once"), and renders back to the same bytes in the layout it was
// read in. A file of an older layout (columns added since) is upgraded by the same description:
// the test names those files and checks that the upgrade reads back equal. A manifest's launch of
// a build that was not clean was told to write there (--allow-dirty).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/csv_table.h"
#include "node/host/outputs.h"
#include "process/build_identity.h"
#include "tools/fuzz/fuzz.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "tools/report/bytes_to_target.h"
#include "tools/report/report.h"
#include "tools/scenario/full_test_csv.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/summary_csv.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// What the walk over results/ found, by kind of file.
struct Tally {
  std::map<std::string, int> read;  // kind -> files read
  std::map<std::string, int> same;  // kind -> files rendered back to their bytes
  // kind -> how some of them differ from what is written today -> how many files.
  std::map<std::string, std::map<std::string, int>> upgraded;
};

// `text` with its "nan" cells empty: files written before ExactNumber spelled NaN so
// (base/number_text.h, kExactNumberForm); it reads as NaN and is written as an empty cell.
std::string WithNanEmpty(std::string text) {
  for (const char* nan : {",nan,", ",nan\n"}) {
    for (size_t at; (at = text.find(nan)) != std::string::npos;) text.erase(at + 1, 3);
  }
  return text;
}

// Reads `text` of file `path` by Row's description, renders it back in its own layout (the same
// bytes, but "nan" cells, which come back empty) and, when it is of an older layout, in the
// current one (read back equal).
template <class Row>
void CheckCsv(const std::string& kind, const std::string& path, const std::string& text,
              Tally& tally) {
  auto table = ReadCsv<Row>(text, path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const std::string rendered = RenderCsv<Row>(table->rows, table->layout);
  if (rendered != text) {
    EXPECT_EQ(rendered, WithNanEmpty(text)) << path;
    ++tally.upgraded[kind]["with 'nan' cells, which render back empty"];
  } else {
    ++tally.same[kind];
  }
  const std::vector<std::string> missing = table->layout.Missing();
  if (!missing.empty()) {
    std::string columns;
    for (const std::string& c : missing) {
      if (!columns.empty()) columns += ',';
      columns += c;
    }
    ++tally.upgraded[kind]["written before the columns " + columns +
                           " (rendered today with them, read back equal)"];
    CsvLayout current = LayoutOf<Row>(table->rows);
    EXPECT_TRUE(current.Missing().empty());
    const std::string upgraded = RenderCsv<Row>(table->rows, current);
    auto again = ReadCsv<Row>(upgraded, path + " (upgraded)");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(RenderCsv<Row>(again->rows, again->layout), upgraded) << path;
  }
  ++tally.read[kind];
}

// The matrix of heatmap.csv: read by plot's reader, written back by its writer.
void CheckMatrix(const std::string& path, const std::string& text, Tally& tally) {
  auto matrix = plot::ReadMatrixCsv(path);
  ASSERT_TRUE(matrix.ok()) << matrix.status().ToString();
  const std::string again = ::testing::TempDir() + "/kept_files_matrix.csv";
  ASSERT_TRUE(plot::WriteMatrixCsv(again, *matrix).ok());
  EXPECT_EQ(ReadWholeFile(again).value(), text) << path;
  ++tally.read["heatmap.csv"];
  ++tally.same["heatmap.csv"];
}

// `text` after its opening comment lines and the blank line that ends them.
std::string AfterComment(const std::string& text) {
  size_t at = 0;
  while (text.compare(at, 1, "#") == 0) at = text.find('\n', at) + 1;
  return text.substr(text.compare(at, 1, "\n") == 0 ? at + 1 : at);
}

// A launch whose build's tree was not clean wrote into results/ only when told so
// (tools/layout/kept_results.h): its command has --allow-dirty, and it recorded its diff hash
// when its commit is known. Manifests written before builds knew their tree say nothing.
void ExpectDirtyBuildsAllowed(const std::string& path, const std::vector<LaunchRecord>& launches) {
  for (const LaunchRecord& launch : launches) {
    if (!launch.clean.has_value() || *launch.clean) continue;
    EXPECT_NE(std::find(launch.command.begin(), launch.command.end(), "--allow-dirty"),
              launch.command.end())
        << path << ": a launch of a build whose tree was not clean (commit "
        << launch.commit.value_or("?") << ") without --allow-dirty";
    if (launch.commit != node::kUnknownCommit) {
      EXPECT_TRUE(launch.diff_hash.has_value()) << path << ": a dirty build without its diff_hash";
    }
  }
}

// A manifest (a launch's or, beside fuzz.csv, a fuzz run's) renders back its bytes; one whose
// opening comment an earlier launcher wrote (the comment is not read) renders back its keys' bytes
// under today's comment. Its dirty builds were allowed (ExpectDirtyBuildsAllowed).
template <class Record>
void CheckManifest(const std::string& kind, const std::string& path, const std::string& text,
                   Result<Record> (*parse)(const std::string&, const std::string&),
                   std::string (*render)(const Record&), Tally& tally) {
  auto manifest = parse(text, path);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const std::string rendered = render(*manifest);
  if (rendered != text) {
    EXPECT_EQ(AfterComment(rendered), AfterComment(text)) << path;
    ++tally.upgraded[kind]
                    ["with an earlier launcher's opening comment (not read; today's is written)"];
  } else {
    ++tally.same[kind];
  }
  ExpectDirtyBuildsAllowed(path, manifest->launches);
  ++tally.read[kind];
}

// Reads the file at `path` by its name; a kept file that no description names fails.
void CheckKeptFile(const fs::path& path, Tally& tally) {
  const std::string name = path.filename().string();
  if (name == "README.md") return;  // the folder's guide, not an output
  auto text = ReadWholeFile(path.string());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::string p = path.string();
  if (name == "manifest.toml" && fs::exists(path.parent_path() / kFuzzSummaryFile)) {
    return CheckManifest<FuzzManifest>("manifest.toml (fuzz)", p, *text, ParseFuzzManifest,
                                       RenderFuzzManifest, tally);
  }
  if (name == "manifest.toml") {
    return CheckManifest<Manifest>(name, p, *text, ParseManifest, RenderManifest, tally);
  }
  if (name == "summary.csv") return CheckCsv<MethodSummary>(name, p, *text, tally);
  if (name == "simulation.csv") return CheckCsv<SimulationRow>(name, p, *text, tally);
  if (name == "network.csv") return CheckCsv<NetworkRow>(name, p, *text, tally);
  if (name == "full_test.csv") return CheckCsv<FullTestRow>(name, p, *text, tally);
  if (name == "fuzz.csv") return CheckCsv<FuzzFigure>(name, p, *text, tally);
  if (name == "bytes_to_target.csv") return CheckCsv<BytesToTargetRow>(name, p, *text, tally);
  if (name == "bytes_to_target_mean.csv") {
    return CheckCsv<BytesToTargetMean>(name, p, *text, tally);
  }
  if (name == "heatmap.csv") return CheckMatrix(p, *text, tally);
  // results/README.md: a slow node's rounds.csv is kept as slow-node-<id>.csv.
  if (name.starts_with("slow-node-") && name.ends_with(".csv")) {
    return CheckCsv<node::RoundRow>("rounds.csv (slow-node-<id>.csv)", p, *text, tally);
  }
  ADD_FAILURE() << p << ": a kept file that no description reads";
}

TEST(KeptFiles, EveryFileInResultsReadsBackEqual) {
  const fs::path results = fs::path(MESHLEARN_SOURCE_DIR) / "results";
  ASSERT_TRUE(fs::is_directory(results)) << results;
  Tally tally;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(results)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    CheckKeptFile(file, tally);
  }
  int total = 0;
  for (const auto& [kind, count] : tally.read) {
    total += count;
    std::printf("%s: %d read, %d render back their bytes in the layout they were read in\n",
                kind.c_str(), count, tally.same[kind]);
    for (const auto& [how, files] : tally.upgraded[kind]) {
      std::printf("  %d %s: upgraded by the reader\n", files, how.c_str());
    }
  }
  // Every file but the guides was read; the counts keep a file from slipping past unread.
  const auto guides = std::count_if(files.begin(), files.end(),
                                    [](const fs::path& f) { return f.filename() == "README.md"; });
  EXPECT_EQ(total + guides, static_cast<long>(files.size()));
  EXPECT_GT(tally.read["manifest.toml"], 0);
  EXPECT_EQ(tally.read["manifest.toml"], tally.read["summary.csv"]);
}

}  // namespace
}  // namespace meshlearn::launch
