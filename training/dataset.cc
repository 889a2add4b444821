#include "training/dataset.h"

#include <algorithm>
#include <cmath>

namespace meshlearn::training {

namespace {

constexpr NamedValue<Task> kTaskNames[] = {{"classification", Task::kClassification},
                                           {"regression", Task::kRegression}};

}  // namespace

NameTable<Task> TaskNames() { return kTaskNames; }

const char* TaskName(Task task) { return NameOf(TaskNames(), task).data(); }

size_t Dataset::SampleNumel() const {
  if (sample_shape.empty()) return 0;
  size_t n = 1;
  for (int64_t d : sample_shape) {
    if (d < 0) return 0;
    n *= static_cast<size_t>(d);
  }
  return n;
}

std::span<const float> Dataset::Sample(size_t i) const {
  const size_t n = SampleNumel();
  return std::span<const float>(features).subspan(i * n, n);
}

Status Dataset::Validate() const {
  const size_t numel = SampleNumel();
  if (numel == 0)
    return Status::InvalidArgument(
        "dataset sample shape is empty or has a zero/negative dimension");
  if (features.size() != size() * numel) {
    return Status::InvalidArgument("dataset holds " + std::to_string(features.size()) +
                                   " feature floats, expected " + std::to_string(size()) +
                                   " samples x " + std::to_string(numel));
  }
  if (task == Task::kClassification) {
    if (!targets.empty())
      return Status::InvalidArgument("classification dataset has regression targets");
    if (num_classes <= 0) return Status::InvalidArgument("classification dataset has no classes");
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] < 0 || labels[i] >= num_classes) {
        return Status::InvalidArgument("label " + std::to_string(labels[i]) + " of sample " +
                                       std::to_string(i) + " is outside [0, " +
                                       std::to_string(num_classes) + ")");
      }
    }
  } else {
    if (!labels.empty()) return Status::InvalidArgument("regression dataset has class labels");
    for (size_t i = 0; i < targets.size(); ++i) {
      if (!std::isfinite(targets[i])) {
        return Status::InvalidArgument("target of sample " + std::to_string(i) + " is not finite");
      }
    }
  }
  for (size_t i = 0; i < features.size(); ++i) {
    if (!std::isfinite(features[i])) {
      return Status::InvalidArgument("feature " + std::to_string(i % numel) + " of sample " +
                                     std::to_string(i / numel) + " is not finite");
    }
  }
  return Status::Ok();
}

Dataset EmptyLike(const Dataset& like) {
  Dataset out;
  out.task = like.task;
  out.sample_shape = like.sample_shape;
  out.num_classes = like.num_classes;
  return out;
}

Dataset SelectRows(const Dataset& source, std::span<const size_t> rows) {
  Dataset out = EmptyLike(source);
  const size_t numel = source.SampleNumel();
  out.features.resize(rows.size() * numel);
  float* dst = out.features.data();
  for (size_t row : rows) {
    std::span<const float> sample = source.Sample(row);
    std::copy(sample.begin(), sample.end(), dst);
    dst += numel;
  }
  if (source.task == Task::kClassification) {
    out.labels.reserve(rows.size());
    for (size_t row : rows) out.labels.push_back(source.labels[row]);
  } else {
    out.targets.reserve(rows.size());
    for (size_t row : rows) out.targets.push_back(source.targets[row]);
  }
  return out;
}

}  // namespace meshlearn::training
