#include "tools/report/bytes_to_target.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "base/csv_table.h"
#include "process/build_identity.h"
#include "tools/cli/cli_exit.h"
#include "tools/layout/kept_results.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/run_reader.h"

namespace meshlearn::launch {
namespace {

// The mean of `values`.
double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// The codec of the nodes of `run`: CodecText of each node's compression, distinct ones joined by
// "+" in sorted order; "" when no node's is known.
std::string CodecOf(const MethodRun& run) {
  std::set<std::string> codecs;
  for (const NodeRun& n : run.nodes) {
    if (n.compression) codecs.insert(CodecText(*n.compression));
  }
  std::string joined;
  for (const std::string& codec : codecs) joined += (joined.empty() ? "" : "+") + codec;
  return joined;
}

// The baseline of `run` among `baselines` (specification: the only one, else the one of its
// seed).
Result<const RunCurves*> BaselineOf(const RunCurves& run, const std::vector<RunCurves>& baselines) {
  if (baselines.size() == 1) return &baselines.front();
  const RunCurves* found = nullptr;
  for (const RunCurves& b : baselines) {
    if (run.seed && b.seed == run.seed) found = &b;
  }
  if (found) return found;
  return Status::InvalidArgument(
      "run '" + run.dir + "' " +
      (run.seed ? "has seed " + std::to_string(*run.seed) + ", which no baseline run has"
                : "has no manifest.toml to tell its seed") +
      "; with several baselines each run is compared with the baseline of its seed");
}

// kInvalidArgument when two of several `baselines` have the same seed or one has none.
Status CheckBaselineSeeds(const std::vector<RunCurves>& baselines) {
  if (baselines.empty()) return Status::InvalidArgument("no baseline run given");
  if (baselines.size() == 1) return Status::Ok();
  std::map<uint64_t, std::string> dir_of;
  for (const RunCurves& b : baselines) {
    if (!b.seed) {
      return Status::InvalidArgument("baseline run '" + b.dir +
                                     "' has no manifest.toml to tell its seed; with several "
                                     "baselines each must be of another seed");
    }
    auto [it, fresh] = dir_of.emplace(*b.seed, b.dir);
    if (!fresh) {
      return Status::InvalidArgument("baseline runs '" + it->second + "' and '" + b.dir +
                                     "' both have seed " + std::to_string(*b.seed) +
                                     "; give one baseline per seed");
    }
  }
  return Status::Ok();
}

// The method `name` of `run`, or nullptr.
const MethodCurve* MethodOf(const RunCurves& run, const std::string& name) {
  for (const MethodCurve& m : run.methods) {
    if (m.method == name) return &m;
  }
  return nullptr;
}

// kInvalidArgument when `method` of `run` has no point.
Status CheckCurve(const RunCurves& run, const MethodCurve& method) {
  if (!method.curve.empty()) return Status::Ok();
  return Status::InvalidArgument("method '" + method.method + "' of run '" + run.dir +
                                 "' has no round that every node reported");
}

// The names of the methods of `run`, as "'a', 'b'".
std::string MethodNames(const RunCurves& run) {
  std::string names;
  for (const MethodCurve& m : run.methods) names += (names.empty() ? "'" : ", '") + m.method + "'";
  return names;
}

// Reads every folder of `dirs` (ReadRunCurves), in order; the first error.
Result<std::vector<RunCurves>> ReadRunsCurves(const std::vector<std::string>& dirs) {
  std::vector<RunCurves> runs;
  for (const std::string& dir : dirs) {
    Result<RunCurves> curves = ReadRunCurves(dir);
    if (!curves.ok()) return curves.status();
    runs.push_back(std::move(*curves));
  }
  return runs;
}

// Says what went wrong on stderr; returns the command's exit code for it.
int Failed(const Status& status) {
  std::fprintf(stderr, "meshlearn-launch bytes-to-target: %s\n", status.ToString().c_str());
  return tools::kExitBadInput;
}

// The seeds as one cell: "1;2;3".
std::string Seeds(const std::vector<uint64_t>& seeds) { return SeedsCell{}.Write(seeds); }

}  // namespace

std::vector<CurvePoint> MeanCurve(const std::vector<std::vector<NodeRound>>& nodes) {
  struct Sums {
    double accuracy = 0, bytes = 0;
    size_t nodes = 0;
  };
  std::map<int64_t, Sums> per_round;
  for (const std::vector<NodeRound>& rows : nodes) {
    for (const NodeRound& r : rows) {
      Sums& s = per_round[r.round];
      s.accuracy += r.test_acc;
      s.bytes += static_cast<double>(r.bytes_out);
      ++s.nodes;
    }
  }
  std::vector<CurvePoint> curve;
  const double n = static_cast<double>(nodes.size());
  for (const auto& [round, s] : per_round) {
    if (s.nodes != nodes.size()) continue;
    curve.push_back({round, 100.0 * s.accuracy / n, s.bytes / n});
  }
  return curve;
}

std::optional<CurvePoint> FirstReaching(const std::vector<CurvePoint>& curve, double target) {
  for (const CurvePoint& p : curve) {
    if (p.accuracy >= target) return p;
  }
  return std::nullopt;
}

std::vector<TimedAccuracy> AccuracyOverTime(const std::vector<std::vector<NodeRound>>& nodes) {
  // Every row as (time, node, accuracy), in time order; at equal times in node and row order.
  struct Change {
    double seconds;
    size_t node;
    double accuracy;
  };
  std::vector<Change> changes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].empty()) return {};
    for (const NodeRound& r : nodes[i]) changes.push_back({r.wall_s, i, r.test_acc});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.seconds < b.seconds; });
  std::vector<double> latest(nodes.size(), NAN);
  size_t known = 0;
  double sum = 0;
  std::vector<TimedAccuracy> curve;
  for (size_t c = 0; c < changes.size(); ++c) {
    const Change& change = changes[c];
    if (std::isnan(latest[change.node])) {
      ++known;
    } else {
      sum -= latest[change.node];
    }
    latest[change.node] = change.accuracy;
    sum += change.accuracy;
    const bool last_at_this_time =
        c + 1 == changes.size() || changes[c + 1].seconds != change.seconds;
    if (known == nodes.size() && last_at_this_time) {
      curve.push_back({change.seconds, 100.0 * sum / static_cast<double>(nodes.size())});
    }
  }
  return curve;
}

