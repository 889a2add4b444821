#include "sim/storage_faults.h"

#include <random>

#include "base/atomic_file.h"
#include "base/stable_hash.h"
#include "base/unit_uniform.h"
#include "node/host/node_files.h"

namespace meshlearn::sim {

void SimulatedStorage::BeginFlush(const std::string& node_id, uint64_t generation,
                                  int64_t virtual_ns, bool crash) {
  flushing_ = true;
  flush_key_ = node_id + "#" + std::to_string(generation) + "#" + std::to_string(virtual_ns);
  crash_ = crash;
  writes_ = 0;
  full_ = rates_.full > 0 && Draw("full") < rates_.full;
}

double SimulatedStorage::Draw(const std::string& what) const {
  std::mt19937_64 rng(StableHash(what + "#" + flush_key_, seed_));
  return UnitUniform(rng);
}

Status SimulatedStorage::Write(const std::string& path, std::string_view bytes) {
  if (!flushing_) return WriteFileAtomically(path, bytes);
  const int write = writes_++;
  if (full_) {
    full_ = false;  // the flush stops at its first error
    ++injected_[kDisksFull];
    return Status::IoError(path + ": cannot write: No space left on device (simulated full disk)");
  }
  if (rates_.fail > 0 && Draw("fail#" + std::to_string(write)) < rates_.fail) {
    ++injected_[kWritesFailed];
    return Status::IoError(path + ": cannot write: Input/output error (simulated failed write)");
  }
  const bool checkpoint = path.ends_with(std::string("/") + node::kCheckpointFile);
  if (checkpoint && crash_ && rates_.torn > 0 && Draw("torn") < rates_.torn) {
    std::string torn(bytes);
    std::fill(torn.begin() + static_cast<std::ptrdiff_t>(torn.size() / 2), torn.end(), '\0');
    MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(path, torn));
    ++injected_[kCheckpointsTorn];
    torn_.insert(path);
    return Status::Ok();
  }
  torn_.erase(path);
  return WriteFileAtomically(path, bytes);
}

bool SimulatedStorage::Torn(const std::string& path) const { return torn_.contains(path); }

}  // namespace meshlearn::sim
