#include "topology/comm_counters.h"

#include "base/csv.h"

namespace meshlearn::topology {

void CommCounters::RecordSampled(std::string_view peer) {
  auto it = rows_.find(peer);
  if (it == rows_.end()) it = rows_.emplace(std::string(peer), CommRow{std::string(peer)}).first;
  ++it->second.times_sampled;
}

Status CommCounters::RecordAnswered(std::string_view peer) {
  const auto it = rows_.find(peer);
  if (it == rows_.end() || it->second.answered >= it->second.times_sampled) {
    return Status::InvalidArgument("comm counters: an answer from " + std::string(peer) +
                                   " that was not sampled");
  }
  ++it->second.answered;
  return Status::Ok();
}

uint64_t CommCounters::TimesSampled(std::string_view peer) const {
  const auto it = rows_.find(peer);
  return it == rows_.end() ? 0 : it->second.times_sampled;
}

uint64_t CommCounters::TimesAnswered(std::string_view peer) const {
  const auto it = rows_.find(peer);
  return it == rows_.end() ? 0 : it->second.answered;
}

std::vector<CommRow> CommCounters::Rows() const {
  std::vector<CommRow> rows;
  for (const auto& [peer, row] : rows_) rows.push_back(row);
  return rows;
}

Result<CommCounters> CommCounters::FromRows(const std::vector<CommRow>& rows) {
  CommCounters counters;
  for (const CommRow& row : rows) {
    if (row.peer.empty() || row.answered > row.times_sampled ||
        !counters.rows_.emplace(row.peer, row).second) {
      return Status::InvalidArgument("comm counters: bad or repeated row for peer \"" + row.peer +
                                     "\"");
    }
  }
  return counters;
}

std::string CommCsv(const std::vector<CommRow>& rows) {
  std::string csv = "peer,times_sampled,answered\n";
  for (const CommRow& row : rows) {
    csv += CsvField(row.peer) + "," + std::to_string(row.times_sampled) + "," +
           std::to_string(row.answered) + "\n";
  }
  return csv;
}

std::string ScoresCsv(const std::vector<PeerRecord>& records) {
  std::string csv = "peer,score,probability\n";
  for (const PeerRecord& record : records) {
    csv += CsvField(record.peer) + "," + (record.score ? ExactNumber(*record.score) : "") + "," +
           ExactNumber(record.probability) + "\n";
  }
  return csv;
}

}  // namespace meshlearn::topology
