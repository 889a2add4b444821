#pragma once
// The invariants the fault fuzzer (tools/fuzz/fuzz.h) checks after every seed, over what the
// seed's run left in its folder. Each has a name, printed with every violation
// (docs/development.md "The fault fuzzer" says what each one means):
//   no-crash           the run's process ended normally (no signal, abort or failed assertion)
//   scenario-runs      the launcher accepted the drawn scenario and ran it
//   finite-models      every round of every node has a finite training and validation loss
//   rounds-contiguous  each node's rounds.csv holds rounds 0..k, without gaps or repeats, across
//                      its restarts
//   checkpoint-agrees  each node's checkpoint.bin loads (its CRC holds) and is of round k, the
//                      last row of its rounds.csv, with the same stopped flag; a node that failed
//                      writing its outputs may have a checkpoint behind its rows (or none), never
//                      ahead; no restart loaded a checkpoint the storage tore (each was refused
//                      with its checksum error, and its node restarted clean, saying so)
//   frames-refused     every message a node refused was refused with one of the protocol's error
//                      codes (never "internal" or an unknown one)
//   counters-balance   every message sent (and every byte) has one fate: sent = lost + dropped +
//                      refused + received, in messages and in bytes; the messages the network
//                      lost are those the fault model lost or cut, and its copies those the model
//                      duplicated; each node's bytes_in and bytes_out in rounds.csv never fall from
//                      one row to the next, across its restarts
//   memory-bound       the run's peak resident memory grew by at most kMemoryBaseMib +
//                      kMemoryPerNodeMib x nodes over what it had when it began
//   plugin-faults      no node's log reports a fault of a plug-in that does not misbehave on
//                      purpose: after its start-up line, a drawn plug-in's file is named in a
//                      node.log only when it is the misbehaving one (FuzzPlugIn)
//   liveness           after the faults (every outage ends, every partition heals), every node
//                      finished all its rounds, or ended with its reason; and the run ended within
//                      LivenessBoundSeconds simulated seconds
//   determinism        (checked by the command) a second run of the seed gave the same outputs
//
// The liveness, counters-balance and memory bounds are stated in docs/development.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/transport/simulated_network.h"
#include "tools/fuzz/fuzz_scenario.h"

namespace meshlearn::launch {

// Invariant names (above).
inline constexpr const char kNoCrash[] = "no-crash";
inline constexpr const char kScenarioRuns[] = "scenario-runs";
inline constexpr const char kFiniteModels[] = "finite-models";
inline constexpr const char kRoundsContiguous[] = "rounds-contiguous";
inline constexpr const char kCheckpointAgrees[] = "checkpoint-agrees";
inline constexpr const char kFramesRefused[] = "frames-refused";
inline constexpr const char kCountersBalance[] = "counters-balance";
inline constexpr const char kMemoryBound[] = "memory-bound";
inline constexpr const char kPlugInFaults[] = "plugin-faults";

// memory-bound: a run's peak resident memory may grow over the fuzzer's by at most
// kMemoryBaseMib + kMemoryPerNodeMib x nodes (MiB).
inline constexpr double kMemoryBaseMib = 64;
inline constexpr double kMemoryPerNodeMib = 4;
inline constexpr const char kLiveness[] = "liveness";
inline constexpr const char kDeterminism[] = "determinism";

// Every invariant name, in the order above.
const std::vector<std::string>& InvariantNames();

// How one node of a seed's run ended, as the run reported it.
struct FuzzNodeEnd {
  std::string id;
  std::string dir;      // its output folder
  std::string failure;  // why it failed (SimulationReport::failures); empty: it did not
  std::map<std::string, uint64_t> refused_by_code;  // its last incarnation's refusals, by code

  // The keys of one [[nodes]] table of the run report (base/toml_table.h).
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& n) {
    keys.String("id", n.id);
    keys.String("dir", n.dir);
    keys.String("failure", n.failure);
    keys.Counts("refused_by_code", n.refused_by_code);
  }
};

// The keys of the run report's [ledger] table: the fates of the messages.
template <class Keys, class Ledger>
void DescribeLedger(Keys& keys, Ledger& l) {
  keys.Integer("sent", l.sent);
  keys.Integer("sent_bytes", l.sent_bytes);
  keys.Integer("lost", l.lost);
  keys.Integer("lost_bytes", l.lost_bytes);
  keys.Integer("dropped", l.dropped);
  keys.Integer("dropped_bytes", l.dropped_bytes);
  keys.Integer("refused", l.refused);
  keys.Integer("refused_bytes", l.refused_bytes);
  keys.Integer("received", l.received);
  keys.Integer("received_bytes", l.received_bytes);
  keys.Integer("duplicated", l.duplicated);
}

// What a seed's run reported (written by the run into its folder, read back by the checker).
struct FuzzRunReport {
  std::string error;  // the launcher refused or could not run the scenario; empty: it ran
  double simulated_seconds = 0;
  bool interrupted = false;  // stopped at the liveness bound
  std::vector<FuzzNodeEnd> nodes;
  std::map<std::string, uint64_t> faults;  // the faults injected (SimulationReport::faults)
  node::MessageLedger ledger;              // the fates of the messages
  // The run's peak resident memory minus its resident memory when it began, in MiB.
  double memory_growth_mib = 0;

  // The keys of the run report, described once (base/toml_table.h): WriteRunReport and
  // ReadRunReport run it.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& r) {
    keys.String("error", r.error);
    keys.Number("simulated_seconds", r.simulated_seconds, {.min = 0});
    keys.Bool("interrupted", r.interrupted);
    keys.Number("memory_growth_mib", r.memory_growth_mib);
    keys.Tables("nodes", r.nodes);
    keys.Counts("faults", r.faults);
    keys.Table("ledger", [&](auto& ledger) { DescribeLedger(ledger, r.ledger); });
  }
};

// Writes `report` to `path` (TOML).
Status WriteRunReport(const std::string& path, const FuzzRunReport& report);
// Reads a report WriteRunReport wrote, strictly: kNotFound when there is none; kMalformed naming
// the file, the line and the key of a missing, mistyped or unknown key (base/toml_table.h).
Result<FuzzRunReport> ReadRunReport(const std::string& path);

// A broken invariant: its name and what broke it (the node, the round, the values).
struct Violation {
  std::string invariant;
  std::string detail;
};

// Checks every invariant but no-crash and determinism on the run of `scenario` that `report`
// describes; returns the violations, at most a few per invariant.
std::vector<Violation> CheckRun(const FuzzScenario& scenario, const FuzzRunReport& report);

// A hash of every output the nodes of `report` wrote that a simulation makes deterministic
// (sim/simulation.h: their CSV files), in node order, and with `checkpoints` their checkpoints.
// Rationale: with security on, the launcher draws new CURVE keys every run, and a checkpoint
// keeps its peers' public keys.
uint64_t HashOutputs(const FuzzRunReport& report, bool checkpoints);

}  // namespace meshlearn::launch
