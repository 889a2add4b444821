// docs/results.md's full-scale tables are rebuilt from the data in results/: every run kept there
// (results/<scenario>/seed-<seed>/<method folder>/summary.csv) has its row on the page, every row
// names a run that is kept, and the row's per-cluster and mean accuracies are the data's, rounded
// to two decimals. A row over seeds ("`<method>`, seeds 1–5") holds the means of its runs' figures
// and the standard deviation of their means. A figure typed by hand, or data added without its
// row, fails here. docs/robustness.md's result tables are rebuilt the same way from
// results/robustness/ (the RobustnessPage tests at the end), and so are docs/results.md's plug-in
// tables (results/robustness/fmnist-covariate-plugins/, the last test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/csv.h"

namespace meshlearn {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = MESHLEARN_SOURCE_DIR;

// A kept run: scenario name, seed and method name (the summary's `method` column).
using RunKey = std::tuple<std::string, std::string, std::string>;

// `value` with two decimals, as the page shows it.
std::string TwoDecimals(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

// `value` with one decimal.
std::string OneDecimal(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

// `values` with two decimals each.
std::vector<std::string> TwoDecimals(const std::vector<double>& values) {
  std::vector<std::string> texts;
  for (double value : values) texts.push_back(TwoDecimals(value));
  return texts;
}

// The figures of every kept run, as summary.csv writes them: its clusters' accuracies, then the
// mean.
std::map<RunKey, std::vector<double>> KeptRuns() {
  std::map<RunKey, std::vector<double>> runs;
  const fs::path results = kRoot / "results";
  if (!fs::exists(results)) return runs;
  for (const auto& entry : fs::recursive_directory_iterator(results)) {
    if (entry.path().filename() != "summary.csv") continue;
    // results/compression/, results/stragglers/, results/robustness/, results/paper-code/,
    // results/quickstart/ and results/scale/ have their own layouts and page tables (below).
    const std::string top = fs::relative(entry.path(), results).begin()->string();
    if (top == "compression" || top == "stragglers" || top == "robustness" || top == "paper-code" ||
        top == "quickstart" || top == "scale") {
      continue;
    }
    const fs::path method_dir = entry.path().parent_path();
    const std::string seed_dir = method_dir.parent_path().filename().string();
    const std::string scenario = method_dir.parent_path().parent_path().filename().string();
    EXPECT_EQ(seed_dir.rfind("seed-", 0), 0u) << entry.path() << ": not under a seed-<n> folder";
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    auto records = ParseCsv(text.str(), entry.path().string());
    if (!records.ok() || records->empty()) {
      ADD_FAILURE() << entry.path() << " is not a summary: "
                    << (records.ok() ? "empty" : records.status().ToString());
      continue;
    }
    const std::vector<std::string>& header = records->front().fields;
    for (size_t r = 1; r < records->size(); ++r) {
      const std::vector<std::string>& cells = (*records)[r].fields;
      EXPECT_EQ(cells.size(), header.size()) << entry.path() << " line " << (*records)[r].line;
      if (cells.size() != header.size()) continue;
      std::vector<double> figures;
      std::string method;
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i] == "method") method = cells[i];
        if (std::regex_match(header[i], std::regex("cluster_[0-9]+"))) {
          figures.push_back(std::stod(cells[i]));
        }
      }
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i] == "mean") figures.push_back(std::stod(cells[i]));
      }
      runs[{scenario, seed_dir.substr(5), method}] = figures;
    }
  }
  return runs;
}

// The rows of the page's full-scale tables: under a heading "### `<scenario>`", a row whose first
// cell is "`<method>`, seed <n>", then one cell per cluster and the mean (bold marks dropped).
// With `over_seeds`, the rows whose first cell is "`<method>`, seeds <first>–<last>" instead,
// keyed by seed "<first>–<last>", whose mean reads "<mean> ± <standard deviation>".
std::map<RunKey, std::vector<std::string>> PageRows(bool over_seeds = false) {
  std::map<RunKey, std::vector<std::string>> rows;
  std::ifstream in(kRoot / "docs" / "results.md");
  const std::regex heading("^### `([^`]+)`");
  const std::regex first_cell(over_seeds ? "^`([^`]+)`, seeds ([0-9]+–[0-9]+)$"
                                         : "^`([^`]+)`, seed ([0-9]+)$");
  const std::regex figure(over_seeds ? "[0-9]+\\.[0-9]{2}( ± [0-9]+\\.[0-9]{2})?"
                                     : "[0-9]+\\.[0-9]{2}");
  std::string scenario, line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("## ", 0) == 0) scenario.clear();
    if (std::regex_search(line, m, heading)) scenario = m[1];
    if (scenario.empty() || line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cells_in(line.substr(1));
    std::string cell;
    while (std::getline(cells_in, cell, '|')) {
      cell = std::regex_replace(cell, std::regex("\\*\\*"), "");
      cell = std::regex_replace(cell, std::regex("^ +| +$"), "");
      cells.push_back(cell);
    }
    if (cells.empty() || !std::regex_match(cells[0], m, first_cell)) continue;
    std::vector<std::string> figures;
    for (size_t i = 1; i < cells.size(); ++i) {
      if (!std::regex_match(cells[i], figure)) break;
      figures.push_back(cells[i]);
      if (cells[i].find("±") != std::string::npos) break;  // the mean over seeds: the last figure
    }
    rows[{scenario, m[2], m[1]}] = figures;
  }
  return rows;
}

std::string Name(const RunKey& key) {
  return std::get<0>(key) + " seed " + std::get<1>(key) + " " + std::get<2>(key);
}

TEST(ResultsPage, EveryKeptRunHasItsRowWithTheDatasFigures) {
  const auto runs = KeptRuns();
  const auto rows = PageRows();
  ASSERT_FALSE(runs.empty()) << "results/ keeps no run";
  for (const auto& [key, figures] : runs) {
    auto row = rows.find(key);
    ASSERT_NE(row, rows.end()) << Name(key) << " is in results/ but has no row in docs/results.md";
    EXPECT_EQ(row->second, TwoDecimals(figures))
        << Name(key) << ": the page's figures are not the data's";
  }
}

TEST(ResultsPage, EveryRowOverSeedsIsTheMeanOfItsRuns) {
  const auto runs = KeptRuns();
  const auto rows = PageRows(/*over_seeds=*/true);
  ASSERT_FALSE(rows.empty()) << "docs/results.md has no row over seeds";
  for (const auto& [key, figures] : rows) {
    const auto& [scenario, seeds, method] = key;
    const size_t dash = seeds.find("–");
    const int first = std::stoi(seeds.substr(0, dash));
    const int last = std::stoi(seeds.substr(dash + std::string("–").size()));
    std::vector<std::vector<double>> seed_figures;
    for (int seed = first; seed <= last; ++seed) {
      auto run = runs.find({scenario, std::to_string(seed), method});
      ASSERT_NE(run, runs.end()) << Name(key) << ": results/ keeps no run of seed " << seed;
      seed_figures.push_back(run->second);
    }
    ASSERT_GE(seed_figures.size(), 2u) << Name(key) << ": a mean over seeds needs two or more";
    std::vector<double> means(seed_figures.front().size(), 0.0);
    for (const std::vector<double>& f : seed_figures) {
      for (size_t i = 0; i < means.size(); ++i) means[i] += f[i] / seed_figures.size();
    }
    double squares = 0;  // of the seeds' means (the last figure) around their mean
    for (const std::vector<double>& f : seed_figures) {
      squares += (f.back() - means.back()) * (f.back() - means.back());
    }
    std::vector<std::string> expected = TwoDecimals(means);
    expected.back() += " ± " + TwoDecimals(std::sqrt(squares / (seed_figures.size() - 1)));
    EXPECT_EQ(figures, expected) << Name(key) << ": the page's means are not the data's";
  }
}

