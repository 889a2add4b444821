#pragma once
// Bytes to reach an accuracy (issue 31, "Measured"): how many bytes a node sends, on average, until
// the mean test accuracy of its mesh first reaches a target set by a baseline run (usually the
// uncompressed one), for every method of every run. `meshlearn-launch bytes-to-target` reads the
// run folders (run_reader.h) and writes the two tables (kBytesToTargetFile and
// kBytesToTargetMeanFile of run_layout.h) (docs/experiments.md, "Bytes to reach an
// accuracy").
//
// Specification.
// - A method's curve has a point for every round that every node of the method reported in its
//   rounds.csv: the mean over the nodes of test_acc (in percent), and the mean over the nodes of
//   bytes_out. rounds.csv counts bytes_out as a running total (every frame the node sent since
//   its start, restarts included), so the second is the bytes a node sent, on average, up to and
//   including that round.
//   Rationale: a round that some node did not reach would be averaged over fewer nodes, and the
//   curve would jump when a slow or failed node drops out; the curve stops where the slowest node
//   stopped.
// - A method's final accuracy is its curve's accuracy at the curve's last round (not each node's
//   best-validation round, which the launcher's table reports).
//   Rationale: bytes are counted up to a round, so the accuracy they buy must be that round's.
// - The target of a method is the final accuracy of the method of the same name in its baseline
//   run, minus `points` percentage points. The round to target is the first curve round whose
//   accuracy is at least the target; the bytes to target are the curve's bytes at that round.
//   Neither exists when the curve never reaches the target.
// - The baseline of a run: the only one, when one is given; otherwise the one of the same seed
//   (manifest.toml). Rationale: seeds change the partition and the initial model, so a codec is
//   compared with the uncompressed run of its own seed.
// - The ratio of a row is its baseline's bytes to target over its own: how many times fewer bytes
//   it needed (1 for the baseline itself). It is empty when either never reached its target.
// - The mean table groups the rows by method and codec, over their seeds: mean final accuracy,
//   how many reached their target, and the mean bytes to target and ratio of those that did.
// - Time to target (issue 48): the mesh's accuracy at time t is the mean over the honest nodes
//   (attackers left out) of the test_acc of each node's last rounds.csv row with wall_s <= t,
//   from the first time every node has a row; it has a point at every row's wall_s from then
//   on. The time to target is the first such time at which it is at least the target (the target
//   of the row above; in a run's summary.csv and table, RunTarget's). wall_s is the simulated
//   seconds under --simulate and real seconds otherwise.
//   Rationale: rounds do not line up in time when nodes compute at different speeds or run
//   asynchronously; a curve indexed by rounds waits for the slowest node, and a straggler that
//   async leaves behind would set the time of every round.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/csv_table.h"
#include "base/status.h"
#include "node/config/config.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// One rounds.csv row of one node: the cells this measure reads.
struct NodeRound {
  int64_t round = 0;
  double test_acc = 0;     // a fraction, as rounds.csv writes it
  uint64_t bytes_out = 0;  // the bytes the node sent since its start, up to this round
  double wall_s = 0;       // when it completed the round (simulated seconds under --simulate)
};

// One point of the mesh's accuracy over time.
struct TimedAccuracy {
  double seconds = 0;
  double accuracy = 0;  // mean over the nodes of their latest test_acc, in percent
};

// The mesh's accuracy over time of the nodes' rows `nodes` (specification, "Time to target");
// empty when some node has no row.
std::vector<TimedAccuracy> AccuracyOverTime(const std::vector<std::vector<NodeRound>>& nodes);

// The first time of `curve` whose accuracy is at least `target`; nullopt when there is none.
std::optional<double> TimeToTarget(const std::vector<TimedAccuracy>& curve, double target);

// The target of a run's methods (summary.csv's target_acc): the lowest final accuracy (the last
// point's) among `curves`, the methods' AccuracyOverTime, less `points`: an accuracy every method
// reached, so that their times compare. Empty curves are skipped; nullopt when all are empty.
std::optional<double> RunTarget(const std::vector<std::vector<TimedAccuracy>>& curves,
                                double points);

// The percentage points below the lowest final accuracy that RunTarget sets for a run's
// summary.csv, table and dashboard.
inline constexpr double kRunTargetPoints = 1;

