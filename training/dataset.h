#pragma once
// An in-memory labelled dataset as plain float buffers (no torch), shared by the readers, the
// partitioners, the shard files and the trainer.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn::training {

// What a dataset's targets mean, and therefore which loss and metric apply.
enum class Task : uint32_t {
  kClassification = 0,  // integer labels in [0, num_classes); cross-entropy; accuracy
  kRegression = 1,      // one float target per sample; mean squared error
};

// The config names of the tasks ("classification", "regression").
NameTable<Task> TaskNames();

// Returns "classification" or "regression".
const char* TaskName(Task task);

// N samples of one shape, stored row-major: sample i occupies features[i * SampleNumel(), ...).
// Image samples use the shape {channels, height, width} with pixel values in [0, 1].
struct Dataset {
  Task task = Task::kClassification;
  std::vector<int64_t> sample_shape;  // dimensions of one sample, e.g. {1, 28, 28} or {10}
  int64_t num_classes = 0;            // classification: labels lie in [0, num_classes); else 0
  std::vector<float> features;        // size() * SampleNumel() floats
  std::vector<int64_t> labels;        // classification only: one label per sample
  std::vector<float> targets;         // regression only: one target per sample

  // Number of samples.
  size_t size() const { return task == Task::kClassification ? labels.size() : targets.size(); }
  // Floats per sample (product of sample_shape; 0 when the shape is empty or has a negative
  // dimension).
  size_t SampleNumel() const;
  // The floats of sample `i`; requires i < size().
  std::span<const float> Sample(size_t i) const;
  // OK when the buffers agree with each other: features hold size() * SampleNumel() floats, the
  // unused target vector is empty, labels lie in [0, num_classes) and every float is finite.
  // Otherwise kInvalidArgument naming the first problem.
  Status Validate() const;
  bool operator==(const Dataset& other) const = default;
};

// Returns a dataset with the same task, shape and class count holding the samples `rows` of
// `source`, in that order (repeats allowed). Requires every row < source.size().
Dataset SelectRows(const Dataset& source, std::span<const size_t> rows);

// Returns an empty dataset with the task, shape and class count of `like`.
Dataset EmptyLike(const Dataset& like);

}  // namespace meshlearn::training