// The files kept in results/ were written before base/number_text.h (9 significant digits, "nan"
// for NaN); every number in them reads back through ParseNumber as the same double strtod read.
TEST(ResultsPage, EveryNumberKeptReadsBackAsBefore) {
  size_t numbers = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / "results")) {
    if (entry.path().extension() != ".csv") continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    auto records = ParseCsv(text.str(), entry.path().string());
    ASSERT_TRUE(records.ok()) << records.status().ToString();
    for (const CsvRecord& record : *records) {
      for (size_t c = 0; c < record.fields.size(); ++c) {
        const std::string& cell = record.fields[c];
        char* end = nullptr;
        const double lax = std::strtod(cell.c_str(), &end);
        if (cell.empty() || end != cell.c_str() + cell.size()) continue;  // not a number
        auto strict = CsvNumber<double>(entry.path().string(), record, c, "kept", kExactNumberForm);
        ASSERT_TRUE(strict.ok()) << strict.status().ToString();
        EXPECT_TRUE(*strict == lax || (std::isnan(*strict) && std::isnan(lax)))
            << CsvWhere(entry.path().string(), record.line, c + 1) << ": " << cell;
        ++numbers;
      }
    }
  }
  EXPECT_GT(numbers, 1000u);
}

TEST(ResultsPage, EveryRowNamesAKeptRun) {
  const auto runs = KeptRuns();
  for (const auto& [key, figures] : PageRows()) {
    EXPECT_TRUE(runs.count(key)) << "docs/results.md has a row for " << Name(key)
                                 << " but results/ keeps no such run";
  }
}

// The cells of the table row `line` ("| a | b |"), without bold marks, backticks and the
// blanks around them.
std::vector<std::string> TableCells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream cells_in(line.substr(1));
  std::string cell;
  while (std::getline(cells_in, cell, '|')) {
    cell = std::regex_replace(cell, std::regex(R"(\*\*|`)"), "");
    cells.push_back(std::regex_replace(cell, std::regex("^ +| +$"), ""));
  }
  return cells;
}

// "Compressed gossip: bytes to reach an accuracy": the table under the heading that starts with
// `heading` has the rows of results/compression/<scenario>/bytes_to_target_mean.csv, one per
// method and codec, with the final accuracy (two decimals), "<reached> of <runs>", the MB to the
// target and in all (10^6 bytes, three decimals, "–" when no run reached it) and the ratio (two
// decimals; 1 for none).
void ExpectCompressionTableIsItsData(const std::string& heading, const std::string& scenario) {
  std::ifstream csv_in(kRoot / "results" / "compression" / scenario / "bytes_to_target_mean.csv");
  std::ostringstream csv_text;
  csv_text << csv_in.rdbuf();
  auto records = ParseCsv(csv_text.str(), "bytes_to_target_mean.csv");
  ASSERT_TRUE(records.ok() && records->size() > 1) << "no compression data for " << scenario;
  const std::vector<std::string>& header = records->front().fields;
  auto column = [&](const std::vector<std::string>& cells, const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return cells[i];
    }
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  auto fixed = [](const std::string& value, int decimals, double scale = 1) {
    if (value.empty()) return std::string("–");
    char text[32];
    std::snprintf(text, sizeof(text), "%.*f", decimals, std::stod(value) / scale);
    return std::string(text);
  };
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> expected;
  for (size_t r = 1; r < records->size(); ++r) {
    const std::vector<std::string>& c = (*records)[r].fields;
    const std::string codec = std::regex_replace(
        column(c, "codec"), std::regex(R"(topk \(([0-9.]+), int8\))"), "topk $1");
    const std::string ratio = column(c, "ratio");
    expected[{column(c, "method"), codec}] = {
        fixed(column(c, "final_acc"), 2), column(c, "reached") + " of " + column(c, "runs"),
        fixed(column(c, "bytes_to_target"), 3, 1e6), fixed(column(c, "bytes_total"), 3, 1e6),
        ratio == "1" ? "1" : fixed(ratio, 2)};
  }
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> page;
  std::ifstream in(kRoot / "docs" / "results.md");
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) in_table = line.rfind(heading, 0) == 0;
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = TableCells(line);
    ASSERT_GE(cells.size(), 7u) << line;
    page[{cells[0], cells[1]}] = {cells.begin() + 2, cells.begin() + 7};
  }
  EXPECT_EQ(page, expected) << heading;
}

TEST(ResultsPage, TheCompressionTablesAreTheirData) {
  ExpectCompressionTableIsItsData("### The quickstart", "quickstart");
  ExpectCompressionTableIsItsData("### `label-swap`", "label-swap");
}

// The rows of a CSV file of results/, each as column name → cell.
std::vector<std::map<std::string, std::string>> CsvRows(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  auto records = ParseCsv(text.str(), path.string());
  std::vector<std::map<std::string, std::string>> rows;
  if (!records.ok() || records->empty()) {
    ADD_FAILURE() << path << ": " << (records.ok() ? "empty" : records.status().ToString());
    return rows;
  }
  const std::vector<std::string>& header = records->front().fields;
  for (size_t r = 1; r < records->size(); ++r) {
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < (*records)[r].fields.size(); ++i) {
      row[header[i]] = (*records)[r].fields[i];
    }
    rows.push_back(row);
  }
  return rows;
}

// The mean of `values` (not empty) and their sample standard deviation (0 for one value).
std::pair<double, double> MeanAndDeviation(const std::vector<double>& values) {
  double mean = 0, squares = 0;
  for (double v : values) mean += v / values.size();
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, values.size() > 1 ? std::sqrt(squares / (values.size() - 1)) : 0.0};
}

// The mean of `values` with `decimals`, then " ± " and their standard deviation when there are two
// or more; "–" when there is none; " (k of n)" when only k of the n runs had a value.
std::string MeanCell(const std::vector<double>& values, int decimals, size_t runs) {
  if (values.empty()) return "–";
  const auto [mean, deviation] = MeanAndDeviation(values);
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, mean);
  std::string cell = text;
  if (values.size() > 1) {
    std::snprintf(text, sizeof(text), " ± %.*f", decimals, deviation);
    cell += text;
  }
  if (values.size() < runs) {
    cell += " (" + std::to_string(values.size()) + " of " + std::to_string(runs) + ")";
  }
  return cell;
}

// The test accuracy (%) at the best-validation round (the first lowest val_loss) of each slow
// node of `method_dir` (network.csv: compute_factor ≠ 1; its rows kept as slow-node-<id>.csv),
// averaged over the slow nodes; nullopt when the mesh has none.
std::optional<double> SlowNodeAccuracy(const fs::path& method_dir) {
  if (!fs::exists(method_dir / "network.csv")) return std::nullopt;
  std::vector<double> accuracies;
  for (const auto& node : CsvRows(method_dir / "network.csv")) {
    if (std::stod(node.at("compute_factor")) == 1) continue;
    const auto rounds = CsvRows(method_dir / ("slow-node-" + node.at("node") + ".csv"));
    if (rounds.empty()) continue;
    const auto* best = &rounds.front();
    for (const auto& row : rounds) {
      if (std::stod(row.at("val_loss")) < std::stod(best->at("val_loss"))) best = &row;
    }
    accuracies.push_back(100 * std::stod(best->at("test_acc")));
  }
  if (accuracies.empty()) return std::nullopt;
  double mean = 0;
  for (double a : accuracies) mean += a / accuracies.size();
  return mean;
}

