// base/csv_table.h and base/toml_table.h: a file described once is written and read back by the
// same description; old layouts read and render back their bytes; strict errors name the file,
// the line, the column or key and what is allowed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/csv_table.h"
#include "base/file_lock.h"
#include "base/toml_table.h"

namespace meshlearn {
namespace {

constexpr std::string_view kStatuses[] = {"complete", "failed"};

// A row with a column of every kind, a group, a column added later and a feature's columns.
struct Row {
  std::string name;
  std::vector<double> per_cluster;
  double mean = 0;
  int64_t rounds = 0;
  bool stopped = false;
  std::string status = "complete";
  std::vector<std::string> peers;
  std::optional<double> epsilon;  // added later
  std::vector<double> full;       // a feature's group
  std::optional<double> full_mean;

  bool operator==(const Row&) const = default;

  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("method", r.name, TextCell{.quoted = true});
    c.Group("cluster_", r.per_cluster);
    c.Column("mean", r.mean);
    c.Column("rounds", r.rounds, WholeCell{.form = {.min = 0}});
    c.Column("stopped", r.stopped);
    c.Column("status", r.status, WordCell{kStatuses});
    c.Column("peers", r.peers);
    c.Column("epsilon", r.epsilon, Presence::kAddedLater);
    c.Group("full_cluster_", r.full, Presence::kWhenUsed);
    c.Column("full_mean", r.full_mean, Presence::kWhenUsed);
  }
};

Row Sample(const std::string& name) {
  Row r;
  r.name = name;
  r.per_cluster = {62.5, std::numeric_limits<double>::quiet_NaN()};
  r.mean = 0.1 + 0.2;
  r.rounds = 15;
  r.peers = {"3", "node,7"};
  r.epsilon = 1.5;
  return r;
}

TEST(CsvTable, RendersTheDescriptionAndReadsItBackEqual) {
  std::vector<Row> rows = {Sample("a, b"), Sample("c")};
  rows[1].stopped = true;
  rows[1].status = "failed";
  rows[1].epsilon.reset();
  const std::string text = RenderCsv<Row>(rows);
  EXPECT_EQ(text,
            "method,cluster_0,cluster_1,mean,rounds,stopped,status,peers,epsilon\n"
            "\"a, b\",62.5,,0.30000000000000004,15,0,complete,\"3;node,7\",1.5\n"
            "\"c\",62.5,,0.30000000000000004,15,1,failed,\"3;node,7\",\n");
  auto read = ReadCsv<Row>(text, "t.csv");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->rows.size(), 2u);
  EXPECT_EQ(read->rows[0].name, "a, b");
  EXPECT_TRUE(std::isnan(read->rows[0].per_cluster[1]));
  EXPECT_EQ(read->rows[1].peers, rows[1].peers);
  EXPECT_FALSE(read->rows[1].epsilon);
  EXPECT_TRUE(read->layout.Missing().empty());
  EXPECT_EQ(RenderCsv<Row>(read->rows, read->layout), text);
}

TEST(CsvTable, AFeaturesColumnsAppearWhenARowUsesThem) {
  std::vector<Row> rows = {Sample("a"), Sample("b")};
  rows[1].full = {80, 81};
  rows[1].full_mean = 80.5;
  const std::string text = RenderCsv<Row>(rows);
  EXPECT_NE(text.find(",epsilon,full_cluster_0,full_cluster_1,full_mean\n"), std::string::npos);
  EXPECT_NE(text.find(",1.5,,,\n"), std::string::npos) << "row a has none: empty cells";
  auto read = ReadCsv<Row>(text, "t.csv");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read->rows[0].full.empty()) << "all empty reads as none";
  EXPECT_EQ(read->rows[1].full, rows[1].full);
  EXPECT_EQ(RenderCsv<Row>(read->rows, read->layout), text);
}

