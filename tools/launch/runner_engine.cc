#include "tools/launch/engine_run.h"
#include "tools/launch/method_runner.h"

namespace meshlearn::launch {
namespace {

// The ranks started by an engine (Slurm or Open MPI) from one node config template, watched
// through the run folder (engine_run.h).
class EngineRunner : public MethodRunner {
 public:
  explicit EngineRunner(Engine engine) : engine_(engine) {}
  std::string Mode() const override { return std::string(EngineName(engine_)) + " engine"; }
  bool OnThisMachine() const override { return false; }
  Status Run(const MethodJob& job, MethodRun& run) override {
    return RunOnEngine(engine_, job.scenario, job.configs.front(), job.options, job.interrupt, run);
  }

 private:
  Engine engine_;
};

}  // namespace

std::unique_ptr<MethodRunner> MakeEngineRunner(Engine engine) {
  return std::make_unique<EngineRunner>(engine);
}

}  // namespace meshlearn::launch