// One sync or async method of one kept stragglers run.
struct StragglerRun {
  double accuracy = 0;  // summary.csv mean
  double target = 0;    // summary.csv target_acc
  std::optional<double> time_to_target;
  std::optional<double> slow_node_accuracy;
};

// "Stragglers and churn": results/stragglers/<mesh>/seed-<s>/ keeps a run's summary.csv, and per
// method folder its network.csv and its slow nodes' rows. The page's two tables, under the
// headings "### Time to target" and "### Final accuracy" of that section, have one row per mesh
// and method ("cos_weights sync" and "cos_weights async" make `cos_weights`), means over the
// seeds with their standard deviation: the target, the time to it sync and async (s, one
// decimal) and the ratio sync ÷ async (over the seeds where both reached it); the final accuracy
// sync and async, async − sync, and the slow node's accuracy sync and async (two decimals).
// A seed folder may keep the same run with [learning] staleness = "none"
// (staleness-none/summary.csv); the table under "### Staleness-aware weights" has one row per mesh
// and method with such runs: the async final accuracy without the weights and with them (the
// default), and the difference (means over the seeds).
TEST(ResultsPage, TheStragglersTablesAreTheirData) {
  const fs::path root = kRoot / "results" / "stragglers";
  ASSERT_TRUE(fs::exists(root)) << "results/stragglers/ keeps no run";
  // (mesh, method, "sync"/"async") → one entry per seed
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<StragglerRun>> runs;
  // (mesh, method) → (async accuracy without, with staleness weights) per seed
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> staleness;
  for (const auto& mesh : fs::directory_iterator(root)) {
    for (const auto& seed : fs::directory_iterator(mesh.path())) {
      for (const auto& row : CsvRows(seed.path() / "summary.csv")) {
        const std::string& method = row.at("method");
        const size_t space = method.rfind(' ');
        StragglerRun run{std::stod(row.at("mean")), std::stod(row.at("target_acc")), {}, {}};
        if (!row.at("time_to_target_s").empty()) {
          run.time_to_target = std::stod(row.at("time_to_target_s"));
        }
        run.slow_node_accuracy =
            SlowNodeAccuracy(seed.path() / std::regex_replace(method, std::regex(" "), "-"));
        const std::string mesh_name = mesh.path().filename().string();
        runs[{mesh_name, method.substr(0, space), method.substr(space + 1)}].push_back(run);
      }
      const fs::path unweighted = seed.path() / "staleness-none" / "summary.csv";
      if (!fs::exists(unweighted)) continue;
      std::map<std::string, double> with;
      for (const auto& row : CsvRows(seed.path() / "summary.csv")) {
        with[row.at("method")] = std::stod(row.at("mean"));
      }
      for (const auto& row : CsvRows(unweighted)) {
        const std::string& method = row.at("method");
        if (method.substr(method.rfind(' ') + 1) != "async") continue;
        const std::string mesh_name = mesh.path().filename().string();
        auto& pairs = staleness[{mesh_name, method.substr(0, method.rfind(' '))}];
        pairs.push_back({std::stod(row.at("mean")), with.at(method)});
      }
    }
  }
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> expected;
  for (const auto& [key, sync] : runs) {
    const auto& [mesh, method, mode] = key;
    if (mode != "sync") continue;
    const auto& async = runs.at({mesh, method, "async"});
    ASSERT_EQ(sync.size(), async.size()) << mesh << " " << method;
    std::vector<double> targets, sync_s, async_s, ratios, sync_acc, async_acc, gains;
    std::vector<double> slow_sync, slow_async;
    for (size_t i = 0; i < sync.size(); ++i) {
      targets.push_back(sync[i].target);
      if (sync[i].time_to_target) sync_s.push_back(*sync[i].time_to_target);
      if (async[i].time_to_target) async_s.push_back(*async[i].time_to_target);
      if (sync[i].time_to_target && async[i].time_to_target) {
        ratios.push_back(*sync[i].time_to_target / *async[i].time_to_target);
      }
      sync_acc.push_back(sync[i].accuracy);
      async_acc.push_back(async[i].accuracy);
      gains.push_back(async[i].accuracy - sync[i].accuracy);
      if (sync[i].slow_node_accuracy) slow_sync.push_back(*sync[i].slow_node_accuracy);
      if (async[i].slow_node_accuracy) slow_async.push_back(*async[i].slow_node_accuracy);
    }
    const size_t n = sync.size();
    expected[{"time " + mesh, method}] = {MeanCell(targets, 2, n), MeanCell(sync_s, 1, n),
                                          MeanCell(async_s, 1, n), MeanCell(ratios, 2, n)};
    expected[{"accuracy " + mesh, method}] = {MeanCell(sync_acc, 2, n), MeanCell(async_acc, 2, n),
                                              MeanCell(gains, 2, n), MeanCell(slow_sync, 2, n),
                                              MeanCell(slow_async, 2, n)};
  }
  for (const auto& [key, pairs] : staleness) {
    std::vector<double> without, with, gains;
    for (const auto& [a, b] : pairs) {
      without.push_back(a);
      with.push_back(b);
      gains.push_back(b - a);
    }
    expected[{"staleness " + key.first, key.second}] = {MeanCell(without, 2, pairs.size()),
                                                        MeanCell(with, 2, pairs.size()),
                                                        MeanCell(gains, 2, pairs.size())};
  }
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> page;
  std::ifstream in(kRoot / "docs" / "results.md");
  std::string line, table;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Stragglers and churn";
    if (line.rfind("### ", 0) == 0) {
      table = line == "### Time to target"            ? "time "
              : line == "### Final accuracy"          ? "accuracy "
              : line == "### Staleness-aware weights" ? "staleness "
                                                      : "";
    }
    if (!in_section || table.empty() || line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = TableCells(line);
    ASSERT_GE(cells.size(), 2u) << line;
    page[{table + cells[0], cells[1]}] = {cells.begin() + 2, cells.end()};
  }
  EXPECT_EQ(page, expected);
}

// One row of the procedure tables: a procedure, a method (the summary's `method`) and a test
// protocol ("per-node": each node's own 100 images; "cluster": [data] test = "cluster").
using ProcedureRow = std::tuple<std::string, std::string, std::string>;

// What a row shows of one run: its clusters' accuracies, the mean, the share of in-cluster draws
// and the lowest honest node's accuracy (nullopt when the summary has none).
struct ProcedureFigures {
  std::vector<double> clusters;
  double mean = 0;
  double in_cluster = 0;
  std::optional<double> lowest;
};

// The figures of a summary.csv row under `test`: the columns cluster_<c>, mean and worst_node, or
// with "cluster" their full_test_ forms.
ProcedureFigures FiguresUnder(const std::map<std::string, std::string>& summary,
                              const std::string& test) {
  const std::string prefix = test == "cluster" ? "full_test_" : "";
  ProcedureFigures figures;
  for (int c = 0; summary.count(prefix + "cluster_" + std::to_string(c)); ++c) {
    figures.clusters.push_back(std::stod(summary.at(prefix + "cluster_" + std::to_string(c))));
  }
  figures.mean = std::stod(summary.at(prefix + "mean"));
  figures.in_cluster = std::stod(summary.at("in_cluster"));
  auto lowest = summary.find(prefix + "worst_node");
  if (lowest != summary.end() && !lowest->second.empty())
    figures.lowest = std::stod(lowest->second);
  return figures;
}

