#pragma once
// Checking a plug-in file before a long run (`meshlearn-launch check-plugin FILE`,
// docs/plugins.md "Check it"): which plug-in point the file fits, and what its forward returns on
// random inputs of the model's size.
//
// Specification.
// - The kind comes from forward's signature (plugins/script_metric.h, script_merge.h,
//   script_attack.h): three tensors (and an own_loss float) is a metric, (Tensor, List[Tensor],
//   Tensor) a merge rule, (Tensor, List[Tensor]) an attack. Another signature is
//   kInvalidArgument, naming the file and the three signatures allowed.
// - CheckPlugIn loads the file with its point's loader (every refusal at start-up, as a node
//   would refuse it), then calls it `trials` times on random inputs of `floats` floats drawn from
//   `seed`: a peer model is the own one plus noise of a growing scale, so that a metric sees near
//   and far peers; a merge gets 1 to 5 peers with FedAvg coefficients of random sizes; an attack
//   0 to 3 fetched models. The first call that fails is the error, with the trial's number. A
//   metric that says it is symmetric is also called with own and peer swapped, and must give
//   the same score to 1e-6 (relative).
// - The report says, per trial, what the module returned (a score; a model's norm beside the
//   inputs' norms and its distance to the own model), and the mean time of a call.

#include <cstdint>
#include <string>

#include "base/status.h"

namespace meshlearn::plugins {

// The plug-in points.
enum class PlugInKind { kMetric, kMerge, kAttack };

// The config choice of a plug-in point ("[learning] metric", ...).
std::string PlugInPointName(PlugInKind kind);

// The plug-in point that the file at `path` fits (see the specification).
Result<PlugInKind> PlugInKindOf(const std::string& path);

// The report of a check (see the specification), or the first error.
Result<std::string> CheckPlugIn(const std::string& path, size_t floats, int trials, uint64_t seed);

}  // namespace meshlearn::plugins
