#include "node/config/engine_identity.h"

#include "base/number_text.h"

namespace meshlearn::node {
namespace {

constexpr NamedValue<EngineKind> kEngineKinds[] = {{"auto", EngineKind::kAuto},
                                                   {"slurm", EngineKind::kSlurm},
                                                   {"mpi", EngineKind::kMpi},
                                                   {"kubernetes", EngineKind::kKubernetes},
                                                   {"env", EngineKind::kEnv}};

constexpr const char* kPlaceholders = "{rank}, {size}, {host}, {port}";

// True when `word` may name a placeholder: lower-case letters, digits and '_'.
bool IsPlaceholderWord(std::string_view word) {
  return !word.empty() &&
         word.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string_view::npos;
}

// The value of variable `name`, or nullptr when it is not set.
const std::string* Variable(const EngineEnvironment& env, const std::string& name) {
  auto it = env.variables.find(name);
  return it == env.variables.end() ? nullptr : &it->second;
}

// The whole of `text` as a decimal number in [min, max] (base/number_text.h).
std::optional<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max) {
  return NumberFromText<int64_t>(
      text, {.min = static_cast<double>(min), .max = static_cast<double>(max)});
}

// Reads the integer variable `name`; `what` says what it should hold.
Result<int> IntegerVariable(const EngineEnvironment& env, const std::string& name,
                            const std::string& engine, const std::string& what, int64_t min) {
  const std::string* text = Variable(env, name);
  if (!text) {
    return Status::InvalidArgument("[engine] " + engine + ": " + name + " is not set (" + what +
                                   "); is this process started by " + engine + "?");
  }
  std::optional<int64_t> value = ParseInteger(*text, min, INT32_MAX);
  if (!value) {
    return Status::InvalidArgument("[engine] " + engine + ": " + name + " = '" + *text +
                                   "' is not " + what + " (an integer >= " + std::to_string(min) +
                                   ")");
  }
  return static_cast<int>(*value);
}

Status CheckRank(const EngineIdentity& id, const std::string& rank_source) {
  if (id.rank >= id.size) {
    return Status::InvalidArgument("[engine]: rank " + std::to_string(id.rank) + " (" +
                                   rank_source + ") is outside a mesh of " +
                                   std::to_string(id.size) + " nodes");
  }
  return Status::Ok();
}

Result<uint16_t> RankPort(const EngineSettings& settings, int rank) {
  int64_t port = int64_t{settings.port} + rank;
  if (port > 65535) {
    return Status::InvalidArgument("[engine] port " + std::to_string(settings.port) + " + rank " +
                                   std::to_string(rank) + " exceeds 65535; choose a lower port");
  }
  return static_cast<uint16_t>(port);
}

// The identity of `kind` with rank, size and ports from the variables `rank_variable` and
// `size_variable`; hosts are the caller's.
Result<EngineIdentity> RankedIdentity(EngineKind kind, const EngineSettings& settings,
                                      const EngineEnvironment& env,
                                      const std::string& rank_variable,
                                      const std::string& size_variable) {
  EngineIdentity id;
  id.kind = kind;
  std::string engine(NameOf(EngineKindNames(), kind));
  auto rank = IntegerVariable(env, rank_variable, engine, "this process's rank", 0);
  if (!rank.ok()) return rank.status();
  auto size = IntegerVariable(env, size_variable, engine, "the number of processes", 1);
  if (!size.ok()) return size.status();
  id.rank = *rank;
  id.size = *size;
  MESHLEARN_RETURN_IF_ERROR(CheckRank(id, rank_variable));
  auto port = RankPort(settings, id.rank);
  if (!port.ok()) return port.status();
  id.port = *port;
  id.rank0_port = settings.port;
  return id;
}

Result<EngineIdentity> Slurm(const EngineSettings& settings, const EngineEnvironment& env) {
  auto ranked = RankedIdentity(EngineKind::kSlurm, settings, env, "SLURM_PROCID", "SLURM_NTASKS");
  if (!ranked.ok()) return ranked.status();
  EngineIdentity id = *ranked;
  std::string list_name = "SLURM_STEP_NODELIST";
  const std::string* list = Variable(env, list_name);
  if (!list) {
    list_name = "SLURM_JOB_NODELIST";
    list = Variable(env, list_name);
  }
  if (!list) {
    return Status::InvalidArgument(
        "[engine] slurm: neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set (rank 0 runs "
        "on the first host of the node list); is this process started by srun?");
  }
  auto hosts = ExpandSlurmHostlist(*list);
  if (!hosts.ok()) return hosts.status().WithContext("[engine] slurm: " + list_name);
  id.rank0_host = hosts->front();
  const std::string* node_name = Variable(env, "SLURMD_NODENAME");
  id.host = node_name && !node_name->empty() ? *node_name : env.host_name;
  return id;
}

Result<EngineIdentity> Mpi(const EngineSettings& settings, const EngineEnvironment& env) {
  auto ranked = RankedIdentity(EngineKind::kMpi, settings, env, "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_SIZE");
  if (!ranked.ok()) return ranked.status();
  EngineIdentity id = *ranked;
  if (settings.hostfile.empty() || !env.hostfile_text) {
    return Status::InvalidArgument(
        "[engine] mpi: rank 0 runs on the first host of mpirun's hostfile: set [engine] hostfile "
        "to the file given to mpirun --hostfile");
  }
  auto first = FirstHostOfHostfile(*env.hostfile_text);
  if (!first.ok()) return first.status().WithContext("[engine] hostfile " + settings.hostfile);
  id.rank0_host = *first;
  id.host = env.host_name;
  return id;
}

Result<EngineIdentity> FromMeshlearnVariables(const EngineSettings& settings,
                                              const EngineEnvironment& env) {
  auto ranked = RankedIdentity(EngineKind::kEnv, settings, env, "MESHLEARN_RANK", "MESHLEARN_SIZE");
  if (!ranked.ok()) return ranked.status();
  EngineIdentity id = *ranked;
  const std::string* rank0 = Variable(env, "MESHLEARN_RANK0_HOST");
  if (!rank0 || rank0->empty()) {
    return Status::InvalidArgument(
        "[engine] env: MESHLEARN_RANK0_HOST is not set (the host rank 0 runs on)");
  }
  id.rank0_host = *rank0;
  const std::string* host = Variable(env, "MESHLEARN_HOST");
  id.host = host && !host->empty() ? *host : env.host_name;
  return id;
}

Result<EngineIdentity> Kubernetes(const EngineSettings& settings, const EngineEnvironment& env) {
  EngineIdentity id;
  id.kind = EngineKind::kKubernetes;
  const std::string& host = env.host_name;
  size_t dash = host.rfind('-');
  std::optional<int64_t> ordinal;
  if (dash != std::string::npos && dash > 0) {
    ordinal = ParseInteger(std::string_view(host).substr(dash + 1), 0, INT32_MAX);
  }
  if (!ordinal) {
    return Status::InvalidArgument("[engine] kubernetes: the host name '" + host +
                                   "' does not end in -<ordinal>, as a StatefulSet pod's does "
                                   "(e.g. meshlearn-3)");
  }
  if (settings.service.empty()) {
    return Status::InvalidArgument(
        "[engine] kubernetes: set [engine] service to the headless Service's name (peers reach "
        "pod <name>-<ordinal> at <name>-<ordinal>.<service>)");
  }
  if (settings.size < 1) {
    return Status::InvalidArgument(
        "[engine] kubernetes: set [engine] size to the StatefulSet's replicas (the pods cannot "
        "see it in their environment)");
  }
  id.rank = static_cast<int>(*ordinal);
  id.size = settings.size;
  MESHLEARN_RETURN_IF_ERROR(CheckRank(id, "the ordinal of host name '" + host + "'"));
  id.host = host + "." + settings.service;
  id.rank0_host = host.substr(0, dash) + "-0." + settings.service;
  id.port = id.rank0_port = settings.port;
  return id;
}

// Expands one hostlist expression without top-level commas ("rack[1-2]n[01-03]").
Status ExpandOne(std::string_view expr, size_t max_hosts, std::vector<std::string>& out) {
  std::vector<std::string> partial = {""};
  size_t i = 0;
  while (i < expr.size()) {
    size_t open = expr.find('[', i);
    std::string_view literal = expr.substr(i, open == std::string_view::npos ? open : open - i);
    if (literal.find(']') != std::string_view::npos) {
      return Status::InvalidArgument("']' without '[' in '" + std::string(expr) + "'");
    }
    for (std::string& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    size_t close = expr.find(']', open);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("'[' without ']' in '" + std::string(expr) + "'");
    }
    std::string_view ranges = expr.substr(open + 1, close - open - 1);
    std::vector<std::string> values;
    size_t start = 0;
    while (start <= ranges.size()) {
      size_t comma = ranges.find(',', start);
      std::string_view range = ranges.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      size_t dash = range.find('-');
      std::string_view lo_text = range.substr(0, dash);
      std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      std::optional<int64_t> lo = ParseInteger(lo_text, 0, INT64_MAX / 2);
      std::optional<int64_t> hi = ParseInteger(hi_text, 0, INT64_MAX / 2);
      if (!lo || !hi || *hi < *lo) {
        return Status::InvalidArgument("bad range '" + std::string(range) + "' in '" +
                                       std::string(expr) + "' (allowed: N, N-M with M >= N)");
      }
      if (static_cast<uint64_t>(*hi - *lo) >= max_hosts) {
        return Status::InvalidArgument("'" + std::string(expr) + "' names more than " +
                                       std::to_string(max_hosts) + " hosts");
      }
      size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
      for (int64_t v = *lo; v <= *hi; ++v) {
        std::string digits = std::to_string(v);
        if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
        values.push_back(std::move(digits));
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    std::vector<std::string> next;
    for (const std::string& p : partial) {
      for (const std::string& v : values) {
        if (out.size() + next.size() >= max_hosts) {
          return Status::InvalidArgument("'" + std::string(expr) + "' names more than " +
                                         std::to_string(max_hosts) + " hosts");
        }
        next.push_back(p + v);
      }
    }
    partial = std::move(next);
    i = close + 1;
  }
  for (std::string& p : partial) {
    if (p.empty()) return Status::InvalidArgument("an empty host name");
    out.push_back(std::move(p));
  }
  return Status::Ok();
}

}  // namespace

NameTable<EngineKind> EngineKindNames() { return kEngineKinds; }

Result<EngineIdentity> ResolveEngineIdentity(const EngineSettings& settings,
                                             const EngineEnvironment& env) {
  switch (settings.kind) {
    case EngineKind::kSlurm:
      return Slurm(settings, env);
    case EngineKind::kMpi:
      return Mpi(settings, env);
    case EngineKind::kKubernetes:
      return Kubernetes(settings, env);
    case EngineKind::kEnv:
      return FromMeshlearnVariables(settings, env);
    case EngineKind::kAuto:
      break;
  }
  if (Variable(env, "OMPI_COMM_WORLD_RANK")) return Mpi(settings, env);
  if (Variable(env, "SLURM_PROCID")) return Slurm(settings, env);
  if (Variable(env, "MESHLEARN_RANK")) return FromMeshlearnVariables(settings, env);
  if (Variable(env, "KUBERNETES_SERVICE_HOST")) return Kubernetes(settings, env);
  return Status::InvalidArgument(
      "[engine] kind = \"auto\": no engine started this process: none of OMPI_COMM_WORLD_RANK "
      "(Open MPI's mpirun), SLURM_PROCID (Slurm's srun), MESHLEARN_RANK (kind \"env\") or "
      "KUBERNETES_SERVICE_HOST (a Kubernetes pod) is set; start it through an engine, or set "
      "[engine] kind");
}

Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view hostlist, size_t max_hosts) {
  std::vector<std::string> hosts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    char c = i < hostlist.size() ? hostlist[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) {
      return Status::InvalidArgument("unbalanced brackets in hostlist '" + std::string(hostlist) +
                                     "'");
    }
    if (c == ',' && depth == 0) {
      std::string_view expr = hostlist.substr(start, i - start);
      if (expr.empty()) {
        return Status::InvalidArgument("an empty entry in hostlist '" + std::string(hostlist) +
                                       "'");
      }
      Status expanded = ExpandOne(expr, max_hosts, hosts);
      if (!expanded.ok()) return expanded.WithContext("hostlist '" + std::string(hostlist) + "'");
      start = i + 1;
    }
  }
  if (depth != 0) {
    return Status::InvalidArgument("'[' without ']' in hostlist '" + std::string(hostlist) + "'");
  }
  return hosts;
}

