#pragma once
// Partitioners: from source datasets and a seed, build N client datasets (train / validation /
// test) under a distribution shift between clusters of clients, plus each client's ground-truth
// cluster. DESIGN.md "Data, shifts and scenarios"; file 004 section 3.2.
//
// Rules shared by every shift:
// - Clients are assigned to clusters in contiguous blocks: clients [0, size_0) form cluster 0,
//   the next size_1 clients cluster 1, and so on (as in the authors' code).
//   Rationale: the oracle baseline and the tables read clusters off client ids.
// - Train and validation samples are disjoint across all clients unless `allow_overlap` is set
//   (then each client draws independently, so two clients may share samples; within one client
//   train, validation and test never share a sample). Test samples come from the source's test
//   pool (or a held-out part of the pool) filtered and transformed exactly like the cluster's
//   training data, so a client's test set follows its own cluster's distribution.
// - Same sources, same config, same seed: the same partition, bit for bit, in every process.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "training/dataset.h"

namespace meshlearn::training {

// The kind of distribution shift between clusters.
enum class ShiftKind {
  kNone,       // "iid": every cluster draws from the same distribution
  kCovariate,  // "covariate": images of cluster c are rotated by rotations_deg[c]
  kLabel,      // "label": cluster c only holds the classes label_sets[c]
  kLabelSwap,  // "label_swap": cluster c swaps the label pairs label_swaps[c] (concept shift)
  kDomain,     // "domain": cluster c draws from source c, labels shifted by its label_offset
  kSynthetic,  // "synthetic": linear regression y = <x, theta_c> + noise (concept shift)
};

// The config name of every ShiftKind ([data] shift), in documentation order.
NameTable<ShiftKind> ShiftKindNames();

// The range the partitioner maps image pixels to. Sources hold pixels in [0, 1] (the readers
// divide bytes by 255); the partitioner rescales them before any rotation, so a rotation's
// outside fill (0) is black in [0, 1] and mid-grey in [−1, 1].
enum class PixelRange {
  kUnit,       // "unit": [0, 1], as read
  kSymmetric,  // "symmetric": [−1, 1] by x ↦ (x − 0.5) / 0.5, then the rotation: file 004's code
               // (torchvision ToTensor, Normalize((0.5,), (0.5,)), then RandomRotation)
};

// The config name of every PixelRange ([data] pixel_range), in documentation order.
NameTable<PixelRange> PixelRangeNames();

// How a rotation reads the source image between pixel centres.
enum class Interpolation {
  kBilinear,  // "bilinear": the four neighbours, weighted by distance (smooths the image)
  kNearest,   // "nearest": the nearest source pixel, ties to even (keeps pixel values): file
              // 004's code (torchvision RandomRotation's default, InterpolationMode.NEAREST)
};

// The config name of every Interpolation ([data] interpolation), in documentation order.
NameTable<Interpolation> InterpolationNames();

// Which samples of a source's pool are train and which validation samples, across seeds.
enum class PoolSplit {
  kPerSeed,  // "per-seed": the seed shuffles the whole pool; each client takes its train and
             // validation samples from that one order, so the seed decides both pools
  kFixed,    // "fixed": one seed-independent shuffle cuts the pool once into a test hold-out (no
             // separate test pool only), a train pool and a validation pool, in the ratio
             // train_per_client : validation_per_client; the seed only assigns each pool's
             // samples to the clients. File 004's code: run_experiment.py:183-197 (a fixed
             // default_rng(42) split), utils/initialization_utils.py:268-274 (a random_split per
             // seed)
};

// The config name of every PoolSplit ([data] pool_split), in documentation order.
NameTable<PoolSplit> PoolSplitNames();

// Parses a shift name ("iid", "covariate", "label", "label_swap", "domain", "synthetic").
// Unknown names give kInvalidArgument listing the allowed ones.
Result<ShiftKind> ParseShiftKind(std::string_view name);
// The config name of `kind`.
const char* ShiftKindName(ShiftKind kind);

// Everything that decides a partition.
struct PartitionConfig {
  ShiftKind shift = ShiftKind::kNone;
  int num_clients = 0;
  // Clients per cluster: counts summing to num_clients (e.g. {70, 20, 5, 5}), or fractions
  // summing to 1 (e.g. {0.7, 0.2, 0.05, 0.05}; rounded by largest remainder). Empty: the
  // clusters are as equal as possible, and their number comes from num_clusters or, when that
  // is 0, from the shift's per-cluster list (or the sources for "domain"; 3 for "synthetic").
  std::vector<double> cluster_sizes;
  int num_clusters = 0;
  size_t train_per_client = 0;
  size_t validation_per_client = 0;
  size_t test_per_client = 0;
  uint64_t seed = 0;
  bool allow_overlap = false;  // see the header comment
  PoolSplit pool_split = PoolSplit::kPerSeed;
  // With no separate test pool, this fraction of the pool is held out (by seed) for test sets.
  double test_holdout_fraction = 0.15;