std::optional<double> TimeToTarget(const std::vector<TimedAccuracy>& curve, double target) {
  for (const TimedAccuracy& p : curve) {
    if (p.accuracy >= target) return p.seconds;
  }
  return std::nullopt;
}

std::optional<double> RunTarget(const std::vector<std::vector<TimedAccuracy>>& curves,
                                double points) {
  std::optional<double> lowest;
  for (const std::vector<TimedAccuracy>& curve : curves) {
    if (curve.empty()) continue;
    lowest = std::min(lowest.value_or(curve.back().accuracy), curve.back().accuracy);
  }
  if (!lowest) return std::nullopt;
  return *lowest - points;
}

std::vector<std::vector<NodeRound>> HonestNodeRounds(const MethodRun& run) {
  std::vector<std::vector<NodeRound>> nodes;
  for (const NodeRun& n : run.nodes) {
    if (n.attacker) continue;
    std::vector<NodeRound>& rows = nodes.emplace_back();
    for (const node::RoundRow& r : n.rounds) {
      rows.push_back({r.round, r.test_acc, r.bytes_out, r.wall_s});
    }
  }
  return nodes;
}

Result<std::vector<BytesToTargetRow>> MeasureBytesToTarget(const std::vector<RunCurves>& baselines,
                                                           const std::vector<RunCurves>& runs,
                                                           double points) {
  MESHLEARN_RETURN_IF_ERROR(CheckBaselineSeeds(baselines));
  std::vector<BytesToTargetRow> rows;
  for (const RunCurves& run : runs) {
    Result<const RunCurves*> baseline = BaselineOf(run, baselines);
    if (!baseline.ok()) return baseline.status();
    for (const MethodCurve& method : run.methods) {
      const MethodCurve* reference = MethodOf(**baseline, method.method);
      if (!reference) {
        return Status::InvalidArgument("method '" + method.method + "' of run '" + run.dir +
                                       "' is not in its baseline run '" + (*baseline)->dir +
                                       "' (which has " + MethodNames(**baseline) + ")");
      }
      MESHLEARN_RETURN_IF_ERROR(CheckCurve(run, method));
      MESHLEARN_RETURN_IF_ERROR(CheckCurve(**baseline, *reference));
      BytesToTargetRow row;
      row.run = run.dir;
      row.method = method.method;
      row.codec = method.codec;
      row.seed = run.seed;
      row.baseline = (*baseline)->dir;
      row.final_accuracy = method.curve.back().accuracy;
      row.target = reference->curve.back().accuracy - points;
      row.reached = FirstReaching(method.curve, row.target);
      row.bytes_total = method.curve.back().bytes_per_node;
      const std::optional<CurvePoint> reference_reached =
          FirstReaching(reference->curve, row.target);
      if (row.reached && reference_reached && row.reached->bytes_per_node > 0) {
        row.ratio = reference_reached->bytes_per_node / row.reached->bytes_per_node;
      }
      row.time_to_target_s = TimeToTarget(method.over_time, row.target);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<BytesToTargetMean> MeanOverSeeds(const std::vector<BytesToTargetRow>& rows) {
  struct Group {
    BytesToTargetMean mean;
    std::vector<double> accuracy, bytes_to_target, bytes_total, ratio, time_to_target;
  };
  std::vector<Group> groups;
  for (const BytesToTargetRow& row : rows) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.mean.method == row.method && g.mean.codec == row.codec;
    });
    if (it == groups.end()) {
      groups.push_back({});
      it = groups.end() - 1;
      it->mean.method = row.method;
      it->mean.codec = row.codec;
    }
    ++it->mean.runs;
    if (row.seed) it->mean.seeds.push_back(*row.seed);
    it->accuracy.push_back(row.final_accuracy);
    it->bytes_total.push_back(row.bytes_total);
    if (row.reached) it->bytes_to_target.push_back(row.reached->bytes_per_node);
    if (row.ratio) it->ratio.push_back(*row.ratio);
    if (row.time_to_target_s) it->time_to_target.push_back(*row.time_to_target_s);
  }
  std::vector<BytesToTargetMean> means;
  for (Group& g : groups) {
    g.mean.final_accuracy = Mean(g.accuracy);
    g.mean.reached = static_cast<int>(g.bytes_to_target.size());
    if (!g.bytes_to_target.empty()) g.mean.bytes_to_target = Mean(g.bytes_to_target);
    g.mean.bytes_total = Mean(g.bytes_total);
    if (!g.ratio.empty()) g.mean.ratio = Mean(g.ratio);
    if (!g.time_to_target.empty()) g.mean.time_to_target_s = Mean(g.time_to_target);
    means.push_back(std::move(g.mean));
  }
  return means;
}