Result<std::string> FirstHostOfHostfile(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    line = line.substr(0, line.find('#'));
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) {
      size_t last = line.find_first_of(" \t\r", first);
      return std::string(line.substr(first, last == std::string_view::npos ? last : last - first));
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return Status::InvalidArgument(
      "the hostfile names no host (expected lines like 'node1 slots=4')");
}

bool HasPlaceholder(std::string_view text) {
  size_t open = text.find('{');
  while (open != std::string_view::npos) {
    size_t close = text.find('}', open);
    if (close == std::string_view::npos) return false;
    std::string_view word = text.substr(open + 1, close - open - 1);
    if (!word.empty() &&
        word.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string_view::npos) {
      return true;
    }
    open = text.find('{', open + 1);
  }
  return false;
}

Result<std::string> FillPlaceholders(std::string_view text, const EngineIdentity& identity) {
  const std::map<std::string, std::string, std::less<>> values = {
      {"rank", std::to_string(identity.rank)},
      {"size", std::to_string(identity.size)},
      {"host", identity.host},
      {"port", std::to_string(identity.port)}};
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      out += text.substr(i);
      break;
    }
    std::string_view word = text.substr(open + 1, close - open - 1);
    out += text.substr(i, open - i);
    auto it = values.find(word);
    if (it != values.end()) {
      out += it->second;
    } else if (IsPlaceholderWord(word)) {
      return Status::InvalidArgument("unknown placeholder {" + std::string(word) + "} in '" +
                                     std::string(text) + "' (allowed: " + kPlaceholders + ")");
    } else {
      out += text.substr(open, close - open + 1);
    }
    i = close + 1;
  }
  return out;
}

}  // namespace meshlearn::node