// The rows of the honest nodes of `run` (attackers left out), as this measure reads them.
std::vector<std::vector<NodeRound>> HonestNodeRounds(const MethodRun& run);

// One round of a method's curve.
struct CurvePoint {
  int64_t round = 0;
  double accuracy = 0;        // mean over the nodes of test_acc, in percent
  double bytes_per_node = 0;  // mean over the nodes of bytes_out
};

// The cells of the point where a row reached its target (bytes_to_target.csv): target_round
// (`round`) or bytes_to_target; both empty when it never did.
struct ReachedCell {
  bool round = true;
  std::string Write(const std::optional<CurvePoint>& reached) const;
  Status Read(std::string_view cell, const std::string& where,
              std::optional<CurvePoint>& reached) const;
};

// Seeds separated by ';' in one cell (bytes_to_target_mean.csv); empty for none.
struct SeedsCell {
  std::string Write(const std::vector<uint64_t>& seeds) const;
  Status Read(std::string_view cell, const std::string& where, std::vector<uint64_t>& seeds) const;
};

// The curve of a method whose nodes reported `nodes` (one list of rows per node): a point for
// every round that every node reported, in round order (specification above). Empty when there is
// no node, or no round that all of them reported.
std::vector<CurvePoint> MeanCurve(const std::vector<std::vector<NodeRound>>& nodes);

// The first point of `curve` whose accuracy is at least `target`; nullopt when there is none.
std::optional<CurvePoint> FirstReaching(const std::vector<CurvePoint>& curve, double target);

// The curve of one method of a run.
struct MethodCurve {
  std::string method;
  std::string codec;  // CodecText of its nodes' [compression]; "" when unknown
  std::vector<CurvePoint> curve;
  std::vector<TimedAccuracy> over_time;  // its honest nodes' accuracy over time
};

// The curves of every method of one run folder.
struct RunCurves {
  std::string dir;
  std::optional<uint64_t> seed;  // manifest.toml's; nullopt without one
  std::vector<MethodCurve> methods;
};

// One row of bytes_to_target.csv: one method of one run.
struct BytesToTargetRow {
  std::string run;  // the run folder
  std::string method;
  std::string codec;
  std::optional<uint64_t> seed;
  std::string baseline;  // the baseline run folder whose method gave the target
  double final_accuracy = 0;
  double target = 0;
  std::optional<CurvePoint> reached;       // the first point at or above the target; nullopt: never
  double bytes_total = 0;                  // the curve's bytes at its last round
  std::optional<double> ratio;             // the baseline's bytes to target over this row's
  std::optional<double> time_to_target_s;  // TimeToTarget of its over_time; nullopt: never

  // The columns of bytes_to_target.csv (base/csv_table.h): accuracies in percent, bytes per
  // node, empty cells where not known or never reached; time_to_target_s came later.
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    constexpr TextCell kQuoted{.quoted = true};
    c.Column("run", r.run, kQuoted);
    c.Column("method", r.method, kQuoted);
    c.Column("codec", r.codec, kQuoted);
    c.Column("seed", r.seed);
    c.Column("baseline", r.baseline, kQuoted);
    c.Column("final_acc", r.final_accuracy);
    c.Column("target_acc", r.target);
    c.Column("target_round", r.reached, ReachedCell{.round = true});
    c.Column("bytes_to_target", r.reached, ReachedCell{.round = false});
    c.Column("bytes_total", r.bytes_total);
    c.Column("ratio", r.ratio);
    c.Column("time_to_target_s", r.time_to_target_s, Presence::kAddedLater);
  }
};

// The rows of every method of `runs`, in order, with targets from `baselines` (at least one) set
// `points` percentage points below their final accuracies (specification above). A baseline run
// belongs in `runs` too when it should get its own rows. kInvalidArgument naming the folders for:
// a method absent from its baseline run, a run whose seed matches no baseline (or is unknown) when
// there are several, two baselines of one seed, a method with an empty curve.
Result<std::vector<BytesToTargetRow>> MeasureBytesToTarget(const std::vector<RunCurves>& baselines,
                                                           const std::vector<RunCurves>& runs,
                                                           double points);