std::string CodecText(const node::CompressionSection& c) {
  const node::CompressionSection defaults;
  std::string text = CompressionCodecName(c.codec);
  std::vector<std::string> changed;
  if (c.codec == CompressionCodec::kTopK) {
    changed = {ExactNumber(c.topk_fraction), CompressionCodecName(c.topk_values)};
  }
  const bool int8_values =
      c.codec == CompressionCodec::kInt8 ||
      (c.codec == CompressionCodec::kTopK && c.topk_values == CompressionCodec::kInt8);
  if (int8_values && c.block_size != defaults.block_size) {
    changed.push_back("block " + std::to_string(c.block_size));
  }
  if (c.codec == CompressionCodec::kTopK && c.consensus_step != defaults.consensus_step) {
    changed.push_back("step " + ExactNumber(c.consensus_step));
  }
  for (size_t i = 0; i < changed.size(); ++i) {
    text += (i == 0 ? " (" : ", ") + changed[i] + (i + 1 == changed.size() ? ")" : "");
  }
  return text;
}

Result<std::vector<NodeRound>> ReadNodeRounds(const std::string& path) {
  auto table = ReadCsvFile<node::RoundRow>(path);
  if (!table.ok()) return table.status();
  std::vector<NodeRound> rows;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    const node::RoundRow& r = table->rows[i];
    for (const auto& [name, value] : {std::pair("test_acc", r.test_acc), {"wall_s", r.wall_s}}) {
      if (std::isfinite(value)) continue;
      return Status::Malformed(CsvWhere(path, table->lines[i], table->layout.ColumnOf(name)) +
                               " (" + name + "): '" + ExactNumber(value) +
                               "' is not a finite number; allowed: " + AllowedNumbers<double>() +
                               " (bytes to target needs the test accuracy of a classification "
                               "run, and the time of every round)");
    }
    rows.push_back({r.round, r.test_acc, r.bytes_out, r.wall_s});
  }
  return rows;
}

