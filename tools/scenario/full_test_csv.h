#pragma once
// The file of the full-test-set evaluation of a method ([data] test = "cluster";
// tools/launch/full_test.h): "<method dir>/full_test.csv", one row per node that left a
// checkpoint:
//     node,cluster,round,images,test_loss,test_acc
// (round: the round of the tested model; test_acc in [0, 1], empty for regression), which the
// report reads back (ReadFullTestCsv), so `meshlearn-launch report` and --resume show them too.

#include "base/status.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// Writes "<run.dir>/full_test.csv" from the full_test of `run`'s nodes (those without one are
// left out).
Status WriteFullTestCsv(const MethodRun& run);

// Reads "<run.dir>/full_test.csv" into the full_test of `run`'s nodes. Ok, changing nothing, when
// the file is missing (a method run with test = "per-node", or before the key existed); kMalformed
// naming the file, line and column for a header or cell that does not read.
Status ReadFullTestCsv(MethodRun& run);

}  // namespace meshlearn::launch
