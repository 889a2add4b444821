#include "tools/scenario/full_test_csv.h"

#include <map>
#include <string>
#include <vector>

#include "tools/layout/run_layout.h"

namespace meshlearn::launch {

Status WriteFullTestCsv(const MethodRun& run) {
  std::vector<FullTestRow> rows;
  for (const NodeRun& n : run.nodes) {
    if (n.full_test) rows.push_back({n.id, n.cluster, *n.full_test});
  }
  return WriteCsvFile<FullTestRow>(PathIn(run.dir, kFullTestFile), rows);
}

Status ReadFullTestCsv(MethodRun& run) {
  auto table = ReadCsvFile<FullTestRow>(PathIn(run.dir, kFullTestFile));
  if (table.status().code() == ErrorCode::kNotFound) return Status::Ok();
  if (!table.ok()) return table.status();
  std::map<std::string, FullTest> by_node;
  for (const FullTestRow& row : table->rows) by_node[row.node] = row.test;
  for (NodeRun& n : run.nodes) {
    auto found = by_node.find(n.id);
    if (found != by_node.end()) n.full_test = found->second;
  }
  return Status::Ok();
}

}  // namespace meshlearn::launch
