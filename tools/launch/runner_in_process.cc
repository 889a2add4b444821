#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <spdlog/sinks/basic_file_sink.h>

#include "node/config/logging.h"
#include "node/host/node.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"

namespace meshlearn::launch {
namespace {

// The nodes as threads of this process, over the same sockets as processes; each logs to its
// folder's node.log.
class InProcessRunner : public MethodRunner {
 public:
  std::string Mode() const override { return "in-process"; }
  bool NodesShareOneProcess() const override { return true; }
  Status Run(const MethodJob& job, MethodRun& run) override {
    const std::vector<node::NodeConfig>& configs = job.configs;
    RunObserver* observer = job.options.observer;
    const std::atomic<bool>& interrupt = job.interrupt;
    const int64_t rounds = run.rounds;
    std::vector<std::unique_ptr<node::Node>> nodes;
    for (size_t i = 0; i < configs.size(); ++i) {
      auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(
          PathIn(run.nodes[i].dir, kNodeLogFile));
      node::NodeOptions options;
      options.logger = MakeNodeLogger(configs[i].id, configs[i].log_level, sink);
      auto node = node::Node::Create(configs[i], std::move(options));
      if (!node.ok()) return node.status().WithContext(configs[i].id);
      nodes.push_back(std::move(*node));
    }
    if (observer) {
      observer->NodesStarted(run, [&nodes] {
        std::vector<std::optional<node::NodeStatus>> statuses;
        for (auto& n : nodes) statuses.emplace_back(n->StatusSnapshot());
        return statuses;
      });
    }
    std::vector<std::thread> threads;
    std::vector<Status> results(nodes.size());
    std::atomic<size_t> finished{0};
    for (size_t i = 0; i < nodes.size(); ++i) {
      threads.emplace_back([&, i] {
        results[i] = nodes[i]->Run();
        ++finished;
      });
    }
    ProgressLine progress(run.method.name, rounds);
    auto start = std::chrono::steady_clock::now();
    bool stopping = false;
    while (finished < nodes.size()) {
      if (interrupt && !stopping) {
        stopping = true;
        run.interrupted = true;
        for (auto& n : nodes) n->Stop();
      }
      std::vector<node::NodeProgress> states;
      std::vector<int64_t> reached;
      for (auto& n : nodes) {
        states.push_back(n->Progress());
        reached.push_back(states.back().completed_round);
      }
      run.process_peak_pss_mib = std::max(run.process_peak_pss_mib, PssMib(::getpid()));
      progress.Show(reached, MeanLatestValLoss(states), 0, SecondsSince(start));
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (auto& t : threads) t.join();
    progress.Finish();
    if (observer) observer->NodesStopped(run);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok()) {
        run.nodes[i].failure = results[i].ToString();
        std::printf("node %s failed: %s\n", run.nodes[i].id.c_str(), results[i].ToString().c_str());
      }
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<MethodRunner> MakeInProcessRunner() { return std::make_unique<InProcessRunner>(); }

}  // namespace meshlearn::launch