// A file written before `epsilon` existed reads with its default and renders back its bytes in
// its own layout; in the current layout it gains the column, empty.
TEST(CsvTable, AnOlderLayoutReadsBackAndUpgrades) {
  const std::string old =
      "method,cluster_0,mean,rounds,stopped,status,peers\n"
      "\"a\",1,2,3,0,complete,\n";
  auto read = ReadCsv<Row>(old, "old.csv");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->layout.Missing(), std::vector<std::string>{"epsilon"});
  EXPECT_FALSE(read->rows[0].epsilon);
  EXPECT_EQ(RenderCsv<Row>(read->rows, read->layout), old);
  EXPECT_EQ(RenderCsv<Row>(read->rows),
            "method,cluster_0,mean,rounds,stopped,status,peers,epsilon\n"
            "\"a\",1,2,3,0,complete,,\n");
}

TEST(CsvTable, ErrorsNameTheFileLineColumnAndWhatIsAllowed) {
  auto error = [](const std::string& text) {
    auto read = ReadCsv<Row>(text, "t.csv");
    EXPECT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), ErrorCode::kMalformed);
    return read.status().message();
  };
  const std::string header = "method,cluster_0,mean,rounds,stopped,status,peers\n";
  std::string m = error("method,mean,cluster_0\n");
  EXPECT_NE(m.find("t.csv line 1, column 3: the column 'cluster_0' where the column 'rounds'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("allowed: the header method,cluster_0,cluster_1...,mean,rounds"),
            std::string::npos)
      << m;
  m = error(header + "a,1,2,3,0,complete,,extra\n");
  EXPECT_NE(m.find("t.csv line 2: 8 cells; allowed: 7"), std::string::npos) << m;
  m = error(header + "a,1,2,-3,0,complete,\n");
  EXPECT_NE(m.find("t.csv line 2, column 4 (rounds): '-3' is out of range; allowed: a whole "
                   "number >= 0"),
            std::string::npos)
      << m;
  m = error(header + "a,1,x,3,0,complete,\n");
  EXPECT_NE(m.find("column 3 (mean): 'x' is not a number"), std::string::npos) << m;
  m = error(header + "a,1,2,3,yes,complete,\n");
  EXPECT_NE(m.find("column 5 (stopped): 'yes' is not a flag; allowed: 1 or 0"), std::string::npos)
      << m;
  m = error(header + "a,1,2,3,0,done,\n");
  EXPECT_NE(m.find("column 6 (status): 'done' is not a word of this column; allowed: complete, "
                   "failed"),
            std::string::npos)
      << m;
  m = error(header.substr(0, header.size() - 1) + ",unknown\n");
  EXPECT_NE(m.find("column 8: the column 'unknown' is not one of this file's"), std::string::npos)
      << m;
  m = error("");
  EXPECT_NE(m.find("t.csv: empty; allowed: the header method,"), std::string::npos) << m;
}

// A record with a key of every kind, a sub-table and an array of tables.
struct Item {
  std::string id;
  std::optional<std::string> failure;
  std::map<std::string, uint64_t> refused;

  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& r) {
    keys.String("id", r.id);
    keys.OptionalString("failure", r.failure);
    keys.Counts("refused", r.refused);
  }
};

struct Record {
  int format = 2;
  std::string text;
  uint64_t seed = 0;
  int nodes = 0;
  double seconds = 0;
  double spent = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> simulated;
  bool running = true;
  std::vector<std::string> command;
  std::vector<size_t> outages;
  std::vector<std::pair<std::string, std::string>> host;
  std::string name;
  std::vector<Item> items;

  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& r) {
    keys.Format("format", r.format, 2);
    keys.String("text", r.text);
    keys.Integer("seed", r.seed);
    keys.Integer("nodes", r.nodes, {.min = 1});
    keys.Number("seconds", r.seconds, {.non_finite = true});
    keys.Number("spent", r.spent, {.empty_is_nan = true, .min = 0});
    keys.OptionalNumber("simulated", r.simulated);
    keys.Bool("running", r.running);
    keys.Strings("command", r.command);
    keys.Integers("outages", r.outages);
    keys.StringTable("host", r.host);
    keys.Table("scenario", [&](auto& sub) { sub.String("name", r.name); });
    keys.Tables("items", r.items);
  }
};