// One row of bytes_to_target_mean.csv: the rows of one method and codec, over their seeds.
struct BytesToTargetMean {
  std::string method;
  std::string codec;
  int runs = 0;
  std::vector<uint64_t> seeds;             // the known seeds of its rows, in row order
  double final_accuracy = 0;               // mean over its rows
  int reached = 0;                         // rows that reached their target
  std::optional<double> bytes_to_target;   // mean over the rows that reached; nullopt: none did
  double bytes_total = 0;                  // mean over its rows
  std::optional<double> ratio;             // mean over the rows with a ratio; nullopt: none has
  std::optional<double> time_to_target_s;  // mean over the rows with one; nullopt: none has

  // The columns of bytes_to_target_mean.csv (base/csv_table.h); seeds ';'-separated;
  // time_to_target_s came later.
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& m) {
    c.Column("method", m.method, TextCell{.quoted = true});
    c.Column("codec", m.codec, TextCell{.quoted = true});
    c.Column("runs", m.runs, WholeCell{.form = {.min = 0}});
    c.Column("seeds", m.seeds, SeedsCell{});
    c.Column("final_acc", m.final_accuracy);
    c.Column("reached", m.reached, WholeCell{.form = {.min = 0}});
    c.Column("bytes_to_target", m.bytes_to_target);
    c.Column("bytes_total", m.bytes_total);
    c.Column("ratio", m.ratio);
    c.Column("time_to_target_s", m.time_to_target_s, Presence::kAddedLater);
  }
};

// Groups `rows` by method and codec, in order of first appearance, and averages each group.
std::vector<BytesToTargetMean> MeanOverSeeds(const std::vector<BytesToTargetRow>& rows);

// How `compression` reads in the tables: the codec's name ("none", "fp16", "int8", "topk"), with
// what differs from its defaults in parentheses: "int8 (block 64)", "topk (0.05, fp16)",
// "topk (0.05, int8, step 1)" (top-k always names its fraction and values).
std::string CodecText(const node::CompressionSection& compression);

// Reads the round, test_acc, bytes_out and wall_s cells of the rounds.csv at `path`
// (node::RoundRow's description). kNotFound for a missing file; kMalformed naming the file, line
// and column for what the description refuses, or a test_acc or wall_s that is not a finite
// number (an empty test_acc, as a regression run writes, included).
// Rationale: rounds.csv reads such a cell as NaN (not known), which here would move a target or
// a time without a word.
Result<std::vector<NodeRound>> ReadNodeRounds(const std::string& path);

// Reads the run folder `dir` (ReadRunFolder) and every node's rounds.csv (ReadNodeRounds) into
// the curves of its methods, each with the codec of its nodes (several: joined by "+"). Errors:
// ReadRunFolder's and ReadNodeRounds' (a node of clusters.csv without rounds.csv: kNotFound naming
// the file); kMalformed naming the file for a rounds.csv without rows.
Result<RunCurves> ReadRunCurves(const std::string& dir);

// Writes `rows` as bytes_to_target.csv: run, method, codec, seed, baseline, final_acc,
// target_acc, target_round, bytes_to_target, bytes_total, ratio, time_to_target_s (accuracies in
// percent, bytes per node; empty cells where not known or never reached).
Status WriteBytesToTargetCsv(const std::string& path, const std::vector<BytesToTargetRow>& rows);

// Writes `means` as bytes_to_target_mean.csv: method, codec, runs, seeds (';'-separated),
// final_acc, reached, bytes_to_target, bytes_total, ratio, time_to_target_s.
Status WriteBytesToTargetMeanCsv(const std::string& path,
                                 const std::vector<BytesToTargetMean>& means);

// The table the command prints: one line per mean row, bytes in MB (10^6).
std::string FormatBytesToTarget(const std::vector<BytesToTargetMean>& means, double points);

// `meshlearn-launch bytes-to-target RUN_DIR... --baseline RUN_DIR... --out DIR [--points P]
// [--allow-dirty]`: reads the baseline runs and the runs (ReadRunCurves; a folder given as both
// counts once, as a baseline), writes bytes_to_target.csv and bytes_to_target_mean.csv into --out
// and prints the mean table. Returns kExitOk, or kExitBadInput (the error on stderr) for a bad
// command line, an --out in a checkout's results/ and a build that may not write there
// (kept_results.h), a folder that cannot be read, any error of MeasureBytesToTarget or a table
// that cannot be written.
int BytesToTargetCommand(int argc, char** argv);

}  // namespace meshlearn::launch
