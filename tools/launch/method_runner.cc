#include "tools/launch/method_runner.h"

#include <algorithm>

#include "tools/launch/engine_run.h"

namespace meshlearn::launch {

void RunnerTable::Add(const std::string& name, RunnerFactory factory) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& entry) { return entry.first == name; });
  if (it != entries_.end()) {
    it->second = std::move(factory);
  } else {
    entries_.emplace_back(name, std::move(factory));
  }
}

Result<std::unique_ptr<MethodRunner>> RunnerTable::Make(const std::string& name) const {
  for (const auto& [known, factory] : entries_) {
    if (known == name) return factory();
  }
  std::string names;
  for (const std::string& known : Names()) names += (names.empty() ? "" : ", ") + known;
  return Status::InvalidArgument("no runner '" + name + "'; the runners are " + names);
}

bool RunnerTable::Has(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

std::vector<std::string> RunnerTable::Names() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) names.push_back(entry.first);
  return names;
}

RunnerTable& Runners() {
  static RunnerTable* table = [] {
    auto* t = new RunnerTable;
    t->Add(kProcessesRunner, MakeProcessesRunner);
    t->Add(kInProcessRunner, MakeInProcessRunner);
    t->Add(kSimulatedRunner, MakeSimulatedRunner);
    t->Add("slurm", [] { return MakeEngineRunner(Engine::kSlurm); });
    t->Add("mpirun", [] { return MakeEngineRunner(Engine::kMpirun); });
    return t;
  }();
  return *table;
}

}  // namespace meshlearn::launch
