#include "tools/scenario/manifest.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <sstream>
#include <thread>

#include <toml++/toml.h>

#include "node/config/toml_reader.h"
#include "training/cpu_pinning.h"

namespace meshlearn::launch {
namespace {

constexpr const char* kHeader =
    "# meshlearn run manifest (docs/experiments.md \"Run folders\"). meshlearn-launch writes\n"
    "# it when a run starts and rewrites it as each method ends; --resume checks the scenario\n"
    "# against it. status: running | complete | interrupted | failed; a launch's status\n"
    "# may also be killed.\n\n";

toml::array Strings(const std::vector<std::string>& values) {
  toml::array array;
  for (const std::string& v : values) array.push_back(v);
  return array;
}

toml::table Pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  toml::table table;
  for (const auto& [key, value] : pairs) table.insert_or_assign(key, value);
  return table;
}

using node::TableReader;

// Typed reads of the manifest's keys, all required (a launcher writes every one), with the
// messages of the node config's reader (node/config/toml_reader.h): file, line, dotted key, value
// found and what is allowed.
template <typename Int>
Status Integer(TableReader& t, const char* key, Int* out) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    if (!n.is_integer()) return t.Fail(key, n, "must be an integer");
    *out = static_cast<Int>(*n.value<int64_t>());
    return Status::Ok();
  });
}

Status Number(TableReader& t, const char* key, double* out) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    if (!n.is_number()) return t.Fail(key, n, "must be a number");
    *out = *n.value<double>();
    return Status::Ok();
  });
}

Status String(TableReader& t, const char* key, std::string* out) {
  return t.String(key, out, /*required=*/true);
}

Status Strings(TableReader& t, const char* key, std::vector<std::string>* out) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    const toml::array* a = n.as_array();
    if (!a) return t.Fail(key, n, "must be an array of strings");
    for (const toml::node& v : *a) {
      if (!v.is_string()) return t.Fail(key, n, "must be an array of strings");
      out->push_back(*v.value<std::string>());
    }
    return Status::Ok();
  });
}

Status Pairs(TableReader& t, const char* key,
             std::vector<std::pair<std::string, std::string>>* out) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    const toml::table* table = n.as_table();
    if (!table) return t.Fail(key, n, "must be a table of strings");
    for (const auto& [k, v] : *table) {
      if (!v.is_string()) return t.Fail(key, n, "must be a table of strings");
      out->emplace_back(std::string(k.str()), *v.value<std::string>());
    }
    return Status::Ok();
  });
}

// Reads sub-table `key` with `read`; unknown keys in it are refused.
Status Table(TableReader& t, const char* key, const std::function<Status(TableReader&)>& read) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    if (!n.is_table()) return t.Fail(key, n, "must be a table");
    TableReader sub(*n.as_table(), t.file(), t.Qualified(key));
    MESHLEARN_RETURN_IF_ERROR(read(sub));
    return sub.RejectUnknown();
  });
}

// Calls `read` for every table of array `key` ([[key]]); an absent array is empty, as is
// "key = []" (a run whose first method is under way records none yet).
Status Tables(TableReader& t, const char* key, const std::function<Status(TableReader&)>& read) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const toml::array* a = n.as_array();
    if (!a || (!a->empty() && !a->is_array_of_tables())) {
      return t.Fail(key, n, "must be an array of tables");
    }
    for (size_t i = 0; i < a->size(); ++i) {
      TableReader sub(*a->get(i)->as_table(), t.file(),
                      t.Qualified(key) + "[" + std::to_string(i) + "]");
      MESHLEARN_RETURN_IF_ERROR(read(sub));
      MESHLEARN_RETURN_IF_ERROR(sub.RejectUnknown());
    }
    return Status::Ok();
  });
}

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

std::string RenderManifest(const Manifest& m) {
  toml::table root;
  root.insert("format", m.format);
  root.insert("status", m.status);
  root.insert("started", m.started);
  root.insert("ended", m.ended);
  root.insert("seed", static_cast<int64_t>(m.seed));
  root.insert("nodes", m.nodes);
  root.insert("scenario", toml::table{{"name", m.scenario_name},
                                      {"file", m.scenario_file},
                                      {"text", m.scenario_text},
                                      {"resolved", m.resolved}});
  toml::array launches;
  for (const LaunchRecord& l : m.launches) {
    launches.push_back(toml::table{{"command", Strings(l.command)},
                                   {"working_dir", l.working_dir},
                                   {"mode", l.mode},
                                   {"version", l.version},
                                   {"libraries", Pairs(l.libraries)},
                                   {"host", Pairs(l.host)},
                                   {"started", l.started},
                                   {"ended", l.ended},
                                   {"status", l.status}});
  }
  root.insert("launches", std::move(launches));
  toml::array methods;
  for (const MethodRecord& r : m.methods) {
    toml::table method{{"name", r.name},
                       {"status", r.status},
                       {"started", r.started},
                       {"ended", r.ended},
                       {"rounds", r.rounds},
                       {"first_node_round", r.first_node_round},
                       {"last_node_round", r.last_node_round},
                       {"nodes", r.nodes},
                       {"nodes_failed", r.nodes_failed},
                       {"wall_s", r.wall_seconds}};
    if (r.simulated_seconds) method.insert("simulated_s", *r.simulated_seconds);
    methods.push_back(std::move(method));
  }
  root.insert("methods", std::move(methods));
  std::ostringstream out;
  out << kHeader << root << "\n";
  return out.str();
}

