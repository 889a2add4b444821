#include "training/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "training/seeded_random.h"

namespace meshlearn::training {
namespace {

constexpr NamedValue<ShiftKind> kShiftNames[] = {
    {"iid", ShiftKind::kNone},      {"covariate", ShiftKind::kCovariate},
    {"label", ShiftKind::kLabel},   {"label_swap", ShiftKind::kLabelSwap},
    {"domain", ShiftKind::kDomain}, {"synthetic", ShiftKind::kSynthetic},
};

constexpr NamedValue<PixelRange> kPixelRangeNames[] = {
    {"unit", PixelRange::kUnit},
    {"symmetric", PixelRange::kSymmetric},
};

constexpr NamedValue<Interpolation> kInterpolationNames[] = {
    {"bilinear", Interpolation::kBilinear},
    {"nearest", Interpolation::kNearest},
};

constexpr NamedValue<PoolSplit> kPoolSplitNames[] = {
    {"per-seed", PoolSplit::kPerSeed},
    {"fixed", PoolSplit::kFixed},
};

// Seed streams: one per client, plus fixed streams for pool hold-outs and synthetic thetas, and
// (PoolSplit::kFixed) for assigning the fixed pools' samples.
constexpr uint64_t kHoldoutStream = 1'000'000'000;
constexpr uint64_t kThetaStream = 2'000'000'000;
constexpr uint64_t kAssignStream = 3'000'000'000;
// The seed of PoolSplit::kFixed's one shuffle (file 004's code uses 42 too, with numpy's
// generator, so the pools are not theirs sample for sample).
constexpr uint64_t kFixedPoolSeed = 42;

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return "{" + s + "}";
}

// Number of clusters implied by the shift parameters when cluster_sizes is empty.
int ImpliedClusterCount(const PartitionConfig& c, size_t num_sources) {
  if (c.num_clusters > 0) return c.num_clusters;
  switch (c.shift) {
    case ShiftKind::kCovariate:
      return static_cast<int>(c.rotations_deg.size());
    case ShiftKind::kLabel:
      return static_cast<int>(c.label_sets.size());
    case ShiftKind::kLabelSwap:
      return static_cast<int>(c.label_swaps.size());
    case ShiftKind::kDomain:
      return static_cast<int>(num_sources);
    case ShiftKind::kSynthetic:
      return 3;
    case ShiftKind::kNone:
      return 1;
  }
  return 1;
}

// A source split into the indices usable for train/validation and those for test.
struct SplitSource {
  const DataSource* source;
  // Shuffled order of pool rows for train and validation; PoolSplit::kFixed: for train only.
  std::vector<size_t> train_rows;
  const Dataset* test_dataset;
  std::vector<size_t> test_rows;
  std::vector<size_t> validation_rows;  // PoolSplit::kFixed only: shuffled validation pool
};

SplitSource SplitPool(const DataSource& source, const PartitionConfig& config, size_t index) {
  SplitSource split{&source, {}, source.test_pool, {}, {}};
  std::vector<size_t> rows(source.pool->size());
  std::iota(rows.begin(), rows.end(), 0);
  const bool fixed = config.pool_split == PoolSplit::kFixed;
  SeededRandom rng(DeriveSeed(fixed ? kFixedPoolSeed : config.seed, kHoldoutStream + index));
  rng.Shuffle(rows);
  if (source.test_pool != nullptr) {
    split.train_rows = std::move(rows);
    split.test_rows.resize(source.test_pool->size());
    std::iota(split.test_rows.begin(), split.test_rows.end(), 0);
  } else {
    const size_t held = static_cast<size_t>(
        std::llround(config.test_holdout_fraction * static_cast<double>(rows.size())));
    split.test_dataset = source.pool;
    split.test_rows.assign(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(held));
    split.train_rows.assign(rows.begin() + static_cast<ptrdiff_t>(held), rows.end());
    std::sort(split.test_rows.begin(), split.test_rows.end());
  }
  if (fixed) {
    const double per_client =
        static_cast<double>(config.train_per_client + config.validation_per_client);
    const auto validation = static_cast<ptrdiff_t>(
        std::llround(static_cast<double>(config.validation_per_client) / per_client *
                     static_cast<double>(split.train_rows.size())));
    split.validation_rows.assign(split.train_rows.end() - validation, split.train_rows.end());
    split.train_rows.resize(split.train_rows.size() - static_cast<size_t>(validation));
    SeededRandom assign(DeriveSeed(config.seed, kAssignStream + index));
    assign.Shuffle(split.train_rows);
    assign.Shuffle(split.validation_rows);
  }
  return split;
}

// Draws `count` distinct entries of `candidates` with `rng` (partial Fisher-Yates on a copy).
std::vector<size_t> DrawDistinct(std::vector<size_t> candidates, size_t count, SeededRandom& rng) {
  for (size_t i = 0; i < count; ++i) {
    std::swap(candidates[i], candidates[i + rng.Below(candidates.size() - i)]);
  }
  candidates.resize(count);
  return candidates;
}

std::vector<size_t> Eligible(const std::vector<size_t>& rows, const Dataset& data,
                             const std::set<int64_t>* classes) {
  if (classes == nullptr) return rows;
  std::vector<size_t> out;
  for (size_t r : rows) {
    if (classes->count(data.labels[r])) out.push_back(r);
  }
  return out;
}

// One client's draw of rows from a source's pool.
struct ClientDraw {
  const Dataset& pool;
  const std::set<int64_t>* classes;  // label shift: the cluster's classes; else nullptr
  bool allow_overlap;
  SeededRandom& rng;
  std::vector<bool>& taken;  // the pool's rows already given to a client
  const std::string& who;    // "client <i> (cluster <c>)", for errors

