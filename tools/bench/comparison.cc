#include "tools/bench/comparison.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

namespace meshlearn::bench {
namespace {

struct Recorded {
  double value = 0;
  double target = 0;
  Goal goal = Goal::kAtLeast;
  std::optional<RatioSpread> spread;
};

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, Recorded>& Registry() {
  static std::map<std::string, Recorded> registry;
  return registry;
}

double SecondsOf(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PairSeconds TimePair(const std::function<void()>& subject, const std::function<void()>& baseline,
                     bool subject_first) {
  PairSeconds pair;
  if (subject_first) {
    pair.subject = SecondsOf(subject);
    pair.baseline = SecondsOf(baseline);
  } else {
    pair.baseline = SecondsOf(baseline);
    pair.subject = SecondsOf(subject);
  }
  return pair;
}

PairTiming TimeAlternating(benchmark::State& state, const std::function<void()>& subject,
                           const std::function<void()>& baseline) {
  PairTiming timing;
  bool subject_first = true;
  for (auto _ : state) {
    const PairSeconds pair = TimePair(subject, baseline, subject_first);
    subject_first = !subject_first;
    timing.subject_seconds += pair.subject;
    timing.baseline_seconds += pair.baseline;
    if (pair.subject > 0) timing.pair_ratios.push_back(pair.baseline / pair.subject);
    state.SetIterationTime(pair.subject);
  }
  return timing;
}

RatioSpread MedianRatio(const PairTiming& timing) { return SpreadOf(timing.pair_ratios); }

RatioSpread SpreadOf(std::vector<double> ratios) {
  if (ratios.empty()) return {};
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) { return ratios[static_cast<size_t>(q * (ratios.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.25), at(0.75), "pairs"};
}

void ReportRatio(benchmark::State& state, const std::string& name, double value, double target,
                 Goal goal) {
  state.counters["ratio"] = value;
  state.counters["target"] = target;
  state.SetLabel(name + (goal == Goal::kAtLeast ? " target>=" : " target<=") +
                 std::to_string(target));
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[name] = Recorded{value, target, goal, std::nullopt};
}

void ReportRatio(benchmark::State& state, const std::string& name, const RatioSpread& spread,
                 double target, Goal goal) {
  ReportRatio(state, name, spread.median, target, goal);
  state.counters["ratio_p25"] = spread.p25;
  state.counters["ratio_p75"] = spread.p75;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[name].spread = spread;
}

int PrintRatioSummary(FILE* out) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  int missed = 0;
  for (const auto& [name, r] : Registry()) {
    bool met = r.goal == Goal::kAtLeast ? r.value >= r.target : r.value <= r.target;
    if (!met) ++missed;
    std::string spread;
    if (r.spread) {
      char text[64];
      std::snprintf(text, sizeof(text), ", median of %s, p25-p75 %.3f-%.3f", r.spread->of,
                    r.spread->p25, r.spread->p75);
      spread = text;
    }
    std::fprintf(out, "ratio %s %.3f (target %s %.3g%s)%s\n", name.c_str(), r.value,
                 r.goal == Goal::kAtLeast ? ">=" : "<=", r.target, spread.c_str(),
                 met ? "" : "  MISSED");
  }
  std::fflush(out);
  return missed;
}

}  // namespace meshlearn::bench
