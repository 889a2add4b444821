// meshlearn-bench: the project's performance targets as same-run ratios (see comparison.h).
// Accepts every Google Benchmark flag (--benchmark_filter, --benchmark_format=json, ...).

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "tools/bench/comparison.h"
#include "training/cpu_pinning.h"

int main(int argc, char** argv) {
  if (!meshlearn::training::PinCpuKernelsOrExplain("meshlearn-bench")) return 2;
  // With a machine-readable format on stdout, the summary goes to stderr to keep stdout parseable.
  FILE* summary = stdout;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--benchmark_format=", 0) == 0 && arg != "--benchmark_format=console") {
      summary = stderr;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("kernels", meshlearn::training::CpuKernelSummary());
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  meshlearn::bench::PrintRatioSummary(summary);
  return 0;
}
