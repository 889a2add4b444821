#pragma once
// Reading a scenario file (scenario.h holds what it reads into): the file, with the command line's
// --set, --nodes and --seed applied and the procedure's preset (procedure.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {

// Command-line adjustments applied before parsing.
struct ScenarioOverrides {
  std::vector<std::string> set;  // "key.path=value" (TOML value), e.g. "node.training.rounds=5"
  int nodes = 0;                 // > 0: number of clients (cluster sizes scale to it)
  std::optional<uint64_t> seed;
};

// Reads the scenario at `path` with `overrides` applied. kInvalidArgument naming the file, line,
// key and what is allowed for an unknown key or bad value; kNotFound for a missing file.
Result<Scenario> LoadScenario(const std::string& path, const ScenarioOverrides& overrides);

}  // namespace meshlearn::launch
