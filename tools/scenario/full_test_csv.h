#pragma once
// The file of the full-test-set evaluation of a method ([data] test = "cluster";
// tools/launch/full_test.h): "<method dir>/full_test.csv", one row per node that left a
// checkpoint:
//     node,cluster,round,images,test_loss,test_acc
// (round: the round of the tested model; test_acc in [0, 1], empty for regression), which the
// report reads back (ReadFullTestCsv), so `meshlearn-launch report` and --resume show them too.

#include "base/csv_table.h"
#include "base/status.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// One row of full_test.csv: a node, its cluster and its full test (the file's description,
// base/csv_table.h).
struct FullTestRow {
  std::string node;
  int cluster = 0;
  FullTest test;

  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("node", r.node);
    c.Column("cluster", r.cluster, WholeCell{.form = {.min = 0}});
    c.Column("round", r.test.round);
    c.Column("images", r.test.images, WholeCell{.form = {.min = 0}});
    c.Column("test_loss", r.test.loss);
    c.Column("test_acc", r.test.accuracy);
  }
};

// Writes "<run.dir>/full_test.csv" from the full_test of `run`'s nodes (those without one are
// left out).
Status WriteFullTestCsv(const MethodRun& run);

// Reads "<run.dir>/full_test.csv" into the full_test of `run`'s nodes. Ok, changing nothing, when
// the file is missing (a method run with test = "per-node", or before the key existed);
// kMalformed naming the file, line and column for a header, row or cell that does not read
// (base/csv_table.h), and nothing changed.
Status ReadFullTestCsv(MethodRun& run);

}  // namespace meshlearn::launch