// Adds the runs of `procedure` kept as <dir>/seed-<s>/<method folder>/summary.csv, seeds 1–3, to
// `rows` under each of `tests`.
void AddProcedureRuns(const fs::path& dir, const std::string& procedure,
                      const std::vector<std::string>& tests,
                      std::map<ProcedureRow, std::map<int, ProcedureFigures>>& rows) {
  for (int seed = 1; seed <= 3; ++seed) {
    const fs::path seed_dir = dir / ("seed-" + std::to_string(seed));
    if (!fs::exists(seed_dir)) continue;
    for (const auto& method_dir : fs::directory_iterator(seed_dir)) {
      if (!fs::exists(method_dir.path() / "summary.csv")) continue;
      for (const auto& summary : CsvRows(method_dir.path() / "summary.csv")) {
        for (const std::string& test : tests) {
          rows[{procedure, summary.at("method"), test}][seed] = FiguresUnder(summary, test);
        }
      }
    }
  }
}

// A seed-matched difference: the mean of `differences`, with two decimals, then " ± " and its
// standard error when there are two or more.
std::string DifferenceCell(const std::vector<double>& differences) {
  const auto [mean, deviation] = MeanAndDeviation(differences);
  std::string cell = TwoDecimals(mean);
  if (differences.size() > 1)
    cell += " ± " + TwoDecimals(deviation / std::sqrt(differences.size()));
  return cell;
}

// The cells of a procedure table's rows: the seeds ("1, 2, 3"), the clusters' accuracies (means
// over the seeds), the mean ± its standard deviation over the seeds, Oracle − the method matched
// seed by seed (mean ± standard error; "–" for Oracle itself) against the Oracle of the same
// procedure and test, or of `fallback_procedure` where the procedure ran no Oracle (the screening:
// its single options do not change Oracle's draws; "" for none), the share of in-cluster draws (%,
// one decimal, mean over the seeds) and the lowest node's accuracy over every seed ("not kept" when
// a summary lacks it).
std::map<ProcedureRow, std::vector<std::string>> ProcedureCells(
    const std::map<ProcedureRow, std::map<int, ProcedureFigures>>& rows,
    const std::string& fallback_procedure) {
  std::map<ProcedureRow, std::vector<std::string>> cells;
  for (const auto& [row, seeds] : rows) {
    const auto& [procedure, method, test] = row;
    auto oracle = rows.find({procedure, "oracle", test});
    if (oracle == rows.end()) oracle = rows.find({fallback_procedure, "oracle", test});
    std::string seed_list;
    std::vector<double> clusters(seeds.begin()->second.clusters.size(), 0.0), means, in_cluster;
    std::vector<double> differences;
    std::optional<double> lowest;
    bool lowest_kept = true;
    for (const auto& [seed, figures] : seeds) {
      seed_list += (seed_list.empty() ? "" : ", ") + std::to_string(seed);
      for (size_t c = 0; c < clusters.size(); ++c) {
        clusters[c] += figures.clusters.at(c) / seeds.size();
      }
      means.push_back(figures.mean);
      in_cluster.push_back(100 * figures.in_cluster);
      if (oracle != rows.end() && oracle->second.count(seed)) {
        differences.push_back(oracle->second.at(seed).mean - figures.mean);
      }
      lowest_kept = lowest_kept && figures.lowest.has_value();
      if (figures.lowest && (!lowest || *figures.lowest < *lowest)) lowest = figures.lowest;
    }
    std::vector<std::string>& out = cells[row];
    out.push_back(seed_list);
    for (double c : clusters) out.push_back(TwoDecimals(c));
    out.push_back(MeanCell(means, 2, means.size()));
    out.push_back(method == "oracle" || differences.empty() ? "–" : DifferenceCell(differences));
    char share[32];
    std::snprintf(share, sizeof(share), "%.1f%%", MeanAndDeviation(in_cluster).first);
    out.push_back(share);
    out.push_back(lowest_kept ? TwoDecimals(*lowest) : "not kept");
  }
  return cells;
}

// The rows of the table under `heading` in docs/results.md's section "## The authors' procedure":
// its first three cells (procedure, method, test) → the others.
std::map<ProcedureRow, std::vector<std::string>> ProcedureTable(const std::string& heading) {
  std::map<ProcedureRow, std::vector<std::string>> table;
  std::ifstream in(kRoot / "docs" / "results.md");
  std::string line;
  bool in_section = false, in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line.rfind("## The authors' procedure", 0) == 0;
    if (line.rfind("### ", 0) == 0) in_table = line == heading;
    if (!in_section || !in_table || line.rfind("| ", 0) != 0) continue;
    const std::vector<std::string> cells = TableCells(line);
    if (cells.size() < 3 || cells[0] == "procedure" || cells[0].rfind("---", 0) == 0) continue;
    table[{cells[0], cells[1], cells[2]}] = {cells.begin() + 3, cells.end()};
  }
  EXPECT_FALSE(table.empty()) << "docs/results.md has no table under " << heading;
  return table;
}

// "The authors' procedure at 300 rounds": file 004's covariate shift, seeds 1–3. Our procedure
// (the runs of results/fmnist-covariate/, tested per node) beside the paper-code preset and its
// variants (results/paper-code/fmnist-covariate/300-rounds/<procedure>/, under both test
// protocols), for Oracle, Inv loss FedSim and Cos weight FedAvg.
TEST(ResultsPage, TheProcedureAblationTableIsItsData) {
  std::map<ProcedureRow, std::map<int, ProcedureFigures>> rows;
  const fs::path ours = kRoot / "results" / "fmnist-covariate";
  for (int seed = 1; seed <= 3; ++seed) {
    for (const char* folder : {"oracle", "inv_loss-fedsim", "cos_weights"}) {
      const fs::path summary = ours / ("seed-" + std::to_string(seed)) / folder / "summary.csv";
      ASSERT_TRUE(fs::exists(summary)) << summary;
      for (const auto& row : CsvRows(summary)) {
        rows[{"ours", row.at("method"), "per-node"}][seed] = FiguresUnder(row, "per-node");
      }
    }
  }
  const fs::path root = kRoot / "results" / "paper-code" / "fmnist-covariate" / "300-rounds";
  ASSERT_TRUE(fs::exists(root)) << root;
  for (const auto& procedure : fs::directory_iterator(root)) {
    AddProcedureRuns(procedure.path(), procedure.path().filename().string(),
                     {"per-node", "cluster"}, rows);
  }
  EXPECT_EQ(ProcedureTable("### The authors' procedure at 300 rounds"),
            ProcedureCells(rows, /*fallback_procedure=*/""));
}

// The preset's seeds 4 and 5: Oracle − Inv loss FedSim on the full test, matched seed by seed over
// every kept seed of 300-rounds/paper-code/, as the page states it after the table.
TEST(ResultsPage, ThePresetsOracleAgainstInvLossOverEveryKeptSeedIsItsData) {
  const fs::path root =
      kRoot / "results" / "paper-code" / "fmnist-covariate" / "300-rounds" / "paper-code";
  std::vector<double> differences;
  for (int seed = 1; fs::exists(root / ("seed-" + std::to_string(seed))); ++seed) {
    const fs::path dir = root / ("seed-" + std::to_string(seed));
    differences.push_back(
        std::stod(CsvRows(dir / "oracle" / "summary.csv")[0].at("full_test_mean")) -
        std::stod(CsvRows(dir / "inv_loss-fedsim" / "summary.csv")[0].at("full_test_mean")));
  }
  ASSERT_EQ(differences.size(), 5u);
  std::ifstream in(kRoot / "docs" / "results.md");
  std::stringstream page;
  page << in.rdbuf();
  const std::string text = std::regex_replace(page.str(), std::regex("\\s+"), " ");
  const std::string stated =
      "at seeds 1–5 Oracle − Inv loss FedSim is +" + DifferenceCell(differences);
  EXPECT_NE(text.find(stated), std::string::npos) << stated;
}

