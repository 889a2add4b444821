#pragma once
// Communication counters and the per-node CSV outputs of DESIGN.md "Outputs": comm.csv (which
// feeds the N×N heatmap) and scores.csv.
//
// Specification.
// - times_sampled(j) counts the rounds in which node i drew peer j; answered(j) counts the rounds
//   in which j's reply arrived before the deadline. answered <= times_sampled always holds.
//   Rationale: heatmap entry (i, j) is "how often node i sampled node j" (DESIGN.md "Who uses
//   it"); the answered column separates a peer i wanted from a peer that actually contributed.
// - comm.csv has the header `peer,times_sampled,answered`: DESIGN.md's two columns, then
//   `answered` appended. scores.csv has `peer,score,probability`; an unscored peer has an empty
//   score cell. Rows are ordered by peer id; ids are quoted as RFC 4180 demands when they contain
//   a comma, a quote or a line break; numbers use the shortest text that reads back exactly.
//   Rationale: readers that take the first two columns of comm.csv keep working; an empty cell
//   is the honest spelling of "no score", where 0 would be a score.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "topology/sampler.h"

namespace meshlearn::topology {

// One peer's counters: one comm.csv row.
struct CommRow {
  std::string peer;
  uint64_t times_sampled = 0;
  uint64_t answered = 0;
};

// Node i's communication counters, keyed by peer id.
class CommCounters {
 public:
  // Counts one draw of `peer` by the sampler.
  void RecordSampled(std::string_view peer);
  // Counts one in-time answer of `peer`. Returns kInvalidArgument (and counts nothing) when the
  // answers would outnumber the draws of that peer.
  Status RecordAnswered(std::string_view peer);

  // How often `peer` was drawn (0 for a peer never drawn).
  uint64_t TimesSampled(std::string_view peer) const;
  // How often `peer` answered in time.
  uint64_t TimesAnswered(std::string_view peer) const;

  // Every counted peer's row, ordered by peer id (plain data, for checkpoints and comm.csv).
  std::vector<CommRow> Rows() const;
  // Rebuilds counters from Rows() output. Returns kInvalidArgument for an empty or repeated peer
  // id or for answered > times_sampled.
  static Result<CommCounters> FromRows(const std::vector<CommRow>& rows);

 private:
  std::map<std::string, CommRow, std::less<>> rows_;
};

// The text of comm.csv (header row included) for `rows`.
std::string CommCsv(const std::vector<CommRow>& rows);

// The text of scores.csv (header row included) for a sampler's records.
std::string ScoresCsv(const std::vector<PeerRecord>& records);

}  // namespace meshlearn::topology
