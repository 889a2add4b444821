#include "tools/fuzz/fuzz_invariants.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/stable_hash.h"
#include "base/toml_table.h"
#include "node/host/checkpoint.h"
#include "node/host/node_files.h"
#include "node/host/outputs.h"

namespace meshlearn::launch {
namespace {

// At most this many violations of one invariant are listed per seed.
constexpr size_t kPerInvariant = 3;

class Violations {
 public:
  void Add(const char* invariant, const std::string& detail) {
    if (++counts_[invariant] <= kPerInvariant) list_.push_back({invariant, detail});
  }
  std::vector<Violation> Take() { return std::move(list_); }

 private:
  std::map<std::string, size_t> counts_;
  std::vector<Violation> list_;
};

std::string NodeText(const FuzzNodeEnd& n) { return "node " + n.id; }

// A node that failed because its outputs could not be written (sim/simulation.h).
bool FailedWriting(const FuzzNodeEnd& n) { return n.failure.starts_with("cannot write outputs"); }

// The count of `kind` in `faults` (0 when absent).
uint64_t CountOf(const std::map<std::string, uint64_t>& faults, const std::string& kind) {
  auto it = faults.find(kind);
  return it == faults.end() ? 0 : it->second;
}

// counters-balance over `r`'s ledger and fault counts.
void CheckBalance(const FuzzRunReport& r, Violations& v) {
  const node::MessageLedger& l = r.ledger;
  if (l.sent != l.lost + l.dropped + l.refused + l.received ||
      l.sent_bytes != l.lost_bytes + l.dropped_bytes + l.refused_bytes + l.received_bytes) {
    std::ostringstream d;
    d << "messages: sent " << l.sent << " != lost " << l.lost << " + dropped " << l.dropped
      << " + refused " << l.refused << " + received " << l.received << "; bytes: sent "
      << l.sent_bytes << ", lost " << l.lost_bytes << ", dropped " << l.dropped_bytes
      << ", refused " << l.refused_bytes << ", received " << l.received_bytes;
    v.Add(kCountersBalance, d.str());
  }
  const uint64_t model_lost = CountOf(r.faults, "lost") + CountOf(r.faults, "cut");
  if (l.lost != model_lost || l.duplicated != CountOf(r.faults, "duplicated")) {
    v.Add(kCountersBalance, "the network lost " + std::to_string(l.lost) + " and copied " +
                                std::to_string(l.duplicated) + " messages; the fault model lost " +
                                std::to_string(model_lost) + " and duplicated " +
                                std::to_string(CountOf(r.faults, "duplicated")));
  }
}

// The protocol's error codes a refusal may carry: every code but ok and internal.
bool IsRefusalCode(const std::string& name) {
  for (uint16_t c = 1; c <= static_cast<uint16_t>(ErrorCode::kRefused); ++c) {
    if (name == ErrorCodeName(static_cast<ErrorCode>(c))) return true;
  }
  return false;
}

// rounds.csv of `n` against finite-models, rounds-contiguous, counters-balance (its byte totals),
// checkpoint-agrees and liveness.
void CheckNode(const FuzzScenario& s, const FuzzNodeEnd& n, Violations& v) {
  auto rows = node::ReadRoundsCsv((std::filesystem::path(n.dir) / node::kRoundsFile).string());
  if (!rows.ok()) {
    if (n.failure.empty()) v.Add(kLiveness, NodeText(n) + ": " + rows.status().ToString());
    return;
  }
  for (size_t k = 0; k < rows->size(); ++k) {
    const node::RoundRow& r = (*rows)[k];
    if (r.round != static_cast<int64_t>(k)) {
      v.Add(kRoundsContiguous, NodeText(n) + ": row " + std::to_string(k + 1) + " is round " +
                                   std::to_string(r.round) + ", expected " + std::to_string(k));
      break;
    }
    if (k > 0 && (r.bytes_in < (*rows)[k - 1].bytes_in || r.bytes_out < (*rows)[k - 1].bytes_out)) {
      std::ostringstream d;
      d << NodeText(n) << ": round " << r.round << " counts bytes_in " << r.bytes_in
        << " and bytes_out " << r.bytes_out << ", round " << r.round - 1 << " counted "
        << (*rows)[k - 1].bytes_in << " and " << (*rows)[k - 1].bytes_out;
      v.Add(kCountersBalance, d.str());
    }
    if (!std::isfinite(r.train_loss) || !std::isfinite(r.val_loss)) {
      std::ostringstream d;
      d << NodeText(n) << ": round " << r.round << " train_loss " << r.train_loss << " val_loss "
        << r.val_loss;
      v.Add(kFiniteModels, d.str());
    }
  }
  const int64_t last = rows->empty() ? -1 : rows->back().round;
  if (last < s.rounds && n.failure.empty()) {
    v.Add(kLiveness, NodeText(n) + " ended after round " + std::to_string(last) + " of " +
                         std::to_string(s.rounds) + " without a reason");
  }
  if (last < 0) return;
  auto checkpoint =
      node::ReadCheckpoint((std::filesystem::path(n.dir) / node::kCheckpointFile).string());
  if (!checkpoint.ok() && FailedWriting(n) && checkpoint.status().code() == ErrorCode::kNotFound) {
    // Its first checkpoint's write failed.
  } else if (!checkpoint.ok()) {
    v.Add(kCheckpointAgrees, NodeText(n) + ": " + checkpoint.status().ToString());
  } else if (FailedWriting(n) && checkpoint->round <= last) {
    // Its rows reached the disk before the checkpoint's write failed: behind, never ahead.
  } else if (checkpoint->round != last || checkpoint->stopped != rows->back().stopped) {
    v.Add(kCheckpointAgrees,
          NodeText(n) + ": checkpoint of round " + std::to_string(checkpoint->round) +
              (checkpoint->stopped ? " (stopped)" : "") + ", rounds.csv ends at round " +
              std::to_string(last) + (rows->back().stopped ? " (stopped)" : ""));
  }
}

// plugin-faults over `n`'s node.log: the lines naming the file of a plug-in of `s` that does not
// misbehave, but the start-up line that says the node runs it (node/host/node_host.cc).
// Rationale: every run-time fault of a plug-in is a line naming its file (plugins/script_*.h),
// and the misbehaving plug-in's are the only ones a seed expects.
void CheckPlugInLog(const FuzzScenario& s, const FuzzNodeEnd& n, Violations& v) {
  std::vector<std::string> files;
  for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) {
    if (p != FuzzPlugIn::kNone && !Misbehaves(p)) files.push_back(PlugInFile(s, p));
  }
  if (files.empty()) return;
  auto log = ReadWholeFile((std::filesystem::path(n.dir) / node::kNodeLogFile).string());
  if (!log.ok()) return;  // a node whose writes failed may have none
  std::istringstream lines(*log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("plug-in [") != std::string::npos) continue;
    for (const std::string& file : files) {
      if (line.find(file) != std::string::npos) v.Add(kPlugInFaults, NodeText(n) + ": " + line);
    }
  }
}

}  // namespace