  // `count` rows of `order` named `what` in errors: with allow_overlap, distinct eligible rows
  // drawn by rng; otherwise the next rows of the cluster's walk from `at` that are eligible and
  // not taken, which it marks taken. kInvalidArgument when there are too few.
  Result<std::vector<size_t>> Take(const std::vector<size_t>& order, size_t count, size_t& at,
                                   const char* what) const {
    if (allow_overlap) {
      std::vector<size_t> eligible = Eligible(order, pool, classes);
      if (eligible.size() < count) {
        return Status::InvalidArgument(who + " needs " + std::to_string(count) + " " + what +
                                       " samples but only " + std::to_string(eligible.size()) +
                                       " are eligible");
      }
      return DrawDistinct(std::move(eligible), count, rng);
    }
    std::vector<size_t> rows;
    while (rows.size() < count && at < order.size()) {
      const size_t r = order[at++];
      if (taken[r] || (classes != nullptr && !classes->count(pool.labels[r]))) continue;
      taken[r] = true;
      rows.push_back(r);
    }
    if (rows.size() < count) {
      return Status::InvalidArgument(who + " needs " + std::to_string(count) + " " + what +
                                     " samples but the pool has only " +
                                     std::to_string(rows.size()) +
                                     " unused eligible ones left; lower the sizes or set "
                                     "allow_overlap");
    }
    return rows;
  }
};

// Applies the pixel range, then the cluster's transformation (rotation, label swap, label
// offset) in place.
void TransformForCluster(Dataset& d, const PartitionConfig& config, int cluster,
                         int64_t label_offset, int64_t num_classes) {
  if (config.pixel_range == PixelRange::kSymmetric) {
    for (float& x : d.features) x = (x - 0.5f) / 0.5f;
  }
  if (config.shift == ShiftKind::kCovariate && config.rotations_deg[cluster] != 0.0) {
    const size_t numel = d.SampleNumel();
    std::vector<float> rotated(numel);
    for (size_t i = 0; i < d.size(); ++i) {
      float* sample = d.features.data() + i * numel;
      RotateImage(sample, rotated.data(), d.sample_shape[0], d.sample_shape[1], d.sample_shape[2],
                  config.rotations_deg[cluster], config.interpolation);
      std::copy(rotated.begin(), rotated.end(), sample);
    }
  }
  if (config.shift == ShiftKind::kLabelSwap) {
    for (int64_t& label : d.labels) {
      for (const auto& [a, b] : config.label_swaps[cluster]) {
        if (label == a) {
          label = b;
          break;
        }
        if (label == b) {
          label = a;
          break;
        }
      }
    }
  }
  for (int64_t& label : d.labels) label += label_offset;
  d.num_classes = num_classes;
}

Status CheckShiftParameters(const std::vector<DataSource>& sources, const PartitionConfig& c,
                            int clusters) {
  const size_t n = static_cast<size_t>(clusters);
  auto wrong_length = [&](const char* field, size_t got) {
    return Status::InvalidArgument(std::string(field) + " has " + std::to_string(got) +
                                   " entries but there are " + std::to_string(n) +
                                   " clusters (one entry per cluster is required)");
  };
  if (c.shift == ShiftKind::kSynthetic) {
    if (!sources.empty()) return Status::InvalidArgument("shift 'synthetic' takes no data source");
    if (c.synthetic_dim <= 0) return Status::InvalidArgument("synthetic_dim must be positive");
    if (!(c.synthetic_noise_std >= 0) || !(c.synthetic_range > 0)) {
      return Status::InvalidArgument("synthetic_noise_std must be >= 0 and synthetic_range > 0");
    }
    return Status::Ok();
  }
  const size_t want_sources = c.shift == ShiftKind::kDomain ? n : 1;
  if (sources.size() != want_sources) {
    return Status::InvalidArgument("shift '" + std::string(ShiftKindName(c.shift)) + "' needs " +
                                   std::to_string(want_sources) + " data source(s), got " +
                                   std::to_string(sources.size()));
  }
  for (const DataSource& s : sources) {
    if (s.pool == nullptr) return Status::InvalidArgument("a data source has no pool");
    MESHLEARN_RETURN_IF_ERROR(s.pool->Validate().WithContext("source pool"));
    if (s.pool->task != Task::kClassification) {
      return Status::InvalidArgument("image shifts need a classification source");
    }
    if (s.pool->sample_shape != sources[0].pool->sample_shape) {
      return Status::InvalidArgument("data sources have different sample shapes");
    }
    if (s.test_pool != nullptr) {
      MESHLEARN_RETURN_IF_ERROR(s.test_pool->Validate().WithContext("source test pool"));
      if (s.test_pool->sample_shape != s.pool->sample_shape) {
        return Status::InvalidArgument("a test pool's sample shape differs from its pool's");
      }
    }
    if (s.label_offset < 0) return Status::InvalidArgument("label_offset must be >= 0");
  }
  if (!(c.test_holdout_fraction >= 0 && c.test_holdout_fraction < 1)) {
    return Status::InvalidArgument("test_holdout_fraction must lie in [0, 1)");
  }
  const int64_t classes = sources[0].pool->num_classes;
  switch (c.shift) {
    case ShiftKind::kCovariate:
      if (c.rotations_deg.size() != n) return wrong_length("rotations_deg", c.rotations_deg.size());
      if (sources[0].pool->sample_shape.size() != 3) {
        return Status::InvalidArgument(
            "covariate shift rotates images: samples must have shape {channels, height, width}");
      }
      for (double r : c.rotations_deg) {
        if (!std::isfinite(r)) return Status::InvalidArgument("rotations_deg holds a non-finite");
      }
      break;
    case ShiftKind::kLabel:
      if (c.label_sets.size() != n) return wrong_length("label_sets", c.label_sets.size());
      for (size_t k = 0; k < n; ++k) {
        if (c.label_sets[k].empty()) {
          return Status::InvalidArgument("label_sets[" + std::to_string(k) + "] is empty");
        }
        for (int64_t label : c.label_sets[k]) {
          if (label < 0 || label >= classes) {
            return Status::InvalidArgument("label_sets[" + std::to_string(k) + "] " +
                                           Join(c.label_sets[k]) + " holds a class outside [0, " +
                                           std::to_string(classes) + ")");
          }
        }
      }
      break;
    case ShiftKind::kLabelSwap:
      if (c.label_swaps.size() != n) return wrong_length("label_swaps", c.label_swaps.size());
      for (size_t k = 0; k < n; ++k) {
        std::set<int64_t> seen;
        for (const auto& [a, b] : c.label_swaps[k]) {
          if (a < 0 || b < 0 || a >= classes || b >= classes || a == b || !seen.insert(a).second ||
              !seen.insert(b).second) {
            return Status::InvalidArgument(
                "label_swaps[" + std::to_string(k) +
                "] must hold disjoint pairs of distinct classes in [0, " + std::to_string(classes) +
                ")");
          }
        }
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

Result<std::vector<ClientShard>> BuildSynthetic(const PartitionConfig& c,
                                                const std::vector<int>& cluster_of) {
  const int clusters = *std::max_element(cluster_of.begin(), cluster_of.end()) + 1;
  const size_t dim = static_cast<size_t>(c.synthetic_dim);
  std::vector<std::vector<double>> theta(static_cast<size_t>(clusters), std::vector<double>(dim));
  SeededRandom theta_rng(DeriveSeed(c.seed, kThetaStream));
  for (auto& t : theta) {
    for (double& v : t) v = theta_rng.Uniform(-c.synthetic_range, c.synthetic_range);
  }
  std::vector<ClientShard> shards;
  for (size_t client = 0; client < cluster_of.size(); ++client) {
    SeededRandom rng(DeriveSeed(c.seed, client));
    ClientShard shard;
    shard.client_id = static_cast<int>(client);
    shard.cluster_id = cluster_of[client];
    const std::vector<double>& t = theta[static_cast<size_t>(shard.cluster_id)];
    auto make = [&](size_t count) {
      Dataset d;
      d.task = Task::kRegression;
      d.sample_shape = {static_cast<int64_t>(dim)};
      d.features.reserve(count * dim);
      for (size_t i = 0; i < count; ++i) {
        double y = 0;
        for (size_t j = 0; j < dim; ++j) {
          const double x = rng.Uniform(-c.synthetic_range, c.synthetic_range);
          d.features.push_back(static_cast<float>(x));
          y += static_cast<double>(d.features.back()) * t[j];
        }
        d.targets.push_back(static_cast<float>(y + c.synthetic_noise_std * rng.Normal()));
      }
      return d;
    };
    shard.train = make(c.train_per_client);
    shard.validation = make(c.validation_per_client);
    shard.test = make(c.test_per_client);
    shards.push_back(std::move(shard));
  }
  return shards;
}

// The number of classes over all sources, their label offsets included.
int64_t NumClasses(const std::vector<DataSource>& sources) {
  int64_t num_classes = 0;
  for (const DataSource& s : sources) {
    num_classes = std::max(num_classes, s.label_offset + s.pool->num_classes);
  }
  return num_classes;
}

}  // namespace

NameTable<ShiftKind> ShiftKindNames() { return kShiftNames; }

NameTable<PixelRange> PixelRangeNames() { return kPixelRangeNames; }

NameTable<Interpolation> InterpolationNames() { return kInterpolationNames; }

NameTable<PoolSplit> PoolSplitNames() { return kPoolSplitNames; }

Result<ShiftKind> ParseShiftKind(std::string_view name) {
  if (std::optional<ShiftKind> kind = ValueNamed(ShiftKindNames(), name)) return *kind;
  std::string allowed;
  for (const std::string& known : NamesOf(ShiftKindNames())) {
    allowed += (allowed.empty() ? "" : ", ") + known;
  }
  return Status::InvalidArgument("shift '" + std::string(name) +
                                 "' is unknown (allowed: " + allowed + ")");
}

const char* ShiftKindName(ShiftKind kind) { return NameOf(ShiftKindNames(), kind).data(); }

Result<std::vector<int>> ResolveClusterSizes(const PartitionConfig& config) {
  const int n = config.num_clients;
  if (n <= 0) return Status::InvalidArgument("num_clients must be positive");
  if (config.cluster_sizes.empty()) {
    const int k = config.num_clusters > 0 ? config.num_clusters : 1;
    std::vector<int> sizes(static_cast<size_t>(k), n / k);
    for (int i = 0; i < n % k; ++i) ++sizes[static_cast<size_t>(i)];
    return sizes;
  }
  double sum = 0;
  bool integral = true;
  for (double s : config.cluster_sizes) {
    if (!(s >= 0) || !std::isfinite(s)) {
      return Status::InvalidArgument("cluster_sizes holds a negative or non-finite value");
    }
    sum += s;
    integral = integral && s == std::floor(s);
  }
  std::vector<int> sizes;
  if (integral && sum == n) {
    for (double s : config.cluster_sizes) sizes.push_back(static_cast<int>(s));
    return sizes;
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    return Status::InvalidArgument("cluster_sizes sum to " + std::to_string(sum) +
                                   ": counts must sum to num_clients (" + std::to_string(n) +
                                   ") and fractions to 1");
  }
  // Largest remainder: floor every share, then hand the leftover clients to the largest
  // fractional parts (earlier clusters win ties).
  std::vector<std::pair<double, size_t>> remainders;
  int assigned = 0;
  for (size_t k = 0; k < config.cluster_sizes.size(); ++k) {
    const double exact = config.cluster_sizes[k] * n;
    sizes.push_back(static_cast<int>(std::floor(exact + 1e-9)));
    assigned += sizes.back();
    remainders.push_back({exact - sizes.back(), k});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; i < n - assigned; ++i) ++sizes[remainders[static_cast<size_t>(i)].second];
  return sizes;
}

namespace {

// Resolves the cluster count of `c` (in place) and checks the shift's parameters against
// `sources`; returns each client's cluster, in client order (contiguous blocks).
Result<std::vector<int>> ClusterOfClients(const std::vector<DataSource>& sources,
                                          PartitionConfig& c) {
  if (c.cluster_sizes.empty() && c.num_clusters == 0) {
    c.num_clusters = ImpliedClusterCount(c, sources.size());
  }
  Result<std::vector<int>> sizes = ResolveClusterSizes(c);
  if (!sizes.ok()) return sizes.status();
  const int clusters = static_cast<int>(sizes->size());
  MESHLEARN_RETURN_IF_ERROR(CheckShiftParameters(sources, c, clusters));
  std::vector<int> cluster_of;
  for (int k = 0; k < clusters; ++k) cluster_of.insert(cluster_of.end(), (*sizes)[k], k);
  if (cluster_of.empty()) return Status::InvalidArgument("the partition has no clients");
  return cluster_of;
}

}  // namespace

Result<std::vector<ClientShard>> BuildClientShards(const std::vector<DataSource>& sources,
                                                   const PartitionConfig& config) {
  PartitionConfig c = config;
  Result<std::vector<int>> cluster_of_or = ClusterOfClients(sources, c);
  if (!cluster_of_or.ok()) return cluster_of_or.status();
  const std::vector<int>& cluster_of = *cluster_of_or;
  const int clusters = *std::max_element(cluster_of.begin(), cluster_of.end()) + 1;
  if (c.shift == ShiftKind::kSynthetic) {
    if (c.pixel_range != PixelRange::kUnit) {
      return Status::InvalidArgument(
          "pixel_range applies to image sources; the synthetic problem has no pixels");
    }
    return BuildSynthetic(c, cluster_of);
  }

  const int64_t num_classes = NumClasses(sources);
  std::vector<SplitSource> splits;
  for (size_t i = 0; i < sources.size(); ++i) splits.push_back(SplitPool(sources[i], c, i));
  std::vector<std::vector<bool>> used;
  for (const DataSource& s : sources) used.emplace_back(s.pool->size(), false);
  // Where each cluster's walk of the train (and, PoolSplit::kFixed, validation) order stands.
  std::vector<size_t> cursor(static_cast<size_t>(clusters), 0);
  std::vector<size_t> validation_cursor(static_cast<size_t>(clusters), 0);

  const size_t per_client = c.train_per_client + c.validation_per_client;
  std::vector<ClientShard> shards;
  for (size_t client = 0; client < cluster_of.size(); ++client) {
    const int cluster = cluster_of[client];
    const size_t source_index = c.shift == ShiftKind::kDomain ? static_cast<size_t>(cluster) : 0;
    const SplitSource& split = splits[source_index];
    const Dataset& pool = *split.source->pool;
    std::set<int64_t> class_set;
    if (c.shift == ShiftKind::kLabel) {
      class_set.insert(c.label_sets[cluster].begin(), c.label_sets[cluster].end());
    }
    const std::set<int64_t>* classes = c.shift == ShiftKind::kLabel ? &class_set : nullptr;
    SeededRandom rng(DeriveSeed(c.seed, client));
    const std::string who =
        "client " + std::to_string(client) + " (cluster " + std::to_string(cluster) + ")";

    const ClientDraw draw{pool, classes, c.allow_overlap, rng, used[source_index], who};
    const auto k = static_cast<size_t>(cluster);
    const bool fixed = c.pool_split == PoolSplit::kFixed;
    Result<std::vector<size_t>> rows =
        fixed ? draw.Take(split.train_rows, c.train_per_client, cursor[k], "train")
              : draw.Take(split.train_rows, per_client, cursor[k], "train+validation");
    if (!rows.ok()) return rows.status();
    if (fixed) {
      Result<std::vector<size_t>> validation = draw.Take(
          split.validation_rows, c.validation_per_client, validation_cursor[k], "validation");
      if (!validation.ok()) return validation.status();
      rows->insert(rows->end(), validation->begin(), validation->end());
    }
    std::vector<size_t> test_eligible = Eligible(split.test_rows, *split.test_dataset, classes);
    if (test_eligible.size() < c.test_per_client) {
      return Status::InvalidArgument(who + " needs " + std::to_string(c.test_per_client) +
                                     " test samples but the test pool has only " +
                                     std::to_string(test_eligible.size()) + " eligible");
    }
    std::vector<size_t> test_rows = DrawDistinct(std::move(test_eligible), c.test_per_client, rng);

    ClientShard shard;
    shard.client_id = static_cast<int>(client);
    shard.cluster_id = cluster;
    const auto mid = rows->begin() + static_cast<ptrdiff_t>(c.train_per_client);
    shard.train = SelectRows(pool, std::vector<size_t>(rows->begin(), mid));
    shard.validation = SelectRows(pool, std::vector<size_t>(mid, rows->end()));
    shard.test = SelectRows(*split.test_dataset, test_rows);
    for (Dataset* d : {&shard.train, &shard.validation, &shard.test}) {
      TransformForCluster(*d, c, cluster, split.source->label_offset, num_classes);
    }
    shards.push_back(std::move(shard));
  }
  return shards;
}

Result<std::vector<Dataset>> BuildClusterTestSets(const std::vector<DataSource>& sources,
                                                  const PartitionConfig& config) {
  if (config.shift == ShiftKind::kSynthetic) {
    return Status::InvalidArgument(
        "the synthetic problem has no test pool: its clients' test sets are drawn per client");
  }
  PartitionConfig c = config;
  Result<std::vector<int>> cluster_of = ClusterOfClients(sources, c);
  if (!cluster_of.ok()) return cluster_of.status();
  const int clusters = cluster_of->back() + 1;
  const int64_t num_classes = NumClasses(sources);
  std::vector<Dataset> sets;
  for (int cluster = 0; cluster < clusters; ++cluster) {
    const size_t source_index = c.shift == ShiftKind::kDomain ? static_cast<size_t>(cluster) : 0;
    const SplitSource split = SplitPool(sources[source_index], c, source_index);
    std::set<int64_t> classes;
    if (c.shift == ShiftKind::kLabel) {
      classes.insert(c.label_sets[cluster].begin(), c.label_sets[cluster].end());
    }
    const std::vector<size_t> rows = Eligible(split.test_rows, *split.test_dataset,
                                              c.shift == ShiftKind::kLabel ? &classes : nullptr);
    Dataset test = SelectRows(*split.test_dataset, rows);
    TransformForCluster(test, c, cluster, split.source->label_offset, num_classes);
    sets.push_back(std::move(test));
  }
  return sets;
}

void RotateImage(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                 double degrees, Interpolation interpolation) {
  double turns = std::fmod(degrees, 360.0);
  if (turns < 0) turns += 360.0;
  double cos_t = std::cos(turns * std::numbers::pi / 180.0);
  double sin_t = std::sin(turns * std::numbers::pi / 180.0);
  // Exact values for quarter turns, so 90/180/270 degrees permute pixels without rounding.
  if (turns == 0.0) cos_t = 1, sin_t = 0;
  if (turns == 90.0) cos_t = 0, sin_t = 1;
  if (turns == 180.0) cos_t = -1, sin_t = 0;
  if (turns == 270.0) cos_t = 0, sin_t = -1;
  const double cx = (static_cast<double>(width) - 1) / 2;
  const double cy = (static_cast<double>(height) - 1) / 2;
  for (int64_t ch = 0; ch < channels; ++ch) {
    const float* in = src + ch * height * width;
    float* out = dst + ch * height * width;
    auto at = [&](int64_t x, int64_t y) -> double {
      return (x < 0 || y < 0 || x >= width || y >= height) ? 0.0 : in[y * width + x];
    };
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        // Visual counter-clockwise rotation in y-down image coordinates: the output pixel
        // samples the source at R(theta) applied to its offset from the centre.
        const double dx = static_cast<double>(x) - cx;
        const double dy = static_cast<double>(y) - cy;
        const double sx = cx + dx * cos_t - dy * sin_t;
        const double sy = cy + dx * sin_t + dy * cos_t;
        if (interpolation == Interpolation::kNearest) {
          out[y * width + x] = static_cast<float>(at(static_cast<int64_t>(std::nearbyint(sx)),
                                                     static_cast<int64_t>(std::nearbyint(sy))));
          continue;
        }
        const double fx = std::floor(sx);
        const double fy = std::floor(sy);
        const double ax = sx - fx;
        const double ay = sy - fy;
        const int64_t x0 = static_cast<int64_t>(fx);
        const int64_t y0 = static_cast<int64_t>(fy);
        double v = (1 - ax) * (1 - ay) * at(x0, y0);
        if (ax != 0) v += ax * (1 - ay) * at(x0 + 1, y0);
        if (ay != 0) v += (1 - ax) * ay * at(x0, y0 + 1);
        if (ax != 0 && ay != 0) v += ax * ay * at(x0 + 1, y0 + 1);
        out[y * width + x] = static_cast<float>(v);
      }
    }
  }
}

}  // namespace meshlearn::training