Result<Manifest> ParseManifest(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return Status::Malformed(name + ":" + std::to_string(e.source().begin.line) +
                             ": not a manifest meshlearn-launch wrote (" +
                             std::string(e.description()) + ")");
  }
  Manifest m;
  TableReader r(root, name, "");
  // The reader's kInvalidArgument is, for a file meshlearn wrote, kMalformed.
  Status read = [&]() -> Status {
    MESHLEARN_RETURN_IF_ERROR(Integer(r, "format", &m.format));
    if (m.format != 1) {
      return Status::UnsupportedVersion(name + ": manifest format " + std::to_string(m.format) +
                                        ", this meshlearn-launch reads 1");
    }
    MESHLEARN_RETURN_IF_ERROR(String(r, "status", &m.status));
    MESHLEARN_RETURN_IF_ERROR(String(r, "started", &m.started));
    MESHLEARN_RETURN_IF_ERROR(String(r, "ended", &m.ended));
    MESHLEARN_RETURN_IF_ERROR(Integer(r, "seed", &m.seed));
    MESHLEARN_RETURN_IF_ERROR(Integer(r, "nodes", &m.nodes));
    MESHLEARN_RETURN_IF_ERROR(Table(r, "scenario", [&](TableReader& t) -> Status {
      MESHLEARN_RETURN_IF_ERROR(String(t, "name", &m.scenario_name));
      MESHLEARN_RETURN_IF_ERROR(String(t, "file", &m.scenario_file));
      MESHLEARN_RETURN_IF_ERROR(String(t, "text", &m.scenario_text));
      return String(t, "resolved", &m.resolved);
    }));
    MESHLEARN_RETURN_IF_ERROR(Tables(r, "launches", [&](TableReader& t) -> Status {
      LaunchRecord l;
      MESHLEARN_RETURN_IF_ERROR(Strings(t, "command", &l.command));
      MESHLEARN_RETURN_IF_ERROR(String(t, "working_dir", &l.working_dir));
      MESHLEARN_RETURN_IF_ERROR(String(t, "mode", &l.mode));
      MESHLEARN_RETURN_IF_ERROR(String(t, "version", &l.version));
      MESHLEARN_RETURN_IF_ERROR(Pairs(t, "libraries", &l.libraries));
      MESHLEARN_RETURN_IF_ERROR(Pairs(t, "host", &l.host));
      MESHLEARN_RETURN_IF_ERROR(String(t, "started", &l.started));
      MESHLEARN_RETURN_IF_ERROR(String(t, "ended", &l.ended));
      MESHLEARN_RETURN_IF_ERROR(String(t, "status", &l.status));
      m.launches.push_back(std::move(l));
      return Status::Ok();
    }));
    MESHLEARN_RETURN_IF_ERROR(Tables(r, "methods", [&](TableReader& t) -> Status {
      MethodRecord record;
      MESHLEARN_RETURN_IF_ERROR(String(t, "name", &record.name));
      MESHLEARN_RETURN_IF_ERROR(String(t, "status", &record.status));
      MESHLEARN_RETURN_IF_ERROR(String(t, "started", &record.started));
      MESHLEARN_RETURN_IF_ERROR(String(t, "ended", &record.ended));
      MESHLEARN_RETURN_IF_ERROR(Integer(t, "rounds", &record.rounds));
      MESHLEARN_RETURN_IF_ERROR(Integer(t, "first_node_round", &record.first_node_round));
      MESHLEARN_RETURN_IF_ERROR(Integer(t, "last_node_round", &record.last_node_round));
      MESHLEARN_RETURN_IF_ERROR(Integer(t, "nodes", &record.nodes));
      MESHLEARN_RETURN_IF_ERROR(Integer(t, "nodes_failed", &record.nodes_failed));
      MESHLEARN_RETURN_IF_ERROR(Number(t, "wall_s", &record.wall_seconds));
      MESHLEARN_RETURN_IF_ERROR(t.OptionalNumber("simulated_s", &record.simulated_seconds));
      m.methods.push_back(std::move(record));
      return Status::Ok();
    }));
    return r.RejectUnknown();
  }();
  if (read.code() == ErrorCode::kInvalidArgument) return Status::Malformed(read.message());
  if (!read.ok()) return read;
  return m;
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