// "Each difference alone at 50 rounds": results/paper-code/fmnist-covariate/50-rounds/<procedure>/
// (ours, one option of the preset alone, or the whole preset), tested on the clusters' full test
// sets.
TEST(ResultsPage, TheProcedureScreeningTableIsItsData) {
  std::map<ProcedureRow, std::map<int, ProcedureFigures>> rows;
  const fs::path root = kRoot / "results" / "paper-code" / "fmnist-covariate" / "50-rounds";
  ASSERT_TRUE(fs::exists(root)) << root;
  for (const auto& procedure : fs::directory_iterator(root)) {
    AddProcedureRuns(procedure.path(), procedure.path().filename().string(), {"cluster"}, rows);
  }
  EXPECT_EQ(ProcedureTable("### Each difference alone at 50 rounds"), ProcedureCells(rows, "ours"));
}

// One kept robustness run: a method's summary.csv row (column → cell), its folder and its seed
// folder's name.
struct RobustnessRun {
  std::map<std::string, std::string> summary;
  fs::path method_dir;
  std::string seed;
};

// results/robustness/<scenario>/seed-<s>/: each method's runs, one per seed in seed order, from
// every summary.csv in a seed folder or below it (a seed may keep more than one launch).
std::map<std::string, std::vector<RobustnessRun>> RobustnessRuns(const std::string& scenario) {
  std::map<std::string, std::vector<RobustnessRun>> runs;
  const fs::path root = kRoot / "results" / "robustness" / scenario;
  std::vector<fs::path> seeds;
  if (fs::exists(root)) {
    for (const auto& seed : fs::directory_iterator(root)) seeds.push_back(seed.path());
  }
  std::sort(seeds.begin(), seeds.end());
  for (const fs::path& seed : seeds) {
    for (const auto& file : fs::recursive_directory_iterator(seed)) {
      if (file.path().filename() != "summary.csv") continue;
      for (const auto& row : CsvRows(file.path())) {
        const std::string& method = row.at("method");
        runs[method].push_back(
            {row, file.path().parent_path() / std::regex_replace(method, std::regex(" "), "-"),
             seed.filename().string()});
      }
    }
  }
  EXPECT_FALSE(runs.empty()) << "results/robustness/" << scenario << " keeps no run";
  return runs;
}

// The table under the heading `heading` of docs/<page> (docs/robustness.md by default), its rows
// below the header and the |---| line: each row's first cell → the others.
std::map<std::string, std::vector<std::string>> RobustnessTable(
    const std::string& heading, const std::string& page = "robustness.md") {
  std::map<std::string, std::vector<std::string>> table;
  std::ifstream in(kRoot / "docs" / page);
  std::string line;
  bool in_section = false, in_rows = false;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) in_section = line == heading;
    if (!in_section || line.rfind("|", 0) != 0) {
      in_rows = false;
      continue;
    }
    if (line.rfind("|---", 0) == 0) {
      in_rows = true;
      continue;
    }
    if (!in_rows) continue;
    const std::vector<std::string> cells = TableCells(line);
    table[cells[0]] = {cells.begin() + 1, cells.end()};
  }
  EXPECT_FALSE(table.empty()) << "docs/" << page << " has no table under " << heading;
  return table;
}

// `column` of each of `runs`, as numbers.
std::vector<double> Figures(const std::vector<RobustnessRun>& runs, const std::string& column) {
  std::vector<double> figures;
  for (const RobustnessRun& run : runs) figures.push_back(std::stod(run.summary.at(column)));
  return figures;
}

// The share of the honest nodes' draws that went to `attackers`, from a method's heatmap.csv
// (cell (i, j): how often node i sampled node j; the rows of `attackers` are left out).
double ShareOfDrawsTo(const fs::path& heatmap, const std::set<std::string>& attackers) {
  double to_attackers = 0, total = 0;
  for (const auto& row : CsvRows(heatmap)) {
    if (attackers.count(row.at(""))) continue;
    for (const auto& [peer, draws] : row) {
      if (peer.empty()) continue;
      total += std::stod(draws);
      if (attackers.count(peer)) to_attackers += std::stod(draws);
    }
  }
  return to_attackers / total;
}

// "Results: who honest nodes draw" (configs/scenarios/sampler-attacks.toml): one row per method,
// the share of the honest nodes' draws that went to nodes 0, 1, 10 and 11 (the first two of each
// cluster, the attackers at fraction 0.2) with three decimals, and the honest nodes' mean test
// MSE, each the mean ± standard deviation over the kept seeds.
TEST(RobustnessPage, TheSamplerAttacksTableIsItsData) {
  const std::set<std::string> attackers = {"0", "1", "10", "11"};
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [method, runs] : RobustnessRuns("sampler-attacks")) {
    std::vector<double> shares;
    for (const RobustnessRun& run : runs) {
      shares.push_back(ShareOfDrawsTo(run.method_dir / "heatmap.csv", attackers));
    }
    expected[method] = {MeanCell(shares, 3, runs.size()),
                        MeanCell(Figures(runs, "mean"), 2, runs.size())};
  }
  EXPECT_EQ(RobustnessTable("### Results: who honest nodes draw"), expected);
}

// "A first look: the synthetic mesh of `poison-majority`": results/robustness/poison-majority/
// <attack>/seed-<s>/ keeps one launch per attack and seed (`none`: no attacker in any method).
// One row per attack: the number of attackers in its `attacked` runs, then the honest nodes' mean
// test MSE of the methods attacked, clip, trimmed, krum and gate, each the mean ± standard
// deviation over the kept seeds.
TEST(RobustnessPage, ThePoisonMajorityTableIsItsData) {
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& folder :
       fs::directory_iterator(kRoot / "results" / "robustness" / "poison-majority")) {
    const std::string attack = folder.path().filename().string();
    const auto runs = RobustnessRuns("poison-majority/" + attack);
    std::set<std::string> attackers;
    for (const RobustnessRun& run : runs.at("attacked")) {
      attackers.insert(run.summary.at("attackers"));
    }
    ASSERT_EQ(attackers.size(), 1u) << attack << ": runs with different numbers of attackers";
    std::vector<std::string>& cells = expected[attack];
    cells.push_back(*attackers.begin());
    for (const char* method : {"attacked", "clip", "trimmed", "krum", "gate"}) {
      cells.push_back(MeanCell(Figures(runs.at(method), "mean"), 2, runs.at(method).size()));
    }
  }
  EXPECT_EQ(RobustnessTable("### A first look: the synthetic mesh of `poison-majority`"), expected);
}

// "Results: the ClippedGossip ring" (configs/scenarios/clipped-gossip-ring.toml): one row per
// rule, one column per attack, each cell the honest nodes' mean test accuracy of the method
// "<attack> <rule>", mean ± standard deviation over the kept seeds; the column "no attacker"
// holds the run `clean` in the row `none` and "–" in the others.
TEST(RobustnessPage, TheRingTableIsItsData) {
  const auto runs = RobustnessRuns("clipped-gossip-ring");
  std::map<std::string, std::vector<std::string>> expected;
  for (const char* rule : {"none", "clip", "trimmed_mean", "median"}) {
    std::vector<std::string>& cells = expected[rule];
    const std::string clean = std::string(rule) == "none" ? "clean" : "";
    cells.push_back(runs.count(clean)
                        ? MeanCell(Figures(runs.at(clean), "mean"), 2, runs.at(clean).size())
                        : "–");
    for (const char* attack : {"alie", "ipm", "dissensus"}) {
      const auto& method = runs.at(std::string(attack) + " " + rule);
      cells.push_back(MeanCell(Figures(method, "mean"), 2, method.size()));
    }
  }
  EXPECT_EQ(RobustnessTable("### Results: the ClippedGossip ring"), expected);
}

