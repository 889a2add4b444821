#pragma once
// The run manifest, "<out>/manifest.toml": what a meshlearn-launch run was, so that its results
// can be trusted and reproduced. It holds the scenario text as given and as run (after --set,
// --nodes and --seed), the seed, every command line that worked on the folder, the meshlearn and
// library versions, the host, start and end times, and the status of the run and of each method.
// The launcher writes it when a run starts and rewrites it (atomically) as each method ends.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace meshlearn::launch {

// Status of a run or of one of its methods.
//   running      under way (or its launcher was killed: no end time)
//   complete     every node ran every round
//   interrupted  stopped by Ctrl-C / SIGTERM; the rounds reached are recorded
//   failed       some nodes failed (they are named in the launcher's output)
//   killed       (a launch only) its launcher ended without recording it (SIGKILL, a power cut);
//                the next --resume finds it `running` and marks it so
inline constexpr const char* kRunning = "running";
inline constexpr const char* kComplete = "complete";
inline constexpr const char* kInterrupted = "interrupted";
inline constexpr const char* kFailed = "failed";
inline constexpr const char* kKilled = "killed";

// One method of the run, as far as it went.
struct MethodRecord {
  std::string name;
  std::string status = kRunning;
  std::string started, ended;  // ISO 8601 UTC; ended is empty while running
  int64_t rounds = 0;          // the last round of the configuration
  // The lowest and highest last completed round over the nodes (-1: none completed round 0).
  int64_t first_node_round = -1, last_node_round = -1;
  int nodes = 0, nodes_failed = 0;
  double wall_seconds = 0;  // real seconds ("wall_s")
  // --simulate: the simulated seconds ("simulated_s", absent for methods run on real nodes).
  std::optional<double> simulated_seconds;

  // The keys of one [[methods]] table (base/toml_table.h).
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& r) {
    keys.String("name", r.name);
    keys.String("status", r.status);
    keys.String("started", r.started);
    keys.String("ended", r.ended);
    keys.Integer("rounds", r.rounds);
    keys.Integer("first_node_round", r.first_node_round);
    keys.Integer("last_node_round", r.last_node_round);
    keys.Integer("nodes", r.nodes);
    keys.Integer("nodes_failed", r.nodes_failed);
    keys.Number("wall_s", r.wall_seconds);
    keys.OptionalNumber("simulated_s", r.simulated_seconds);
  }
};

// One meshlearn-launch that worked on the folder: the first one, then each --resume.
struct LaunchRecord {
  std::vector<std::string> command;  // argv
  std::string working_dir;
  // "process", "in-process", "simulated", "<engine> engine", "partition-only"; "fuzz" in a
  // FuzzManifest
  std::string mode;
  std::string version;  // the binary's node::BuildIdentity::version
  // The binary's build (node::BuildIdentity): its commit, whether its tree was clean and, when it
  // was not, the diff hash. Absent in manifests written before builds knew them; a launch of
  // today writes commit and clean, and diff_hash when the tree was not clean.
  std::optional<std::string> commit;
  std::optional<bool> clean;
  std::optional<std::string> diff_hash;
  std::vector<std::pair<std::string, std::string>> libraries;  // node::LibraryVersions()
  std::vector<std::pair<std::string, std::string>> host;       // HostFacts()
  std::string started, ended;
  std::string status = kRunning;

  // The keys of one [[launches]] table.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& l) {
    keys.Strings("command", l.command);
    keys.String("working_dir", l.working_dir);
    keys.String("mode", l.mode);
    keys.String("version", l.version);
    keys.OptionalString("commit", l.commit);
    keys.OptionalBool("clean", l.clean);
    keys.OptionalString("diff_hash", l.diff_hash);
    keys.StringTable("libraries", l.libraries);
    keys.StringTable("host", l.host);
    keys.String("started", l.started);
    keys.String("ended", l.ended);
    keys.String("status", l.status);
  }
};

// The manifest's own format; ParseManifest reads only this one.
inline constexpr int kManifestFormat = 1;

// The keys every manifest opens with: its format (`current`, checked first), status, start and
// end. `m` is a Manifest or a FuzzManifest.
template <class Keys, class Self>
void DescribeManifestOpening(Keys& keys, Self& m, int current) {
  keys.Format("format", m.format, current);
  keys.String("status", m.status);
  keys.String("started", m.started);
  keys.String("ended", m.ended);
}

