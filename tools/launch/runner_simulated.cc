#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "base/atomic_file.h"
#include "base/csv_table.h"
#include "sim/heterogeneity.h"
#include "sim/simulation.h"
#include "sim/snapshot.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"

namespace meshlearn::launch {
namespace {

// Writes "<run.dir>/network.csv" (node, compute_factor, latency_ms, bandwidth_mbit_s; empty for
// an infinite bandwidth) when some node's profile differs from the mesh's (sim/heterogeneity.h),
// so that a run says which nodes were slow.
Status WriteNetworkCsv(const MethodRun& run, const std::vector<node::NodeConfig>& configs,
                       const Scenario& scenario) {
  std::vector<std::string> ids;
  for (const node::NodeConfig& c : configs) ids.push_back(c.id);
  auto profiles = sim::DrawProfiles(scenario.network, ids, scenario.seed);
  if (!profiles.ok()) return profiles.status();
  const sim::NetworkModel& mesh = scenario.network;
  std::vector<NetworkRow> rows;
  bool differs = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    const sim::NodeProfile& p = (*profiles)[i];
    differs = differs || p.compute_factor != 1 || p.latency_s != mesh.latency_s ||
              p.bandwidth_bytes_per_s != mesh.bandwidth_bytes_per_s;
    std::optional<double> bandwidth;
    if (p.bandwidth_bytes_per_s > 0) bandwidth = p.bandwidth_bytes_per_s * 8 / 1e6;
    rows.push_back({ids[i], p.compute_factor, p.latency_s * 1000, bandwidth});
  }
  return differs ? WriteCsvFile<NetworkRow>(PathIn(run.dir, kNetworkFile), rows) : Status::Ok();
}

// Peak resident memory of this process in MiB (0 when unavailable).
double PeakRssMib() { return ProcSizeMib("/proc/self/status", "VmHWM:"); }

// The mesh simulated in this process: the nodes' real logic on a virtual clock and the
// scenario's [network] model, deterministic for a seed. The one call into the simulator
// (sim::Simulate) is here.
class SimulatedRunner : public MethodRunner {
 public:
  std::string Mode() const override { return "simulated"; }
  NodeWorld World() const override { return NodeWorld::kSimulated; }
  // The run's simulation.csv, and one line per simulated method.
  void ReportRun(const std::string& out_dir, const std::vector<MethodRun>& runs) const override {
    const std::string path = PathIn(out_dir, kSimulationFile);
    Status written = WriteSimulationCsv(path, runs);
    if (!written.ok()) {
      std::fprintf(stderr, "meshlearn-launch: %s\n", written.ToString().c_str());
    }
    for (const MethodRun& run : runs) {
      if (run.simulation) std::printf("%s\n", DescribeSimulation(run).c_str());
    }
    std::printf("simulation: %s\n", path.c_str());
  }
  Status Run(const MethodJob& job, MethodRun& run) override {
    const std::vector<node::NodeConfig>& configs = job.configs;
    const Scenario& scenario = job.scenario;
    const RunOptions& options = job.options;
    const std::atomic<bool>& interrupt = job.interrupt;
    for (size_t i = 0; i < configs.size(); ++i) {
      MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(PathIn(run.nodes[i].dir, kNodeConfigFile),
                                                    node::RenderNodeConfig(configs[i])));
    }
    MESHLEARN_RETURN_IF_ERROR(WriteNetworkCsv(run, configs, scenario));
    ProgressLine progress(run.method.name, configs.front().training.rounds);
    sim::SimulationOptions sim;
    sim.network = scenario.network;
    sim.schedule = scenario.schedule;
    sim.seed = scenario.seed;
    sim.threads = options.threads;
    sim.interrupt = &interrupt;
    sim.snapshot_every = options.snapshot_every;
    sim.snapshot_dir = PathIn(run.dir, kSnapshotFolder);
    std::error_code ec;
    sim.resume = options.resume &&
                 std::filesystem::exists(PathIn(sim.snapshot_dir, sim::kSnapshotFileName), ec);
    // The dashboard reads the snapshot the simulation thread leaves at each progress report.
    std::mutex latest_mutex;
    std::vector<std::optional<node::NodeStatus>> latest(configs.size());
    sim.with_status = options.observer != nullptr;
    if (options.observer) {
      options.observer->NodesStarted(run, [&] {
        std::lock_guard<std::mutex> lock(latest_mutex);
        return latest;
      });
    }
    sim.on_progress = [&](const sim::SimulationProgress& p) {
      if (options.observer) {
        std::lock_guard<std::mutex> lock(latest_mutex);
        for (size_t i = 0; i < p.statuses.size() && i < latest.size(); ++i)
          latest[i] = p.statuses[i];
      }
      char extra[96];
      std::snprintf(extra, sizeof(extra), "simulated %.1fs, %.0fk events/s", p.simulated_seconds,
                    p.real_seconds > 0 ? p.events / p.real_seconds / 1000 : 0.0);
      progress.Show(p.reached, p.mean_val_loss, 0, p.real_seconds, extra);
    };
    auto report = sim::Simulate(configs, sim);
    progress.Finish();
    if (options.observer) options.observer->NodesStopped(run);
    if (!report.ok()) return report.status();
    run.interrupted = report->interrupted;
    if (report->resumed_from >= 0) {
      std::printf("[%s] resumed from the snapshot after round %lld\n", run.method.name.c_str(),
                  static_cast<long long>(report->resumed_from));
      if (std::isnan(report->earlier_real_seconds)) {
        std::printf(
            "[%s] that snapshot does not record the earlier launches' seconds: the "
            "method's real seconds count this launch only\n",
            run.method.name.c_str());
      }
    }
    if (report->interrupted && report->snapshot_round >= 0) {
      std::printf("[%s] stopped at the snapshot after round %lld: --resume continues from it\n",
                  run.method.name.c_str(), static_cast<long long>(report->snapshot_round));
    }
    for (size_t i = 0; i < report->failures.size(); ++i) {
      if (!report->failures[i]) continue;
      run.nodes[i].failure = *report->failures[i];
      std::printf("node %s failed: %s\n", run.nodes[i].id.c_str(), report->failures[i]->c_str());
    }
    run.simulation = std::move(*report);
    run.simulation_peak_rss_mib = PeakRssMib();
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<MethodRunner> MakeSimulatedRunner() { return std::make_unique<SimulatedRunner>(); }

}  // namespace meshlearn::launch