// "Results: two cliques, no attacker" (configs/scenarios/clipped-gossip-dumbbell.toml): one row
// per rule, the honest mean test accuracy of cluster 0 and cluster 1, and each cluster's cost
// against no rule (the run `none` of the same seed less the rule's), mean ± standard deviation
// over the kept seeds.
TEST(RobustnessPage, TheTwoCliquesTableIsItsData) {
  const auto runs = RobustnessRuns("clipped-gossip-dumbbell");
  const auto& none = runs.at("none");
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [rule, rule_runs] : runs) {
    ASSERT_EQ(rule_runs.size(), none.size()) << rule;
    std::vector<std::string>& cells = expected[rule];
    for (const char* cluster : {"cluster_0", "cluster_1"}) {
      cells.push_back(MeanCell(Figures(rule_runs, cluster), 2, rule_runs.size()));
    }
    for (const char* cluster : {"cluster_0", "cluster_1"}) {
      std::vector<double> costs;
      for (size_t s = 0; s < none.size(); ++s) {
        costs.push_back(std::stod(none[s].summary.at(cluster)) -
                        std::stod(rule_runs[s].summary.at(cluster)));
      }
      cells.push_back(MeanCell(costs, 2, costs.size()));
    }
  }
  EXPECT_EQ(RobustnessTable("### Results: two cliques, no attacker"), expected);
}

// results/robustness/fmnist-covariate/<attack>/seed-<s>/ (`clean`: no attacker), each a launch's
// summary.csv in the folder or in a folder below it: accuracy[attack][method][seed folder], the
// honest nodes' mean of each kept run, with every attack of `attacks` and `clean` present (empty
// when not run). Fails the test on an unknown attack folder, a method not in `methods`, or a run
// with other than 20 attackers (0 in `clean`).
std::map<std::string, std::map<std::string, std::map<std::string, double>>> CovariateAccuracy(
    const std::vector<std::string>& attacks, const std::vector<std::string>& methods) {
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> accuracy;
  accuracy["clean"];
  for (const std::string& attack : attacks) accuracy[attack];
  for (const auto& folder :
       fs::directory_iterator(kRoot / "results" / "robustness" / "fmnist-covariate")) {
    const std::string attack = folder.path().filename().string();
    EXPECT_TRUE(accuracy.count(attack)) << "unknown attack folder " << attack;
    for (const auto& [method, runs] : RobustnessRuns("fmnist-covariate/" + attack)) {
      EXPECT_TRUE(std::count(methods.begin(), methods.end(), method))
          << attack << ": method " << method << " has no column";
      for (const RobustnessRun& run : runs) {
        EXPECT_EQ(run.summary.at("attackers"), attack == "clean" ? "0" : "20") << run.method_dir;
        accuracy[attack][method][run.seed] = std::stod(run.summary.at("mean"));
      }
    }
  }
  return accuracy;
}

// The covariate-shift table's attacks and methods (its rows and columns).
const std::vector<std::string> kCovariateAttacks = {"sign_flip", "noise",      "label_flip",
                                                    "scaling",   "alie",       "ipm",
                                                    "dissensus", "free_rider", "mimic"};
const std::vector<std::string> kCovariateMethods = {
    "cos_weights",        "cos_weights clip", "cos_weights clip 0.5", "cos_weights trimmed_mean",
    "cos_weights median", "random clip",      "random clip 0.5"};

// "Results: file 004's covariate shift under every attack" (result set (c)):
// results/robustness/fmnist-covariate/<attack>/seed-<s>/ holds the launches of one attack (`clean`:
// no attacker) at one seed, each a summary.csv in the folder or in a folder below it. One row per
// attack, one column per method below, each cell the honest nodes' mean test accuracy, mean ±
// standard deviation over the kept seeds ("–" while there is none). Then, per method over the seeds
// that keep it under no attacker and every attack: "worst case over attacks", each seed's lowest
// cell (ByzFL's protocol), and "no attacker − worst case", each seed's clean cell less it.
TEST(RobustnessPage, TheCovariateShiftTableIsItsData) {
  const std::vector<std::string>& methods = kCovariateMethods;
  const std::vector<std::string>& attacks = kCovariateAttacks;
  // accuracy[attack][method][seed folder]: the honest mean of one kept run.
  auto accuracy = CovariateAccuracy(attacks, methods);
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [attack, by_method] : accuracy) {
    std::vector<std::string>& cells = expected[attack == "clean" ? "no attacker" : attack];
    for (const std::string& method : methods) {
      std::vector<double> values;
      if (by_method.count(method)) {
        for (const auto& [seed, value] : by_method.at(method)) values.push_back(value);
      }
      cells.push_back(MeanCell(values, 2, values.size()));
    }
  }
  std::vector<std::string> worst_cells, gap_cells;
  for (const std::string& method : methods) {
    std::vector<double> worsts, gaps;
    for (const auto& [seed, clean] : accuracy["clean"][method]) {
      double worst = 100;
      bool complete = true;
      for (const std::string& attack : attacks) {
        const auto& seeds = accuracy[attack][method];
        complete = complete && seeds.count(seed);
        if (complete) worst = std::min(worst, seeds.at(seed));
      }
      if (!complete) continue;
      worsts.push_back(worst);
      gaps.push_back(clean - worst);
    }
    worst_cells.push_back(MeanCell(worsts, 2, worsts.size()));
    gap_cells.push_back(MeanCell(gaps, 2, gaps.size()));
  }
  expected["worst case over attacks"] = worst_cells;
  expected["no attacker − worst case"] = gap_cells;
  EXPECT_EQ(RobustnessTable("### Results: file 004's covariate shift under every attack"),
            expected);
}