const std::vector<std::string>& InvariantNames() {
  static const std::vector<std::string> kNames = {
      kNoCrash,          kScenarioRuns,  kFiniteModels,    kRoundsContiguous,
      kCheckpointAgrees, kFramesRefused, kCountersBalance, kMemoryBound,
      kPlugInFaults,     kLiveness,      kDeterminism};
  return kNames;
}

Status WriteRunReport(const std::string& path, const FuzzRunReport& report) {
  return WriteFileAtomically(path, RenderToml(report));
}

Result<FuzzRunReport> ReadRunReport(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    if (text.status().code() == ErrorCode::kNotFound) {
      return Status::NotFound("no run report at " + path);
    }
    return text.status();
  }
  return ParseToml<FuzzRunReport>(*text, path);
}

std::vector<Violation> CheckRun(const FuzzScenario& scenario, const FuzzRunReport& report) {
  Violations v;
  if (!report.error.empty()) {
    v.Add(kScenarioRuns, report.error);
    return v.Take();
  }
  if (const uint64_t loaded = CountOf(report.faults, "torn_loaded"); loaded > 0) {
    v.Add(kCheckpointAgrees, std::to_string(loaded) +
                                 " restart(s) loaded a torn checkpoint as if it were whole "
                                 "(see the nodes' node.log)");
  }
  if (!report.interrupted) CheckBalance(report, v);
  const double memory_bound = kMemoryBaseMib + kMemoryPerNodeMib * scenario.nodes;
  if (report.memory_growth_mib > memory_bound) {
    std::ostringstream d;
    d << "the run's peak resident memory grew by " << report.memory_growth_mib
      << " MiB; the bound for " << scenario.nodes << " nodes is " << memory_bound << " MiB";
    v.Add(kMemoryBound, d.str());
  }
  for (const FuzzNodeEnd& n : report.nodes) {
    CheckNode(scenario, n, v);
    CheckPlugInLog(scenario, n, v);
    for (const auto& [code, count] : n.refused_by_code) {
      if (!IsRefusalCode(code)) {
        v.Add(kFramesRefused, NodeText(n) + " refused " + std::to_string(count) +
                                  " message(s) with code '" + code + "'");
      }
    }
  }
  const double bound = LivenessBoundSeconds(scenario);
  if (report.interrupted || report.simulated_seconds > bound) {
    std::ostringstream d;
    d << "the run took " << report.simulated_seconds << " simulated seconds"
      << (report.interrupted ? " and was stopped there" : "") << "; the bound is " << bound;
    v.Add(kLiveness, d.str());
  }
  return v.Take();
}

uint64_t HashOutputs(const FuzzRunReport& report, bool checkpoints) {
  uint64_t hash = 0;
  for (const FuzzNodeEnd& n : report.nodes) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(n.dir, ec)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".csv" || (checkpoints && ext == ".bin")) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      hash = StableHash(file.filename().string() + bytes.str(), hash);
    }
  }
  return hash;
}

}  // namespace meshlearn::launch
