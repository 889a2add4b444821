#pragma once
// How meshlearn-bench states its performance targets.
//
// Every target in DESIGN.md "Performance targets" is a ratio against a baseline measured in the
// same run (memcpy, raw ZeroMQ, Python POT...), never an absolute time: the machine is shared and
// noisy, so only same-run ratios mean anything. A benchmark measures subject and baseline with
// TimeAlternating() and records the ratio with ReportRatio(); main() prints one summary line per
// comparison after all benchmarks ran:
//
//   ratio <name> <value> (target >= <x>)      or      ratio <name> <value> (target <= <x>)

#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace meshlearn::bench {

// Which side of the target a ratio must fall on.
enum class Goal { kAtLeast, kAtMost };

// Seconds spent in each side of an alternating measurement, in total and per iteration.
struct PairTiming {
  double subject_seconds = 0;
  double baseline_seconds = 0;
  std::vector<double> pair_ratios;  // baseline / subject seconds of each iteration
};

// The median of a measurement's ratios and their interquartile range.
struct RatioSpread {
  double median = 0;
  double p25 = 0;
  double p75 = 0;
  const char* of = "pairs";  // what the ratios are of, for the summary line
};

// Seconds of one subject run and one baseline run, timed side by side.
struct PairSeconds {
  double subject = 0;
  double baseline = 0;
};

// Times one run of `subject` and one of `baseline` with a steady clock, subject first when
// `subject_first`, else baseline first.
PairSeconds TimePair(const std::function<void()>& subject, const std::function<void()>& baseline,
                     bool subject_first);

// Runs `subject` and `baseline` once each per iteration of `state`, timing each with a steady
// clock; the order alternates between iterations (subject first, then baseline first). The
// subject's time is reported as the iteration time, so register the benchmark with
// ->UseManualTime(). Interleaving the two exposes both to the same machine load.
PairTiming TimeAlternating(benchmark::State& state, const std::function<void()>& subject,
                           const std::function<void()>& baseline);

// The median and interquartile range of `timing`'s per-iteration ratios (all 0 without any).
// Rationale: a burst of load skews a total but only a few pairs; the median of pairs stays put.
RatioSpread MedianRatio(const PairTiming& timing);
// The median and interquartile range of `ratios` (all 0 when empty).
RatioSpread SpreadOf(std::vector<double> ratios);

// Records comparison `name` with `value` and its `target`: sets the user counters "ratio" and
// "target" on `state` (so --benchmark_format=json carries them) and remembers the latest value
// for the summary. `name` is one word, e.g. "codec_vs_memcpy".
void ReportRatio(benchmark::State& state, const std::string& name, double value, double target,
                 Goal goal);
// The same for a median with its spread: the value is spread.median, and the counters
// "ratio_p25" and "ratio_p75" and the summary line add the interquartile range (of spread.of).
void ReportRatio(benchmark::State& state, const std::string& name, const RatioSpread& spread,
                 double target, Goal goal);

// Prints the summary lines of every comparison reported so far, in name order, to `out`.
// Returns the number of comparisons that missed their target (informational; never an error).
int PrintRatioSummary(FILE* out);

}  // namespace meshlearn::bench