// "Results: file 004's covariate shift, 10% to 30% attackers": DAC with `clip` (0.5) under
// `attack`, the worst attack of that method in the table above (the lowest mean over the kept
// seeds), with 0%, 10%, 20% and 30% of every cluster attacking. One row per share: the attackers
// in its runs, the honest nodes' mean test accuracy, and the same seed's no-attacker run less it,
// each mean ± standard deviation over the kept seeds. 0% and 20% are the runs of the table above
// (fmnist-covariate/clean/, fmnist-covariate/<attack>/); 10% and 30% are kept in
// results/robustness/fmnist-covariate-fraction/<attack>-<share>/seed-<s>/.
TEST(RobustnessPage, TheAttackerShareTableIsItsData) {
  const std::string attack = "ipm";
  const std::string method = "cos_weights clip 0.5";
  std::string worst;
  double worst_mean = 100;
  for (const auto& [name, by_method] : CovariateAccuracy(kCovariateAttacks, kCovariateMethods)) {
    if (name == "clean" || !by_method.count(method)) continue;
    std::vector<double> means;
    for (const auto& [seed, mean] : by_method.at(method)) means.push_back(mean);
    const double mean = MeanAndDeviation(means).first;
    if (mean < worst_mean) {
      worst = name;
      worst_mean = mean;
    }
  }
  EXPECT_EQ(worst, attack) << "the page's 10% to 30% runs are not of the worst attack";
  std::map<std::string, double> clean;
  const auto clean_runs = RobustnessRuns("fmnist-covariate/clean");
  for (const RobustnessRun& run : clean_runs.at(method)) {
    clean[run.seed] = std::stod(run.summary.at("mean"));
  }
  const std::vector<std::pair<std::string, std::string>> shares = {
      {"0%", "fmnist-covariate/clean"},
      {"10%", "fmnist-covariate-fraction/" + attack + "-0.1"},
      {"20%", "fmnist-covariate/" + attack},
      {"30%", "fmnist-covariate-fraction/" + attack + "-0.3"}};
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [share, scenario] : shares) {
    const std::vector<RobustnessRun> runs = RobustnessRuns(scenario).at(method);
    std::set<std::string> attackers;
    std::vector<double> costs;
    for (const RobustnessRun& run : runs) {
      attackers.insert(run.summary.at("attackers"));
      costs.push_back(clean.at(run.seed) - std::stod(run.summary.at("mean")));
    }
    ASSERT_EQ(attackers.size(), 1u) << share << ": runs with different numbers of attackers";
    expected[share] = {*attackers.begin(), MeanCell(Figures(runs, "mean"), 2, runs.size()),
                       MeanCell(costs, 2, costs.size())};
  }
  EXPECT_EQ(RobustnessTable("### Results: file 004's covariate shift, 10% to 30% attackers"),
            expected);
}

// "Plug-ins on file 004's covariate shift" (docs/results.md): the worked examples' metric
// (`last_layer`), merge rule (`cos_weights geometric_median`) and attack (min-max) beside the
// built-ins run by the same build, kept in results/robustness/fmnist-covariate-plugins/<attack>/
// seed-<s>/ (`clean`: no attacker, `min_max`: the plug-in attack).
const std::vector<std::string> kPlugInMethods = {"cos_weights", "cos_weights clip 0.5",
                                                 "cos_weights geometric_median", "last_layer"};
const std::vector<std::pair<std::string, std::string>> kPlugInAttacks = {
    {"clean", "no attacker"}, {"scaling", "scaling"}, {"min_max", "min-max (plug-in)"}};
const size_t kPlugInSeeds = 3;

// summary[attack][method][seed folder]: the summary row of each kept plug-in launch's run.
std::map<std::string,
         std::map<std::string, std::map<std::string, std::map<std::string, std::string>>>>
PlugInSummaries() {
  std::map<std::string,
           std::map<std::string, std::map<std::string, std::map<std::string, std::string>>>>
      summary;
  for (const auto& attack_row : kPlugInAttacks) {
    const std::string& attack = attack_row.first;
    for (const auto& [method, runs] : RobustnessRuns("fmnist-covariate-plugins/" + attack)) {
      EXPECT_TRUE(std::count(kPlugInMethods.begin(), kPlugInMethods.end(), method))
          << attack << ": method " << method << " has no column";
      for (const RobustnessRun& run : runs) {
        EXPECT_EQ(run.summary.at("attackers"), attack == "clean" ? "0" : "20") << run.method_dir;
        summary[attack][method][run.seed] = run.summary;
      }
    }
  }
  return summary;
}

// One row per attack, one column per method of kPlugInMethods: the honest nodes' mean test
// accuracy, mean ± standard deviation over the seeds ("–" where not run, "(k of 3)" where only k
// seeds ran). Then the seed-matched differences (mean ± standard error, then the number of seeds)
// of the geometric median against DAC and `clip`, and of the last-layer metric against
// cos_weights, per attack ("–" where not run); and for the two metrics under no attacker the 180°
// cluster's accuracy and the share of in-cluster draws (%).
TEST(ResultsPage, ThePlugInTablesAreTheirData) {
  auto summary = PlugInSummaries();
  std::map<std::string, std::vector<std::string>> accuracy, differences;
  auto mean_of = [&](const std::string& attack, const std::string& method) {
    std::map<std::string, double> by_seed;
    for (const auto& [seed, row] : summary[attack][method])
      by_seed[seed] = std::stod(row.at("mean"));
    return by_seed;
  };
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> comparisons = {
      {"geometric median − DAC", {"cos_weights geometric_median", "cos_weights"}},
      {"geometric median − clip", {"cos_weights geometric_median", "cos_weights clip 0.5"}},
      {"last layer − cos_weights", {"last_layer", "cos_weights"}}};
  for (const auto& [attack, row] : kPlugInAttacks) {
    for (const std::string& method : kPlugInMethods) {
      std::vector<double> values;
      for (const auto& [seed, value] : mean_of(attack, method)) values.push_back(value);
      accuracy[row].push_back(MeanCell(values, 2, kPlugInSeeds));
    }
  }
  for (const auto& [name, pair] : comparisons) {
    for (const auto& [attack, row] : kPlugInAttacks) {
      const auto a = mean_of(attack, pair.first), b = mean_of(attack, pair.second);
      std::vector<double> d;
      for (const auto& [seed, value] : a) {
        if (b.count(seed)) d.push_back(value - b.at(seed));
      }
      differences[name].push_back(
          d.empty() ? "–" : DifferenceCell(d) + " (" + std::to_string(d.size()) + ")");
    }
  }
  std::map<std::string, std::vector<std::string>> metrics;
  for (const auto& [method, name] : std::vector<std::pair<std::string, std::string>>{
           {"cos_weights", "cos_weights (built in)"}, {"last_layer", "last layer (plug-in)"}}) {
    std::vector<double> means, rotated, in_cluster;
    for (const auto& [seed, row] : summary["clean"][method]) {
      means.push_back(std::stod(row.at("mean")));
      rotated.push_back(std::stod(row.at("cluster_1")));
      in_cluster.push_back(100 * std::stod(row.at("in_cluster")));
    }
    metrics[name] = {MeanCell(means, 2, kPlugInSeeds), MeanCell(rotated, 2, kPlugInSeeds),
                     MeanCell(in_cluster, 1, kPlugInSeeds)};
  }
  EXPECT_EQ(RobustnessTable("### Results: plug-ins on file 004's covariate shift", "results.md"),
            accuracy);
  EXPECT_EQ(
      RobustnessTable("### Results: plug-ins against the built-ins, seed by seed", "results.md"),
      differences);
  EXPECT_EQ(RobustnessTable("### Results: the plug-in metric's draws", "results.md"), metrics);
}

