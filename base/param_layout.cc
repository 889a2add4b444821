#include "base/param_layout.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace meshlearn {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
  return out.str();
}

// The product of `shape` (non-negative dimensions) without wrap-around; nullopt above 2^64 - 1.
std::optional<uint64_t> ExactNumel(const std::vector<int64_t>& shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t n = 1;
  for (int64_t d : shape) {
    uint64_t dim = static_cast<uint64_t>(d);
    if (n > std::numeric_limits<uint64_t>::max() / dim) return std::nullopt;
    n *= dim;
  }
  return n;
}

}  // namespace

uint64_t TensorSpec::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return 0;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t ParamLayout::total_floats() const {
  if (tensors.empty()) return 0;
  return tensors.back().offset + tensors.back().numel();
}

Status ParamLayout::Validate() const {
  uint64_t next = 0;
  std::set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    if (t.name.empty()) {
      return Status::LayoutMismatch("tensor #" + std::to_string(i) + " has an empty name");
    }
    if (!names.insert(t.name).second) {
      return Status::LayoutMismatch("tensor name '" + t.name + "' appears twice");
    }
    for (int64_t d : t.shape) {
      if (d < 0) {
        return Status::LayoutMismatch("tensor '" + t.name + "' has negative dimension in shape " +
                                      ShapeString(t.shape));
      }
    }
    if (t.offset != next) {
      return Status::LayoutMismatch("tensor '" + t.name + "' starts at offset " +
                                    std::to_string(t.offset) + ", expected " +
                                    std::to_string(next) + " (tensors must be back to back)");
    }
    // Rationale: numel() and the running offset wrap around modulo 2^64, so a peer could describe
    // 2^80 floats that "fit" an empty blob. Count exactly and refuse what does not fit.
    std::optional<uint64_t> numel = ExactNumel(t.shape);
    if (!numel || *numel > std::numeric_limits<uint64_t>::max() - next) {
      return Status::LayoutMismatch("tensor '" + t.name + "' with shape " + ShapeString(t.shape) +
                                    " at offset " + std::to_string(t.offset) +
                                    " ends beyond 2^64 - 1 floats");
    }
    next += *numel;
  }
  return Status::Ok();
}

Status ParamLayout::Matches(const ParamLayout& expected) const {
  if (tensors.size() != expected.tensors.size()) {
    return Status::LayoutMismatch("layout has " + std::to_string(tensors.size()) +
                                  " tensors, the local model has " +
                                  std::to_string(expected.tensors.size()));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& got = tensors[i];
    const TensorSpec& want = expected.tensors[i];
    if (got.name != want.name) {
      return Status::LayoutMismatch("tensor #" + std::to_string(i) + " is '" + got.name +
                                    "', the local model has '" + want.name + "'");
    }
    if (got.shape != want.shape) {
      return Status::LayoutMismatch("tensor '" + got.name + "' has shape " +
                                    ShapeString(got.shape) + ", the local model has " +
                                    ShapeString(want.shape));
    }
    if (got.offset != want.offset) {
      return Status::LayoutMismatch("tensor '" + got.name + "' is at offset " +
                                    std::to_string(got.offset) + ", the local model has " +
                                    std::to_string(want.offset));
    }
  }
  return Status::Ok();
}

ParamLayout MakeContiguousLayout(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  ParamLayout layout;
  uint64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    TensorSpec spec{name, shape, offset};
    offset += spec.numel();
    layout.tensors.push_back(std::move(spec));
  }
  return layout;
}

}  // namespace meshlearn