TEST(TomlTable, RendersTheDescriptionAndReadsItBackEqual) {
  Record r;
  r.text = "line 1\nline 2\n";
  r.seed = std::numeric_limits<uint64_t>::max();
  r.nodes = 3;
  r.seconds = std::numeric_limits<double>::quiet_NaN();
  r.simulated = 0.1 + 0.2;
  r.command = {"a", "b"};
  r.outages = {2, 5};
  r.host = {{"cores", "2"}, {"name", "vm"}};
  r.name = "quick";
  r.items = {{"n0", std::nullopt, {{"malformed", 3}}}, {"n1", "died", {}}};
  const std::string text = RenderToml(r);
  EXPECT_EQ(text.find("spent"), std::string::npos) << "NaN is not written: " << text;
  auto read = ParseToml<Record>(text, "r.toml");
  ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << text;
  EXPECT_EQ(read->text, r.text);
  EXPECT_EQ(read->seed, r.seed);
  EXPECT_TRUE(std::isnan(read->seconds));
  EXPECT_TRUE(std::isnan(read->spent));
  EXPECT_EQ(read->simulated, r.simulated);
  EXPECT_EQ(read->outages, r.outages);
  EXPECT_EQ(read->host, r.host);
  EXPECT_EQ(read->name, "quick");
  ASSERT_EQ(read->items.size(), 2u);
  EXPECT_EQ(read->items[0].refused, r.items[0].refused);
  EXPECT_EQ(read->items[1].failure, "died");
  EXPECT_EQ(RenderToml(*read), text);
}

TEST(TomlTable, ErrorsNameTheFileLineKeyAndWhatIsAllowed) {
  Record r;
  r.nodes = 1;
  const std::string text = RenderToml(r);
  auto error = [](const std::string& text) {
    auto read = ParseToml<Record>(text, "r.toml");
    EXPECT_FALSE(read.ok());
    return read.status();
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  Status s = error(replaced("format = 2", "format = 3"));
  EXPECT_EQ(s.code(), ErrorCode::kUnsupportedVersion) << s.ToString();
  s = error(replaced("nodes = 1", "nodes = 0"));
  EXPECT_EQ(s.code(), ErrorCode::kMalformed);
  EXPECT_NE(s.message().find("'nodes' = 0 must be a whole number in [1, 2147483647]"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("r.toml:"), std::string::npos) << s.ToString();
  s = error(replaced("nodes = 1", "nodes = 1\nextra = 1"));
  EXPECT_NE(s.message().find("unknown key 'extra'"), std::string::npos) << s.ToString();
  s = error(replaced("running = true\n", ""));
  EXPECT_NE(s.message().find("missing required key 'running'"), std::string::npos) << s.ToString();
  s = error(replaced("nodes = 1", "nodes = 1\nspent = -1"));
  EXPECT_NE(s.message().find("'spent' = -1 must be a finite decimal number"), std::string::npos)
      << s.ToString();
  s = error("format = 2\n[scenario\n");
  EXPECT_NE(s.message().find("r.toml:2: not TOML"), std::string::npos) << s.ToString();
}

// The lock file holds "<pid>\n": its holder is read back strictly, and damaged text is "held,
// holder unknown" (-1), never a number read from its start.
TEST(LockFile, TheHolderIsTheWholeNumberRecorded) {
  const std::string path = ::testing::TempDir() + "/file_description_lock";
  auto lock = FileLock::Acquire(path);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(FileLock::Holder(path), ::getpid());
  for (const char* damaged : {"12x\n", "", "-5\n", "99999999999999999999\n"}) {
    // The text is replaced in place: the lock stays (an open file description's lock is not
    // dropped when another descriptor of the file closes).
    FILE* f = std::fopen(path.c_str(), "r+");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(::ftruncate(::fileno(f), 0), 0);
    std::fputs(damaged, f);
    std::fclose(f);
    EXPECT_EQ(FileLock::Holder(path), -1) << "'" << damaged << "'";
  }
  ASSERT_TRUE(lock->RecordPid().ok());
  EXPECT_EQ(FileLock::Holder(path), ::getpid());
}

}  // namespace
}  // namespace meshlearn