// "The quickstart": results/quickstart/<mode>/seed-<s>/ keeps configs/quickstart.toml's launch at
// seed s as node processes (`processes`) and under --simulate (`simulated`). One row per method of
// the processes' runs: each cluster's accuracy, the mean and the in-cluster share (%, one
// decimal), each the mean ± standard deviation over the seeds, and the mean's seed-matched
// difference to `random` (mean ± standard error; "–" for random). The simulated runs give the same
// accuracies and in-cluster shares, seed by seed, to the last digit.
TEST(ResultsPage, TheQuickstartTableIsItsDataAsProcessesAndSimulated) {
  const fs::path root = kRoot / "results" / "quickstart";
  // method → seed → summary row
  std::map<std::string, std::map<std::string, std::map<std::string, std::string>>> runs;
  const std::vector<std::string> figures = {"cluster_0", "cluster_1", "cluster_2",
                                            "cluster_3", "mean",      "in_cluster"};
  for (const auto& seed : fs::directory_iterator(root / "processes")) {
    const std::string name = seed.path().filename().string();
    const auto processes = CsvRows(seed.path() / "summary.csv");
    const auto simulated = CsvRows(root / "simulated" / name / "summary.csv");
    ASSERT_EQ(processes.size(), simulated.size()) << name;
    for (size_t i = 0; i < processes.size(); ++i) {
      for (const std::string& figure : figures) {
        EXPECT_EQ(processes[i].at(figure), simulated[i].at(figure))
            << name << " " << processes[i].at("method") << " " << figure;
      }
      runs[processes[i].at("method")][name] = processes[i];
    }
  }
  ASSERT_TRUE(runs.count("random")) << root << " keeps no random run";
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [method, seeds] : runs) {
    std::vector<std::string>& cells = expected[method];
    for (const std::string& figure : figures) {
      std::vector<double> values;
      for (const auto& [seed, row] : seeds) {
        values.push_back(std::stod(row.at(figure)) * (figure == "in_cluster" ? 100 : 1));
      }
      cells.push_back(MeanCell(values, figure == "in_cluster" ? 1 : 2, seeds.size()));
    }
    std::vector<double> gains;
    for (const auto& [seed, row] : seeds) {
      gains.push_back(std::stod(row.at("mean")) - std::stod(runs["random"].at(seed).at("mean")));
    }
    cells.push_back(method == "random" ? "–" : DifferenceCell(gains));
  }
  EXPECT_EQ(RobustnessTable("## The quickstart", "results.md"), expected);
}

// results/scale/<run>/seed-<s>/ keeps a launch of docs/results.md's scale sections: its
// summary.csv and manifest.toml, and simulation.csv when simulated.
const fs::path kScale = kRoot / "results" / "scale";

// The seed folders of results/scale/<run>/, in seed order.
std::vector<fs::path> ScaleSeeds(const std::string& run) {
  std::vector<fs::path> seeds;
  if (!fs::is_directory(kScale / run)) return seeds;
  for (const auto& seed : fs::directory_iterator(kScale / run)) seeds.push_back(seed.path());
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

// "Simulated" and "Bounded views": one row per simulated run folder of results/scale/ (a launch of
// one method, one per seed), named by the folder: the seeds ("1–3" or "1"), the honest mean (test
// MSE or accuracy, two decimals) and the in-cluster share (%, one decimal) of summary.csv, and
// from simulation.csv the events, the peak memory per node (MiB, two decimals), the seconds the
// simulation took (one decimal), the node-rounds simulated per second per simulation thread
// (nodes × summary.csv's rounds ÷ seconds ÷ threads, no decimals) and the seconds over the
// learners' compute per thread (two decimals), each the mean ± standard deviation over the seeds.
std::map<std::string, std::vector<std::string>> SimulatedScaleCells(
    const std::vector<std::string>& runs) {
  std::map<std::string, std::vector<std::string>> cells;
  for (const std::string& run : runs) {
    const std::vector<fs::path> seeds = ScaleSeeds(run);
    EXPECT_FALSE(seeds.empty()) << "results/scale/" << run << " keeps no run";
    if (seeds.empty()) continue;
    std::vector<double> mean, in_cluster, events, mib, seconds, node_rounds, over_compute;
    for (const fs::path& seed : seeds) {
      const auto summary = CsvRows(seed / "summary.csv");
      const auto simulation = CsvRows(seed / "simulation.csv");
      EXPECT_EQ(summary.size(), 1u) << seed;
      EXPECT_EQ(simulation.size(), 1u) << seed;
      if (summary.size() != 1 || simulation.size() != 1) continue;
      mean.push_back(std::stod(summary[0].at("mean")));
      in_cluster.push_back(100 * std::stod(summary[0].at("in_cluster")));
      events.push_back(std::stod(simulation[0].at("events")));
      mib.push_back(std::stod(simulation[0].at("peak_rss_mib_per_node")));
      seconds.push_back(std::stod(simulation[0].at("real_s")));
      node_rounds.push_back(std::stod(simulation[0].at("nodes")) *
                            std::stod(summary[0].at("rounds")) / seconds.back() /
                            std::stod(simulation[0].at("threads")));
      over_compute.push_back(std::stod(simulation[0].at("real_over_compute_per_thread")));
    }
    const std::string first = seeds.front().filename().string().substr(5);
    const std::string last = seeds.back().filename().string().substr(5);
    cells[run] = {first == last ? first : first + "–" + last,
                  MeanCell(mean, 2, seeds.size()),
                  MeanCell(in_cluster, 1, seeds.size()),
                  MeanCell(events, 0, seeds.size()),
                  MeanCell(mib, 2, seeds.size()),
                  MeanCell(seconds, 1, seeds.size()),
                  MeanCell(node_rounds, 0, seeds.size()),
                  MeanCell(over_compute, 2, seeds.size())};
  }
  return cells;
}

// The first cells of the rows of the table under `heading` on docs/results.md.
std::vector<std::string> RowNames(const std::string& heading) {
  std::vector<std::string> names;
  for (const auto& [name, cells] : RobustnessTable(heading, "results.md")) names.push_back(name);
  return names;
}

TEST(ResultsPage, TheSimulatedScaleTablesAreTheirData) {
  std::set<std::string> shown;
  for (const char* heading : {"## Simulated (`--simulate`)", "## Bounded views"}) {
    const std::vector<std::string> runs = RowNames(heading);
    shown.insert(runs.begin(), runs.end());
    EXPECT_EQ(RobustnessTable(heading, "results.md"), SimulatedScaleCells(runs)) << heading;
  }
  for (const auto& run : fs::directory_iterator(kScale)) {
    const std::string name = run.path().filename().string();
    if (!fs::exists(ScaleSeeds(name).front() / "simulation.csv")) continue;
    EXPECT_TRUE(shown.count(name)) << "results/scale/" << name << " is in no table";
  }
}

// "Performance at scale: 99 synthetic nodes": results/scale/synthetic-99-processes/seed-1/ and
// synthetic-99-in-process/seed-1/, one launch each. Their tables have one row per method: the
// clusters' test MSE and the mean (two decimals), the in-cluster share (%, one decimal; "–" when
// the method draws no peer), the mean
// peak PSS of a node process (MiB, one decimal; processes only), the round overhead (%, one
// decimal: a node's time outside training and evaluation) and the method's wall time (s, one
// decimal).
TEST(ResultsPage, TheProcessScaleTablesAreTheirData) {
  for (const auto& [heading, run] : std::vector<std::pair<std::string, std::string>>{
           {"### As 99 processes", "synthetic-99-processes"},
           {"### As 99 threads of one process", "synthetic-99-in-process"}}) {
    std::map<std::string, std::vector<std::string>> expected;
    for (const auto& row : CsvRows(kScale / run / "seed-1" / "summary.csv")) {
      std::vector<std::string>& cells = expected[row.at("method")];
      for (const char* figure : {"cluster_0", "cluster_1", "cluster_2", "mean"}) {
        cells.push_back(TwoDecimals(std::stod(row.at(figure))));
      }
      const std::string& share = row.at("in_cluster");  // empty for a method that never draws
      cells.push_back(share.empty() ? "–" : OneDecimal(100 * std::stod(share)));
      if (run == "synthetic-99-processes") {
        cells.push_back(OneDecimal(std::stod(row.at("peak_pss_mib_mean"))));
      }
      cells.push_back(OneDecimal(100 * std::stod(row.at("overhead"))));
      cells.push_back(OneDecimal(std::stod(row.at("wall_s"))));
    }
    EXPECT_EQ(RobustnessTable(heading, "results.md"), expected) << heading;
  }
}

}  // namespace
}  // namespace meshlearn
