#include "tools/fuzz/fuzz.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>

#include "base/atomic_file.h"
#include "base/csv_table.h"
#include "base/number_text.h"
#include "process/build_identity.h"
#include "tools/cli/cli_exit.h"
#include "tools/fuzz/fuzz_invariants.h"
#include "tools/layout/kept_results.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/manifest.h"

namespace meshlearn::launch {
namespace {

// Runs a reduction may spend on one failure.
constexpr int kReductionRuns = 12;

std::string SeedDir(const FuzzOptions& options, uint64_t seed,
                    FuzzSeedRun run = FuzzSeedRun::kFirst) {
  return FuzzSeedDir(options.out_dir, seed, run);
}

SeedRunOptions RunOptionsOf(const FuzzOptions& options, bool hash_outputs = false) {
  return SeedRunOptions{options.canary, options.seed_timeout_s, hash_outputs};
}

bool Fails(const SeedResult& r, const std::string& invariant) {
  for (const Violation& v : r.violations) {
    if (v.invariant == invariant) return true;
  }
  return false;
}

// Runs `seed` a second time and compares the outputs' hash with `first`'s.
void CheckDeterminism(const FuzzScenario& s, const FuzzOptions& options, SeedResult& first) {
  const std::string again = SeedDir(options, s.seed, FuzzSeedRun::kAgain);
  SeedResult second = RunSeed(s, again, RunOptionsOf(options, /*hash_outputs=*/true));
  first.real_seconds += second.real_seconds;
  if (!second.violations.empty()) {
    first.violations.push_back({kDeterminism, "the second run broke " +
                                                  second.violations.front().invariant + ": " +
                                                  second.violations.front().detail});
  } else if (second.output_hash != first.output_hash) {
    first.violations.push_back(
        {kDeterminism, "the outputs of a second run differ (kept in " + again + ")"});
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(again, ec);
}

void PrintViolations(const SeedResult& r) {
  for (const Violation& v : r.violations) {
    std::printf("  %s: %s\n", v.invariant.c_str(), v.detail.c_str());
  }
}

// Greedy reduction of `failure` (see the rules in fuzz.h).
void Reduce(const FuzzFailure& failure, const FuzzOptions& options) {
  FuzzOptions smaller = options;
  FuzzScenario best = DrawScenario(failure.seed, smaller.limits, options.plugin_dir);
  int runs = 0;
  auto still_fails = [&](const FuzzLimits& limits) {
    if (runs >= kReductionRuns) return false;
    ++runs;
    FuzzScenario s = DrawScenario(failure.seed, limits, options.plugin_dir);
    SeedResult r =
        RunSeed(s, SeedDir(options, failure.seed, FuzzSeedRun::kReduced), RunOptionsOf(options));
    if (!Fails(r, failure.violation.invariant)) return false;
    best = s;
    return true;
  };
  bool progress = true;
  while (progress && runs < kReductionRuns) {
    progress = false;
    FuzzLimits limits = smaller.limits;
    if (best.nodes > 3) {
      limits.nodes = std::max(3, best.nodes / 2);
      if (still_fails(limits)) smaller.limits = limits, progress = true;
    }
    limits = smaller.limits;
    if (best.rounds > 1) {
      limits.rounds = std::max<int64_t>(1, best.rounds / 2);
      if (still_fails(limits)) smaller.limits = limits, progress = true;
    }
    for (FaultKind kind : std::set<FaultKind>(best.kinds)) {
      limits = smaller.limits;
      std::set<FaultKind> kinds = best.kinds;
      kinds.erase(kind);
      limits.kinds = kinds;
      if (still_fails(limits)) smaller.limits = limits, progress = true;
    }
    limits = smaller.limits;
    if (best.metric_plugin != FuzzPlugIn::kNone || best.merge_plugin != FuzzPlugIn::kNone) {
      limits.plugins = false;
      if (still_fails(limits)) smaller.limits = limits, progress = true;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(SeedDir(options, failure.seed, FuzzSeedRun::kReduced), ec);
  smaller.limits.nodes = best.nodes;
  smaller.limits.rounds = best.rounds;
  smaller.limits.kinds = best.kinds;
  std::printf("reduced %s (seed %llu, %d runs): %s\n  replay: %s\n",
              failure.violation.invariant.c_str(), static_cast<unsigned long long>(failure.seed),
              runs, DescribeScenario(best).c_str(), ReplayCommand(failure.seed, smaller).c_str());
}

void PrintSummary(const FuzzSummary& s, const FuzzOptions& options) {
  std::printf("fuzz: %llu seeds (%llu to %llu) in %.1f s: %.0f seeds/hour; %llu failed\n",
              static_cast<unsigned long long>(s.seeds),
              static_cast<unsigned long long>(options.from),
              static_cast<unsigned long long>(options.from + options.seeds - 1), s.real_seconds,
              s.real_seconds > 0 ? s.seeds * 3600.0 / s.real_seconds : 0.0,
              static_cast<unsigned long long>(s.failed));
  std::printf("fuzz: mean scenario %.1f nodes x %.1f rounds; %llu determinism checks\n",
              s.mean_nodes, s.mean_rounds, static_cast<unsigned long long>(s.determinism_checks));
  std::string faults;
  for (const auto& [kind, n] : s.seeds_with_fault) {
    faults += " " + std::string(NameOf(FaultKindNames(), kind)) + "=" + std::to_string(n);
  }
  std::printf("fuzz: seeds injecting each fault:%s\n", faults.empty() ? " none" : faults.c_str());
  std::string injected;
  for (const auto& [kind, n] : s.faults) injected += " " + kind + "=" + std::to_string(n);
  std::printf("fuzz: faults injected:%s\n", injected.empty() ? " none" : injected.c_str());
  std::string plugins;
  for (const auto& [plugin, n] : s.seeds_with_plugin) {
    plugins += " " + std::string(NameOf(FuzzPlugInNames(), plugin)) + "=" + std::to_string(n);
  }
  std::printf("fuzz: seeds running each plug-in:%s\n", plugins.empty() ? " none" : plugins.c_str());
  std::string checked;
  for (const std::string& name : InvariantNames()) checked += " " + name;
  std::printf("fuzz: invariants checked (%llu checks):%s; largest memory growth %.1f MiB\n",
              static_cast<unsigned long long>(s.invariant_checks), checked.c_str(),
              s.max_memory_growth_mib);
  for (const auto& [invariant, fastest] : s.fastest) {
    std::printf("fuzz: %s failed in %llu seed(s); fastest: seed %llu (%.1f s): %s\n",
                invariant.c_str(), static_cast<unsigned long long>(s.failures.at(invariant)),
                static_cast<unsigned long long>(fastest.seed), fastest.real_seconds,
                ReplayCommand(fastest.seed, options).c_str());
  }
}

// Writes `s` to "<out>/fuzz.csv" (FuzzFigures).
Status WriteSummaryCsv(const FuzzSummary& s, const FuzzOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  return WriteCsvFile<FuzzFigure>(PathIn(options.out_dir, kFuzzSummaryFile),
                                  FuzzFigures(s, options));
}

// Writes `manifest` to "<out>/manifest.toml", making the folder.
Status WriteFuzzManifest(const FuzzManifest& manifest, const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  return WriteFileAtomically(PathIn(out_dir, kManifestFile), RenderFuzzManifest(manifest));
}

// Fuzz(options) between two writes of the run's manifest (command line `command`): at the start,
// and at the end with the seeds that failed. Returns the exit code.
int FuzzWithManifest(const FuzzOptions& options, const std::vector<std::string>& command) {
  FuzzManifest manifest;
  manifest.from = options.from;
  manifest.seeds = options.seeds;
  manifest.launches.push_back(ThisLaunch(command, "fuzz"));
  manifest.started = manifest.launches.back().started;
  if (Status written = WriteFuzzManifest(manifest, options.out_dir); !written.ok()) {
    std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", written.ToString().c_str());
    return tools::kExitBadInput;
  }
  const FuzzSummary summary = Fuzz(options);
  manifest.failed = summary.failed;
  const bool stopped = !summary.error.empty();  // a seed's plug-in file is missing
  manifest.status = manifest.launches.back().status =
      summary.failed || stopped ? kFailed : kComplete;
  manifest.ended = manifest.launches.back().ended = NowUtc();
  if (Status written = WriteFuzzManifest(manifest, options.out_dir); !written.ok()) {
    std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", written.ToString().c_str());
  }
  if (stopped) return tools::kExitBadInput;
  return summary.failed == 0 ? tools::kExitOk : tools::kExitFailed;
}

}  // namespace

std::vector<FuzzFigure> FuzzFigures(const FuzzSummary& s, const FuzzOptions& options) {
  std::vector<FuzzFigure> rows;
  auto row = [&](const std::string& name, const std::string& value) {
    rows.push_back({name, value});
  };
  row("from", std::to_string(options.from));
  row("seeds", std::to_string(s.seeds));
  row("real_s", ExactNumber(s.real_seconds));
  row("seeds_per_hour", ExactNumber(s.real_seconds > 0 ? s.seeds * 3600.0 / s.real_seconds : 0));
  row("mean_nodes", ExactNumber(s.mean_nodes));
  row("mean_rounds", ExactNumber(s.mean_rounds));
  row("failed", std::to_string(s.failed));
  row("determinism_checks", std::to_string(s.determinism_checks));
  row("invariant_checks", std::to_string(s.invariant_checks));
  row("max_memory_growth_mib", ExactNumber(s.max_memory_growth_mib));
  for (const auto& [kind, n] : s.seeds_with_fault) {
    row("seeds_with_" + std::string(NameOf(FaultKindNames(), kind)), std::to_string(n));
  }
  for (const auto& [plugin, n] : s.seeds_with_plugin) {
    row("seeds_with_plugin_" + std::string(NameOf(FuzzPlugInNames(), plugin)), std::to_string(n));
  }
  for (const auto& [kind, n] : s.faults) row("injected_" + kind, std::to_string(n));
  for (const std::string& name : InvariantNames()) row("invariant_" + name, "checked");
  for (const auto& [invariant, n] : s.failures) row("failed_" + invariant, std::to_string(n));
  return rows;
}

std::string ReplayCommand(uint64_t seed, const FuzzOptions& options) {
  std::ostringstream line;
  line << "meshlearn-launch fuzz --replay " << seed;
  if (options.limits.nodes) line << " --nodes " << *options.limits.nodes;
  if (options.limits.rounds) line << " --rounds " << *options.limits.rounds;
  if (options.limits.kinds) line << " --faults " << FaultKindList(*options.limits.kinds);
  if (!options.limits.plugins) line << " --no-plugins";
  if (options.plugin_dir != DefaultPlugInDir()) line << " --plugins " << options.plugin_dir;
  if (options.canary) line << " --canary";
  if (options.out_dir != FuzzOptions().out_dir) line << " --out " << options.out_dir;
  return line.str();
}

FuzzSummary Fuzz(const FuzzOptions& options) {
  FuzzSummary summary;
  double nodes = 0, rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = options.from; seed < options.from + options.seeds; ++seed) {
    FuzzScenario s = DrawScenario(seed, options.limits, options.plugin_dir);
    if (Status files = CheckPlugInFiles(s); !files.ok()) {
      summary.error = files.message();
      std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", summary.error.c_str());
      break;
    }
    const std::string dir = SeedDir(options, seed);
    const bool twice = options.determinism_every > 0 &&
                       seed % static_cast<uint64_t>(options.determinism_every) == 0;
    SeedResult r = RunSeed(s, dir, RunOptionsOf(options, twice));
    if (twice && r.violations.empty()) {
      CheckDeterminism(s, options, r);
      ++summary.determinism_checks;
    }
    ++summary.seeds;
    nodes += s.nodes;
    rounds += static_cast<double>(s.rounds);
    for (FaultKind k : s.kinds) ++summary.seeds_with_fault[k];
    for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) {
      if (p != FuzzPlugIn::kNone) ++summary.seeds_with_plugin[p];
    }
    for (const auto& [kind, n] : r.faults) summary.faults[kind] += n;
    summary.invariant_checks += InvariantNames().size() - 1;  // determinism: counted below
    summary.max_memory_growth_mib = std::max(summary.max_memory_growth_mib, r.memory_growth_mib);
    std::printf("seed %llu: %s (%.1f s) %s\n", static_cast<unsigned long long>(seed),
                r.violations.empty() ? "ok" : "FAILED", r.real_seconds,
                DescribeScenario(s).c_str());
    if (r.violations.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    } else {
      PrintViolations(r);
      std::printf("  kept in %s; replay: %s\n", dir.c_str(), ReplayCommand(seed, options).c_str());
      ++summary.failed;
      const Violation& first = r.violations.front();
      ++summary.failures[first.invariant];
      auto it = summary.fastest.find(first.invariant);
      if (it == summary.fastest.end() || r.real_seconds < it->second.real_seconds) {
        summary.fastest[first.invariant] = {seed, first, r.real_seconds};
      }
    }
    std::fflush(stdout);
  }
  summary.mean_nodes = summary.seeds ? nodes / static_cast<double>(summary.seeds) : 0;
  summary.mean_rounds = summary.seeds ? rounds / static_cast<double>(summary.seeds) : 0;
  summary.real_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary.invariant_checks += summary.determinism_checks;
  PrintSummary(summary, options);
  if (Status written = WriteSummaryCsv(summary, options); !written.ok()) {
    std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", written.ToString().c_str());
  }
  if (options.reduce) {
    for (const auto& [invariant, failure] : summary.fastest) Reduce(failure, options);
  }
  return summary;
}

int FuzzCommand(int argc, char** argv) {
  CLI::App app{
      "meshlearn-launch fuzz: run drawn scenarios with faults through the simulator "
      "and check the invariants (docs/development.md \"The fault fuzzer\")"};
  FuzzOptions options;
  std::optional<uint64_t> replay;
  std::optional<int> nodes;
  std::optional<int64_t> rounds;
  std::string faults;
  app.add_option("--seeds", options.seeds, "how many seeds to run")
      ->check(CLI::Range(1, 1000000000));
  app.add_option("--from", options.from, "the first seed (default 1)");
  app.add_option("--out", options.out_dir, "where failing seeds are kept (default runs/fuzz)");
  app.add_option("--replay", replay, "run only this seed, and keep its folder");
  app.add_option("--nodes", nodes, "at most this many nodes per scenario")
      ->check(CLI::Range(3, 40));
  app.add_option("--rounds", rounds, "at most this many rounds per scenario")
      ->check(CLI::Range(1, 60));
  app.add_option("--faults", faults,
                 "inject only these fault kinds (comma-separated, or none): loss, corrupt, "
                 "truncate, partition, death, pause, slow, latency, duplicate, write_fail, "
                 "disk_full, torn");
  app.add_flag("--canary", options.canary,
               "plant a known bug (a restarted node drops one rounds.csv row too many) that "
               "rounds-contiguous must catch");
  app.add_option("--determinism-every", options.determinism_every,
                 "run every K-th seed twice and compare the outputs (default 10; 0: never)")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("!--no-reduce", options.reduce, "do not reduce the failures found");
  app.add_option("--plugins", options.plugin_dir,
                 "the folder of the plug-ins' .pt files that seeds draw (default: where this "
                 "build saves plugins/examples/, " +
                     DefaultPlugInDir() + ")");
  app.add_flag("!--no-plugins", options.limits.plugins, "draw no plug-in");
  app.add_option("--seed-timeout", options.seed_timeout_s,
                 "real seconds a seed may take before it is killed (default 900)")
      ->check(CLI::Range(1.0, 86400.0));
  bool allow_dirty = false;
  tools::AddAllowDirtyFlag(app, allow_dirty);
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (Status may_write =
          CheckWriteIntoResults("--out", options.out_dir, node::ThisBuild(), allow_dirty);
      !may_write.ok()) {
    std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", may_write.message().c_str());
    return tools::kExitBadInput;
  }
  options.limits.nodes = nodes;
  options.limits.rounds = rounds;
  options.plugin_dir = std::filesystem::absolute(options.plugin_dir).lexically_normal().string();
  if (!faults.empty()) {
    auto kinds = ParseFaultKinds(faults);
    if (!kinds.ok()) {
      std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", kinds.status().message().c_str());
      return tools::kExitBadInput;
    }
    options.limits.kinds = *kinds;
  }
  if (replay) {
    options.from = *replay;
    options.seeds = 1;
    options.reduce = false;
    FuzzScenario s = DrawScenario(*replay, options.limits, options.plugin_dir);
    if (Status files = CheckPlugInFiles(s); !files.ok()) {
      std::fprintf(stderr, "meshlearn-launch fuzz: %s\n", files.message().c_str());
      return tools::kExitBadInput;
    }
    const std::string dir = SeedDir(options, *replay);
    SeedResult r = RunSeed(s, dir, RunOptionsOf(options));
    std::printf("seed %llu: %s (%.1f s) %s\n  outputs in %s\n",
                static_cast<unsigned long long>(*replay), r.violations.empty() ? "ok" : "FAILED",
                r.real_seconds, DescribeScenario(s).c_str(), dir.c_str());
    PrintViolations(r);
    return r.violations.empty() ? tools::kExitOk : tools::kExitFailed;
  }
  std::vector<std::string> command(argv, argv + argc);
  command.insert(command.begin(), "meshlearn-launch");  // argv[0] is "fuzz"
  return FuzzWithManifest(options, command);
}

}  // namespace meshlearn::launch
