#include "tools/scenario/manifest.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include "base/toml_table.h"
#include "process/build_identity.h"
#include "process/build_info.h"
#include "training/cpu_pinning.h"

namespace meshlearn::launch {
namespace {

constexpr const char* kHeader =
    "# meshlearn run manifest (docs/experiments.md \"Run folders\"). meshlearn-launch writes\n"
    "# it when a run starts and rewrites it as each method ends; --resume checks the scenario\n"
    "# against it. status: running | complete | interrupted | failed; a launch's status\n"
    "# may also be killed.\n\n";

constexpr const char* kFuzzHeader =
    "# meshlearn fuzz manifest (docs/development.md \"The fault fuzzer\"). meshlearn-launch fuzz\n"
    "# writes it before the first seed and again at the end. status: running | complete |\n"
    "# failed (some seed broke an invariant).\n\n";

}  // namespace

const MethodRecord* Manifest::Method(const std::string& name) const {
  auto it = std::find_if(methods.begin(), methods.end(),
                         [&](const MethodRecord& m) { return m.name == name; });
  return it == methods.end() ? nullptr : &*it;
}

void Manifest::SetMethod(const MethodRecord& record) {
  auto it = std::find_if(methods.begin(), methods.end(),
                         [&](const MethodRecord& m) { return m.name == record.name; });
  if (it == methods.end()) {
    methods.push_back(record);
  } else {
    *it = record;
  }
}

std::string RenderManifest(const Manifest& m) { return std::string(kHeader) + RenderToml(m); }

Result<Manifest> ParseManifest(const std::string& text, const std::string& name) {
  return ParseToml<Manifest>(text, name);
}

LaunchRecord ThisLaunch(const std::vector<std::string>& command, const std::string& mode) {
  const node::BuildIdentity& build = node::ThisBuild();
  LaunchRecord launch;
  launch.command = command;
  std::error_code ec;
  launch.working_dir = std::filesystem::current_path(ec).string();
  launch.mode = mode;
  launch.version = build.version;
  launch.commit = build.commit;
  launch.clean = build.clean;
  if (!build.diff_hash.empty()) launch.diff_hash = build.diff_hash;
  launch.libraries = node::LibraryVersions();
  launch.host = HostFacts();
  launch.started = NowUtc();
  return launch;
}

std::string RenderFuzzManifest(const FuzzManifest& m) {
  return std::string(kFuzzHeader) + RenderToml(m);
}

Result<FuzzManifest> ParseFuzzManifest(const std::string& text, const std::string& name) {
  return ParseToml<FuzzManifest>(text, name);
}

std::string NowUtc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::vector<std::pair<std::string, std::string>> HostFacts() {
  std::vector<std::pair<std::string, std::string>> facts;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) facts.emplace_back("name", name);
  struct utsname system {};
  if (::uname(&system) == 0) {
    facts.emplace_back("system",
                       std::string(system.sysname) + " " + system.release + " " + system.machine);
  }
  facts.emplace_back("cores", std::to_string(std::thread::hardware_concurrency()));
  for (auto& fact : training::CpuKernelFacts()) facts.push_back(std::move(fact));
  long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    facts.emplace_back("memory_mib",
                       std::to_string(static_cast<long long>(pages) * page_size / (1 << 20)));
  }
  return facts;
}

}  // namespace meshlearn::launch