  // Image sources only (not "synthetic"): see PixelRange.
  PixelRange pixel_range = PixelRange::kUnit;
  std::vector<double> rotations_deg;                       // covariate: one angle per cluster (any)
  Interpolation interpolation = Interpolation::kBilinear;  // covariate: how rotations sample
  std::vector<std::vector<int64_t>> label_sets;            // label: the classes of each cluster
  std::vector<std::vector<std::pair<int64_t, int64_t>>> label_swaps;  // label_swap: per cluster

  // synthetic: y = <x, theta_c> + N(0, noise_std^2), x and theta_c ~ U(-range, range)^dim.
  int synthetic_dim = 10;
  double synthetic_range = 10.0;
  double synthetic_noise_std = 3.0;
};

// One client's data and its ground-truth cluster.
struct ClientShard {
  int client_id = 0;
  int cluster_id = 0;
  Dataset train;
  Dataset validation;
  Dataset test;
  bool operator==(const ClientShard& other) const = default;
};

// Where a cluster's samples come from. `pool` supplies train and validation samples;
// `test_pool`, when not null, supplies test samples (e.g. Fashion-MNIST t10k), otherwise a
// held-out part of `pool` does. Labels are shifted by `label_offset` (domain shift: FMNIST +10).
struct DataSource {
  const Dataset* pool = nullptr;
  const Dataset* test_pool = nullptr;
  int64_t label_offset = 0;
};

// Resolves config.cluster_sizes into client counts per cluster (see PartitionConfig).
// kInvalidArgument when counts do not sum to num_clients, fractions do not sum to 1, or a size
// is negative.
Result<std::vector<int>> ResolveClusterSizes(const PartitionConfig& config);

// Builds config.num_clients shards. `sources` holds one source for every shift but "domain"
// (one per cluster) and "synthetic" (none). Errors: inconsistent config (a per-cluster list of
// the wrong length, an unknown class, a pool too small for disjoint samples, mismatched sample
// shapes), each naming the offending field.
Result<std::vector<ClientShard>> BuildClientShards(const std::vector<DataSource>& sources,
                                                   const PartitionConfig& config);

// The full test set of every cluster, in cluster order: every sample of the cluster's test pool
// (the source's test split, or the part of its pool held out for tests; for "label" only the
// cluster's classes) transformed exactly as the cluster's training samples (pixel range,
// rotation, label swap, label offset), as the per-client test sets of BuildClientShards are drawn
// from. The same for every client of a cluster and, given the sources, for every seed unless the
// test pool is a held-out part (the seed picks it). Errors as BuildClientShards; kInvalidArgument
// for "synthetic", which has no test pool.
Result<std::vector<Dataset>> BuildClusterTestSets(const std::vector<DataSource>& sources,
                                                  const PartitionConfig& config);

// Rotates every channel of the {channels, height, width} image `src` by `degrees`
// counter-clockwise about its centre ((width − 1) / 2, (height − 1) / 2) into `dst` (same
// size), reading the source by `interpolation`, with zeros outside it. Multiples of 90
// degrees are exact pixel permutations under either interpolation.
void RotateImage(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                 double degrees, Interpolation interpolation = Interpolation::kBilinear);

}  // namespace meshlearn::training
