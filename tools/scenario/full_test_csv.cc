#include "tools/scenario/full_test_csv.h"

#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "tools/layout/run_layout.h"

namespace meshlearn::launch {
namespace {

constexpr const char kFullTestHeader[] = "node,cluster,round,images,test_loss,test_acc";
constexpr size_t kFullTestColumns = 6;

}  // namespace

Status WriteFullTestCsv(const MethodRun& run) {
  std::ostringstream csv;
  csv << kFullTestHeader << '\n';
  for (const NodeRun& n : run.nodes) {
    if (!n.full_test) continue;
    const FullTest& t = *n.full_test;
    csv << CsvField(n.id) << ',' << n.cluster << ',' << t.round << ',' << t.images << ','
        << ExactNumber(t.loss) << ',' << ExactNumber(t.accuracy) << '\n';
  }
  return WriteFileAtomically(PathIn(run.dir, kFullTestFile), csv.str());
}

Status ReadFullTestCsv(MethodRun& run) {
  const std::string path = PathIn(run.dir, kFullTestFile);
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Status::Ok();
  if (std::string_view(*text).substr(0, text->find('\n')) != kFullTestHeader) {
    return Status::Malformed(path + ":1: header is not '" + kFullTestHeader + "'");
  }
  auto records = ParseCsv(*text, path);
  if (!records.ok()) return records.status();
  std::map<std::string, FullTest> by_node;
  for (size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& record = (*records)[r];
    if (record.fields.size() != kFullTestColumns) {
      return Status::Malformed(path + ":" + std::to_string(record.line) + ": expected " +
                               kFullTestHeader);
    }
    FullTest t;
    auto round = CsvNumber<int64_t>(path, record, 2, "round");
    auto images = CsvNumber<int64_t>(path, record, 3, "images", {.min = 0});
    auto loss = CsvNumber<double>(path, record, 4, "test_loss", kExactNumberForm);
    auto accuracy = CsvNumber<double>(path, record, 5, "test_acc", kExactNumberForm);
    for (const Status& s : {round.status(), images.status(), loss.status(), accuracy.status()}) {
      MESHLEARN_RETURN_IF_ERROR(s);
    }
    t.round = *round;
    t.images = *images;
    t.loss = *loss;
    t.accuracy = *accuracy;
    by_node[record.fields[0]] = t;
  }
  for (NodeRun& n : run.nodes) {
    auto found = by_node.find(n.id);
    if (found != by_node.end()) n.full_test = found->second;
  }
  return Status::Ok();
}

}  // namespace meshlearn::launch
