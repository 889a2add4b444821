#include "tools/scenario/summary_csv.h"

namespace meshlearn::launch {

std::string RoundRangeCell::Write(const std::optional<std::pair<int64_t, int64_t>>& rounds) const {
  if (!rounds) return "";
  const auto [first, last] = *rounds;
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

Status RoundRangeCell::Read(std::string_view cell, const std::string& where,
                            std::optional<std::pair<int64_t, int64_t>>& out) const {
  out.reset();
  if (cell.empty()) return Status::Ok();
  const size_t dash = cell.find('-', 1);
  const NumberForm round{.min = 0};
  const std::optional<int64_t> first = NumberFromText<int64_t>(cell.substr(0, dash), round);
  const std::optional<int64_t> last = dash == std::string_view::npos
                                          ? first
                                          : NumberFromText<int64_t>(cell.substr(dash + 1), round);
  if (!first || !last || *last < *first) {
    return Status::Malformed(where + ": '" + std::string(cell) +
                             "' is not a range of rounds; allowed: a round such as 3, first-last "
                             "such as 1-4, or empty for none");
  }
  out = std::make_pair(*first, *last);
  return Status::Ok();
}

Status WriteSummaryCsv(const std::string& path, const std::vector<MethodSummary>& summaries,
                       int num_clusters) {
  CsvLayout layout = LayoutOf<MethodSummary>(summaries);
  layout.SetGroupWidth("cluster_", static_cast<size_t>(num_clusters));
  return WriteCsvFile<MethodSummary>(path, summaries, layout);
}

Result<CsvTable<MethodSummary>> ReadSummaryCsv(const std::string& path) {
  return ReadCsvFile<MethodSummary>(path);
}

}  // namespace meshlearn::launch