Result<RunCurves> ReadRunCurves(const std::string& dir) {
  Result<RunFolder> folder = ReadRunFolder(dir);
  if (!folder.ok()) return folder.status();
  RunCurves curves;
  curves.dir = dir;
  curves.seed = folder->seed;
  for (const MethodRun& run : folder->runs) {
    std::vector<std::vector<NodeRound>> nodes, honest;
    for (const NodeRun& n : run.nodes) {
      const std::string path = PathIn(n.dir, kRoundsFile);
      Result<std::vector<NodeRound>> rows = ReadNodeRounds(path);
      if (!rows.ok()) return rows.status();
      if (rows->empty()) return Status::Malformed(path + ": no rows (the node completed no round)");
      if (!n.attacker) honest.push_back(*rows);
      nodes.push_back(std::move(*rows));
    }
    curves.methods.push_back(
        {run.method.name, CodecOf(run), MeanCurve(nodes), AccuracyOverTime(honest)});
  }
  return curves;
}

std::string ReachedCell::Write(const std::optional<CurvePoint>& reached) const {
  if (!reached) return "";
  return round ? std::to_string(reached->round) : ExactNumber(reached->bytes_per_node);
}

Status ReachedCell::Read(std::string_view cell, const std::string& where,
                         std::optional<CurvePoint>& reached) const {
  if (cell.empty()) return Status::Ok();
  if (!reached) reached.emplace();
  if (round) {
    auto value = ParseNumber<int64_t>(cell, where, {.min = 0});
    if (value.ok()) reached->round = *value;
    return value.status();
  }
  auto value = ParseNumber<double>(cell, where, {.min = 0});
  if (value.ok()) reached->bytes_per_node = *value;
  return value.status();
}

std::string SeedsCell::Write(const std::vector<uint64_t>& seeds) const {
  std::string text;
  for (uint64_t s : seeds) {
    if (!text.empty()) text += ';';
    text += std::to_string(s);
  }
  return text;
}

Status SeedsCell::Read(std::string_view cell, const std::string& where,
                       std::vector<uint64_t>& seeds) const {
  std::vector<std::string> texts;
  MESHLEARN_RETURN_IF_ERROR(ListCell{}.Read(cell, where, texts));
  seeds.clear();
  for (const std::string& text : texts) {
    auto seed = ParseNumber<uint64_t>(text, where + ", a seed", {});
    if (!seed.ok()) return seed.status();
    seeds.push_back(*seed);
  }
  return Status::Ok();
}

Status WriteBytesToTargetCsv(const std::string& path, const std::vector<BytesToTargetRow>& rows) {
  return WriteCsvFile<BytesToTargetRow>(path, rows);
}

Status WriteBytesToTargetMeanCsv(const std::string& path,
                                 const std::vector<BytesToTargetMean>& means) {
  return WriteCsvFile<BytesToTargetMean>(path, means);
}

