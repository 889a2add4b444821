#include "training/shard_file.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "base/atomic_file.h"
#include "base/crc32.h"
#include "base/little_endian.h"

namespace meshlearn::training {
namespace {

constexpr char kMagic[8] = {'M', 'L', 'S', 'H', 'A', 'R', 'D', '1'};
constexpr uint32_t kMaxRank = 8;

// Bounds-checked little-endian reader over the shard bytes.
class ByteReader {
 public:
  ByteReader(std::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  template <typename T>
  Status Get(T& value, const char* field) {
    if (bytes_.size() - at_ < sizeof(T)) return Truncated(field);
    value = LoadLittleEndian<T>(Here());
    at_ += sizeof(T);
    return Status::Ok();
  }
  template <typename T>
  Status GetArray(std::vector<T>& values, uint64_t count, const char* field) {
    if ((bytes_.size() - at_) / sizeof(T) < count) return Truncated(field);
    values.resize(count);
    LoadLittleEndian(Here(), std::span<T>(values));
    at_ += count * sizeof(T);
    return Status::Ok();
  }
  size_t remaining() const { return bytes_.size() - at_; }

 private:
  const uint8_t* Here() const { return reinterpret_cast<const uint8_t*>(bytes_.data() + at_); }
  Status Truncated(const char* field) const {
    return Status::Malformed(name_ + ": shard file truncated while reading " + field);
  }
  std::string_view bytes_;
  const std::string& name_;
  size_t at_ = 0;
};

Status ReadSplit(ByteReader& in, Dataset& d, size_t numel, const std::string& name,
                 const char* split) {
  const std::string where = name + ": " + split + " split";
  uint64_t count = 0;
  MESHLEARN_RETURN_IF_ERROR(in.Get(count, "a sample count"));
  if (count > in.remaining() / (numel * sizeof(float) + sizeof(float))) {
    return Status::Malformed(where + " claims " + std::to_string(count) +
                             " samples, more than the file holds");
  }
  MESHLEARN_RETURN_IF_ERROR(in.GetArray(d.features, count * numel, "features"));
  if (d.task == Task::kClassification) {
    MESHLEARN_RETURN_IF_ERROR(in.GetArray(d.labels, count, "labels"));
  } else {
    MESHLEARN_RETURN_IF_ERROR(in.GetArray(d.targets, count, "targets"));
  }
  Status valid = d.Validate();
  if (!valid.ok()) return Status::Malformed(where + ": " + valid.message());
  return Status::Ok();
}

}  // namespace

std::string ShardPath(const std::string& dir, int client_id) {
  return ShardPath(dir, std::to_string(client_id));
}

std::string ShardPath(const std::string& dir, std::string_view client) {
  return dir + "/client-" + std::string(client) + ".shard";
}

std::string EncodeShard(const ClientShard& shard) {
  const Dataset& first = shard.train;
  std::string out(kMagic, sizeof(kMagic));
  AppendLittleEndian(out, kShardFormatVersion);
  AppendLittleEndian(out, static_cast<uint32_t>(first.task));
  AppendLittleEndian(out, static_cast<int32_t>(shard.client_id));
  AppendLittleEndian(out, static_cast<int32_t>(shard.cluster_id));
  AppendLittleEndian(out, first.num_classes);
  AppendLittleEndian(out, static_cast<uint32_t>(first.sample_shape.size()));
  AppendLittleEndian(out, first.sample_shape);
  for (const Dataset* d : {&shard.train, &shard.validation, &shard.test}) {
    AppendLittleEndian(out, static_cast<uint64_t>(d->size()));
    AppendLittleEndian(out, d->features);
    if (d->task == Task::kClassification) {
      AppendLittleEndian(out, d->labels);
    } else {
      AppendLittleEndian(out, d->targets);
    }
  }
  AppendLittleEndian(out, Crc32(out));
  return out;
}

Result<ClientShard> DecodeShard(std::string_view bytes, const std::string& name) {
  if (bytes.size() < sizeof(kMagic) + 4 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return Status::Malformed(name + ": not a meshlearn shard file (magic \"MLSHARD1\" missing)");
  }
  const uint32_t stored_crc =
      LoadLittleEndian<uint32_t>(reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size() - 4);
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  ByteReader in(body.substr(sizeof(kMagic)), name);
  uint32_t version = 0;
  MESHLEARN_RETURN_IF_ERROR(in.Get(version, "the version"));
  if (version != kShardFormatVersion) {
    return Status::UnsupportedVersion(name + ": shard format version " + std::to_string(version) +
                                      " is not supported (this build reads version 1)");
  }
  if (Crc32(body) != stored_crc) {
    return Status::Malformed(name + ": shard file is corrupt (checksum mismatch)");
  }
  uint32_t task = 0;
  int32_t client_id = 0, cluster_id = 0;
  int64_t num_classes = 0;
  uint32_t rank = 0;
  MESHLEARN_RETURN_IF_ERROR(in.Get(task, "the task"));
  MESHLEARN_RETURN_IF_ERROR(in.Get(client_id, "the client id"));
  MESHLEARN_RETURN_IF_ERROR(in.Get(cluster_id, "the cluster id"));
  MESHLEARN_RETURN_IF_ERROR(in.Get(num_classes, "the class count"));
  MESHLEARN_RETURN_IF_ERROR(in.Get(rank, "the sample rank"));
  if (task > 1) return Status::Malformed(name + ": task " + std::to_string(task) + " is unknown");
  if (rank == 0 || rank > kMaxRank) {
    return Status::Malformed(name + ": sample rank " + std::to_string(rank) + " is outside 1..8");
  }
  Dataset prototype;
  prototype.task = static_cast<Task>(task);
  prototype.num_classes = num_classes;
  MESHLEARN_RETURN_IF_ERROR(in.GetArray(prototype.sample_shape, rank, "the sample shape"));
  uint64_t numel = 1;
  for (int64_t d : prototype.sample_shape) {
    if (d < 1 || d > (int64_t{1} << 24) || (numel *= static_cast<uint64_t>(d)) > (1u << 30)) {
      return Status::Malformed(name + ": sample shape has an impossible dimension");
    }
  }
  ClientShard shard;
  shard.client_id = client_id;
  shard.cluster_id = cluster_id;
  shard.train = shard.validation = shard.test = prototype;
  MESHLEARN_RETURN_IF_ERROR(ReadSplit(in, shard.train, numel, name, "train"));
  MESHLEARN_RETURN_IF_ERROR(ReadSplit(in, shard.validation, numel, name, "validation"));
  MESHLEARN_RETURN_IF_ERROR(ReadSplit(in, shard.test, numel, name, "test"));
  if (in.remaining() != 0) {
    return Status::Malformed(name + ": " + std::to_string(in.remaining()) +
                             " unexpected bytes after the test split");
  }
  return shard;
}

Status WriteShard(const std::string& path, const ClientShard& shard) {
  return WriteFileAtomically(path, EncodeShard(shard));
}

Result<ClientShard> ReadShard(const std::string& path) {
  Result<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodeShard(*bytes, path);
}

}  // namespace meshlearn::training
