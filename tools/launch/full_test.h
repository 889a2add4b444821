#pragma once
// The full-test-set evaluation of a method ([data] test = "cluster"; configs/README.md).
//
// Specification.
// - Once a method's nodes have ended (in every mode: processes, threads, simulation, engines),
//   every node's best-validation model is tested on its cluster's full test set. That model is
//   the one whose test metric the table reports: the weights after local training in the first
//   round with the node's lowest validation loss, which early stopping keeps and the node's
//   checkpoint holds (node/host/checkpoint.h, LearnerState::best_weights; its current weights
//   before any finite validation loss).
//   Rationale: file 004's code tests every client's best model (best by validation loss, the one
//   early stopping keeps) on its cluster's whole test set, the same images for every client and
//   every seed (testing_utils.py:420-456); a sample of 100 images per node adds about 0.36 points
//   of noise to a mean over 100 nodes at 85%.
// - A cluster's full test set is training::BuildClusterTestSets's: all of its test pool
//   (Fashion-MNIST: the 10,000 t10k images), transformed as its training data. It is built once
//   per method, not per node.
// - The results go to "<method dir>/full_test.csv" (tools/scenario/full_test_csv.h).

#include <vector>

#include "base/status.h"
#include "node/config/config.h"
#include "tools/scenario/run_types.h"
#include "training/dataset.h"

namespace meshlearn::launch {

// Tests the best model of every node of `run` (its checkpoint in its folder) on the test set of
// its cluster, `test_sets[cluster]`, with the model of `config` (any node's config of the method:
// they share [model]); fills each NodeRun::full_test and writes "<run.dir>/full_test.csv". A node
// without a checkpoint keeps no result. Errors: a model that cannot be built, a checkpoint that
// cannot be read or does not fit the model, each naming the node's file; the file's write error.
Status TestOnClusterSets(const node::NodeConfig& config,
                         const std::vector<training::Dataset>& test_sets, MethodRun& run);

}  // namespace meshlearn::launch
