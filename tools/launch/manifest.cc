#include "tools/launch/manifest.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <sstream>
#include <thread>

#include <toml++/toml.h>

namespace meshlearn::launch {
namespace {

constexpr const char* kHeader =
    "# meshlearn run manifest (README.md \"Run folders\"). meshlearn-launch writes it when a run\n"
    "# starts and rewrites it as each method ends; --resume checks the scenario against it.\n"
    "# status: running | complete | interrupted | failed.\n\n";

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

// Typed reads of one manifest table; errors name the file and the key.
class ManifestReader {
 public:
  ManifestReader(const toml::table& table, std::string name, std::string section)
      : table_(table), name_(std::move(name)), section_(std::move(section)) {}

  Status String(const char* key, std::string* out) {
    const toml::node* n = table_.get(key);
    if (!n || !n->is_string()) return Missing(key, "a string");
    *out = *n->value<std::string>();
    return Status::Ok();
  }
  template <typename Int>
  Status Integer(const char* key, Int* out) {
    const toml::node* n = table_.get(key);
    if (!n || !n->is_integer()) return Missing(key, "an integer");
    *out = static_cast<Int>(*n->value<int64_t>());
    return Status::Ok();
  }
  Status Number(const char* key, double* out) {
    const toml::node* n = table_.get(key);
    if (!n || !n->is_number()) return Missing(key, "a number");
    *out = *n->value<double>();
    return Status::Ok();
  }
  Status Strings(const char* key, std::vector<std::string>* out) {
    const toml::array* a = table_.get_as<toml::array>(key);
    if (!a) return Missing(key, "an array of strings");
    for (const toml::node& v : *a) {
      if (!v.is_string()) return Missing(key, "an array of strings");
      out->push_back(*v.value<std::string>());
    }
    return Status::Ok();
  }
  Status Pairs(const char* key, std::vector<std::pair<std::string, std::string>>* out) {
    const toml::table* t = table_.get_as<toml::table>(key);
    if (!t) return Missing(key, "a table of strings");
    for (const auto& [k, v] : *t) {
      if (!v.is_string()) return Missing(key, "a table of strings");
      out->emplace_back(std::string(k.str()), *v.value<std::string>());
    }
    return Status::Ok();
  }
  // Calls `read` with a reader of every table of array `key` ([[key]]); an absent array is empty,
  // as is "key = []" (a run whose first method is under way records none yet).
  Status Tables(const char* key, const std::function<Status(ManifestReader&)>& read) {
    const toml::node* n = table_.get(key);
    if (!n) return Status::Ok();
    const toml::array* a = n->as_array();
    if (!a || (!a->empty() && !a->is_array_of_tables())) {
      return Missing(key, "an array of tables");
    }
    for (size_t i = 0; i < a->size(); ++i) {
      ManifestReader sub(*a->get(i)->as_table(), name_,
                         Qualified(key) + "[" + std::to_string(i) + "]");
      MESHLEARN_RETURN_IF_ERROR(read(sub));
    }
    return Status::Ok();
  }
  // True when the table holds `key`.
  bool Has(const char* key) const { return table_.contains(key); }
  // A reader of sub-table `key`.
  Result<ManifestReader> Table(const char* key) {
    const toml::table* t = table_.get_as<toml::table>(key);
    if (!t) return Missing(key, "a table");
    return ManifestReader(*t, name_, Qualified(key));
  }

 private:
  std::string Qualified(const std::string& key) const {
    return section_.empty() ? key : section_ + "." + key;
  }
  Status Missing(const char* key, const char* what) const {
    return Status::Malformed(name_ + ": '" + Qualified(key) + "' is missing or not " + what);
  }

  const toml::table& table_;
  std::string name_;
  std::string section_;
};

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
  ManifestReader r(root, name, "");
  MESHLEARN_RETURN_IF_ERROR(r.Integer("format", &m.format));
  if (m.format != 1) {
    return Status::UnsupportedVersion(name + ": manifest format " + std::to_string(m.format) +
                                      ", this meshlearn-launch reads 1");
  }
  MESHLEARN_RETURN_IF_ERROR(r.String("status", &m.status));
  MESHLEARN_RETURN_IF_ERROR(r.String("started", &m.started));
  MESHLEARN_RETURN_IF_ERROR(r.String("ended", &m.ended));
  MESHLEARN_RETURN_IF_ERROR(r.Integer("seed", &m.seed));
  MESHLEARN_RETURN_IF_ERROR(r.Integer("nodes", &m.nodes));
  auto scenario = r.Table("scenario");
  if (!scenario.ok()) return scenario.status();
  MESHLEARN_RETURN_IF_ERROR(scenario->String("name", &m.scenario_name));
  MESHLEARN_RETURN_IF_ERROR(scenario->String("file", &m.scenario_file));
  MESHLEARN_RETURN_IF_ERROR(scenario->String("text", &m.scenario_text));
  MESHLEARN_RETURN_IF_ERROR(scenario->String("resolved", &m.resolved));
  MESHLEARN_RETURN_IF_ERROR(r.Tables("launches", [&](ManifestReader& t) -> Status {
    LaunchRecord l;
    MESHLEARN_RETURN_IF_ERROR(t.Strings("command", &l.command));
    MESHLEARN_RETURN_IF_ERROR(t.String("working_dir", &l.working_dir));
    MESHLEARN_RETURN_IF_ERROR(t.String("mode", &l.mode));
    MESHLEARN_RETURN_IF_ERROR(t.String("version", &l.version));
    MESHLEARN_RETURN_IF_ERROR(t.Pairs("libraries", &l.libraries));
    MESHLEARN_RETURN_IF_ERROR(t.Pairs("host", &l.host));
    MESHLEARN_RETURN_IF_ERROR(t.String("started", &l.started));
    MESHLEARN_RETURN_IF_ERROR(t.String("ended", &l.ended));
    MESHLEARN_RETURN_IF_ERROR(t.String("status", &l.status));
    m.launches.push_back(std::move(l));
    return Status::Ok();
  }));
  MESHLEARN_RETURN_IF_ERROR(r.Tables("methods", [&](ManifestReader& t) -> Status {
    MethodRecord record;
    MESHLEARN_RETURN_IF_ERROR(t.String("name", &record.name));
    MESHLEARN_RETURN_IF_ERROR(t.String("status", &record.status));
    MESHLEARN_RETURN_IF_ERROR(t.String("started", &record.started));
    MESHLEARN_RETURN_IF_ERROR(t.String("ended", &record.ended));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("rounds", &record.rounds));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("first_node_round", &record.first_node_round));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("last_node_round", &record.last_node_round));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("nodes", &record.nodes));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("nodes_failed", &record.nodes_failed));
    MESHLEARN_RETURN_IF_ERROR(t.Number("wall_s", &record.wall_seconds));
    if (t.Has("simulated_s")) {
      double simulated = 0;
      MESHLEARN_RETURN_IF_ERROR(t.Number("simulated_s", &simulated));
      record.simulated_seconds = simulated;
    }
    m.methods.push_back(std::move(record));
    return Status::Ok();
  }));
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
  long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    facts.emplace_back("memory_mib",
                       std::to_string(static_cast<long long>(pages) * page_size / (1 << 20)));
  }
  return facts;
}

}  // namespace meshlearn::launch
