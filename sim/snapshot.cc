#include "sim/snapshot.h"

#include "base/toml_table.h"

namespace meshlearn::sim {
namespace {

constexpr const char kHeader[] =
    "# meshlearn simulation snapshot (sim/snapshot.h): what a resumed simulation needs beside the\n"
    "# nodes' checkpoints kept with it.\n\n";

// The first line of a format 1 snapshot.
constexpr std::string_view kFormat1Magic = "meshlearn simulation snapshot 1";

// What to do about a snapshot that cannot be resumed from.
constexpr const char kAdvice[] =
    " (the snapshot cannot be resumed from; delete the method's folder to run it afresh)";

}  // namespace

std::string SnapshotText(const SimulationSnapshot& s) {
  return std::string(kHeader) + RenderToml(s);
}

Result<SimulationSnapshot> ParseSnapshot(const std::string& text, const std::string& path) {
  if (std::string_view(text).starts_with(kFormat1Magic)) {
    return Status::UnsupportedVersion(path +
                                      ": a format 1 snapshot, written by an earlier "
                                      "meshlearn; this build reads format " +
                                      std::to_string(kSnapshotFormat) + kAdvice);
  }
  auto snapshot = ParseToml<SimulationSnapshot>(text, path);
  if (!snapshot.ok())
    return Status(snapshot.status().code(), snapshot.status().message() + kAdvice);
  return snapshot;
}

}  // namespace meshlearn::sim