std::string FormatBytesToTarget(const std::vector<BytesToTargetMean>& means, double points) {
  size_t method_width = 6, codec_width = 5, seeds_width = 5;
  for (const BytesToTargetMean& m : means) {
    method_width = std::max(method_width, m.method.size());
    codec_width = std::max(codec_width, m.codec.size());
    seeds_width = std::max(seeds_width, Seeds(m.seeds).size());
  }
  std::string out =
      "Bytes a node sent until the mean test accuracy first reached the baseline's "
      "final accuracy minus " +
      ExactNumber(points) + (points == 1 ? " point" : " points") +
      " (means over the runs of each method and codec), and the seconds until then (wall_s: "
      "simulated under --simulate):\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  %9s  %7s  %12s  %11s  %9s  %6s\n",
                static_cast<int>(method_width), "method", static_cast<int>(codec_width), "codec",
                static_cast<int>(seeds_width), "seeds", "final acc", "reached", "MB to target",
                "s to target", "MB total", "ratio");
  out += line;
  for (const BytesToTargetMean& m : means) {
    char to_target[32] = "-", ratio[32] = "-", time_to_target[32] = "-";
    if (m.bytes_to_target)
      std::snprintf(to_target, sizeof(to_target), "%.3f", *m.bytes_to_target / 1e6);
    if (m.time_to_target_s) {
      std::snprintf(time_to_target, sizeof(time_to_target), "%.1f", *m.time_to_target_s);
    }
    if (m.ratio) std::snprintf(ratio, sizeof(ratio), "%.2f", *m.ratio);
    const std::string reached = std::to_string(m.reached) + " of " + std::to_string(m.runs);
    std::snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  %9.2f  %7s  %12s  %11s  %9.3f  %6s\n",
                  static_cast<int>(method_width), m.method.c_str(), static_cast<int>(codec_width),
                  m.codec.c_str(), static_cast<int>(seeds_width), Seeds(m.seeds).c_str(),
                  m.final_accuracy, reached.c_str(), to_target, time_to_target, m.bytes_total / 1e6,
                  ratio);
    out += line;
  }
  return out;
}

int BytesToTargetCommand(int argc, char** argv) {
  CLI::App app{
      "meshlearn-launch bytes-to-target: the bytes a node sent until the mean test accuracy "
      "first reached a baseline run's final accuracy minus some points, for every method of "
      "every run (docs/experiments.md)"};
  std::vector<std::string> baseline_dirs, run_dirs;
  std::string out;
  double points = 1;
  app.add_option("run_dirs", run_dirs,
                 "run folders to compare with their baseline (e.g. one per codec and seed)");
  app.add_option("--baseline", baseline_dirs,
                 "the baseline run folder (e.g. uncompressed); repeatable, one per seed: each run "
                 "is then compared with the baseline of its seed (manifest.toml)")
      ->required();
  app.add_option("--out", out, "where bytes_to_target.csv and bytes_to_target_mean.csv go")
      ->required();
  app.add_option("--points", points,
                 "the target is the baseline's final mean test accuracy minus this many "
                 "percentage points (default 1)")
      ->check(CLI::NonNegativeNumber);
  bool allow_dirty = false;
  tools::AddAllowDirtyFlag(app, allow_dirty);
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (Status may_write = CheckWriteIntoResults("--out", out, node::ThisBuild(), allow_dirty);
      !may_write.ok()) {
    return Failed(may_write);
  }

  // Every folder once: a run also given as a baseline is read as the baseline.
  std::vector<std::string> others;
  for (const std::string& dir : run_dirs) {
    std::error_code ec;  // a folder that does not exist is no baseline; ReadRunCurves says so
    if (std::none_of(baseline_dirs.begin(), baseline_dirs.end(), [&](const std::string& b) {
          return std::filesystem::equivalent(b, dir, ec);
        })) {
      others.push_back(dir);
    }
  }
  Result<std::vector<RunCurves>> baselines = ReadRunsCurves(baseline_dirs);
  if (!baselines.ok()) return Failed(baselines.status());
  Result<std::vector<RunCurves>> runs = ReadRunsCurves(others);
  if (!runs.ok()) return Failed(runs.status());
  runs->insert(runs->begin(), baselines->begin(), baselines->end());
  Result<std::vector<BytesToTargetRow>> rows = MeasureBytesToTarget(*baselines, *runs, points);
  if (!rows.ok()) return Failed(rows.status());
  const std::vector<BytesToTargetMean> means = MeanOverSeeds(*rows);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  const std::string rows_path = PathIn(out, kBytesToTargetFile);
  const std::string means_path = PathIn(out, kBytesToTargetMeanFile);
  for (const Status& written :
       {WriteBytesToTargetCsv(rows_path, *rows), WriteBytesToTargetMeanCsv(means_path, means)}) {
    if (!written.ok()) return Failed(written);
  }
  std::printf("%s\nper run:  %s\nmean:     %s\n", FormatBytesToTarget(means, points).c_str(),
              rows_path.c_str(), means_path.c_str());
  return tools::kExitOk;
}

}  // namespace meshlearn::launch