// The whole manifest.
struct Manifest {
  int format = kManifestFormat;
  std::string status = kRunning;  // of the run: the latest launch's
  std::string started, ended;     // first launch's start, latest launch's end
  std::string scenario_name;      // [scenario] name
  std::string scenario_file;      // the scenario file as given on the command line
  uint64_t seed = 0;              // the run's seed (--seed or the scenario's)
  int nodes = 0;                  // the number of nodes (--nodes or the scenario's)
  std::string scenario_text;      // the file as given
  std::string resolved;           // the scenario as run (Scenario::resolved)
  std::vector<LaunchRecord> launches;
  std::vector<MethodRecord> methods;

  // The record of method `name`, or nullptr.
  const MethodRecord* Method(const std::string& name) const;
  // Adds `record`, or replaces the one of the same name.
  void SetMethod(const MethodRecord& record);

  // The keys of the file, described once (base/toml_table.h): RenderManifest and ParseManifest
  // run it.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& m) {
    DescribeManifestOpening(keys, m, kManifestFormat);
    keys.Integer("seed", m.seed);
    keys.Integer("nodes", m.nodes);
    keys.Table("scenario", [&](auto& scenario) {
      scenario.String("name", m.scenario_name);
      scenario.String("file", m.scenario_file);
      scenario.String("text", m.scenario_text);
      scenario.String("resolved", m.resolved);
    });
    keys.Tables("launches", m.launches);
    keys.Tables("methods", m.methods);
  }
};

// Renders `manifest` as TOML, after a comment that says what the file is.
std::string RenderManifest(const Manifest& manifest);
// Parses text written by RenderManifest; `name` prefixes errors: kMalformed naming the line and
// the dotted key of a missing, mistyped or unknown key, or the value and what is allowed
// (base/toml_table.h), kUnsupportedVersion for another format.
Result<Manifest> ParseManifest(const std::string& text, const std::string& name);

// The manifest of a `meshlearn-launch fuzz` run, "<fuzz --out>/manifest.toml" (tools/fuzz/fuzz.h):
// its one launch (command, the binary's build, libraries, host, times), the seeds it ran and how
// many failed. The fuzz command writes it before the first seed and again at the end. Its own
// format; ParseFuzzManifest reads only this one.
inline constexpr int kFuzzManifestFormat = 1;
struct FuzzManifest {
  int format = kFuzzManifestFormat;
  // running, then complete (every invariant held on every seed) or failed (some seed broke one,
  // or the run stopped before a seed whose plug-in file is missing)
  std::string status = kRunning;
  std::string started, ended;
  uint64_t from = 1;    // [fuzz] the first seed
  uint64_t seeds = 0;   // how many seeds, from `from` on
  uint64_t failed = 0;  // the seeds that broke an invariant (0 while running)
  std::vector<LaunchRecord> launches;

  // The keys of the file, described once as the run manifest's are.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& m) {
    DescribeManifestOpening(keys, m, kFuzzManifestFormat);
    keys.Table("fuzz", [&](auto& fuzz) {
      fuzz.Integer("from", m.from);
      fuzz.Integer("seeds", m.seeds);
      fuzz.Integer("failed", m.failed);
    });
    keys.Tables("launches", m.launches);
  }
};

// RenderManifest and ParseManifest for a fuzz run's manifest.
std::string RenderFuzzManifest(const FuzzManifest& manifest);
Result<FuzzManifest> ParseFuzzManifest(const std::string& text, const std::string& name);

// The record of a launch by this process, started now: `command` (argv), the working folder,
// `mode`, this binary's build (node::ThisBuild()) and libraries, and the host.
LaunchRecord ThisLaunch(const std::vector<std::string>& command, const std::string& mode);

// The current time as ISO 8601 UTC with seconds ("2026-11-24T10:00:00Z").
std::string NowUtc();
// Facts about this machine: hostname, system (kernel, architecture), cores, memory, and the CPU
// kernels this process computes with (training::CpuKernelFacts).
std::vector<std::pair<std::string, std::string>> HostFacts();

}  // namespace meshlearn::launch
