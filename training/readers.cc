#include "training/readers.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "base/number_text.h"

namespace meshlearn::training {
namespace {

constexpr uint64_t kMaxDecompressedBytes = uint64_t{2} << 30;

// Parses one float from the whole of `text` (blanks around it and a leading '+' allowed;
// base/number_text.h).
bool ParseFloat(std::string_view text, float& out) {
  const std::optional<float> value =
      NumberFromText<float>(text, {.non_finite = true, .padded = true});
  if (value) out = *value;
  return value.has_value();
}

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + at;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// A parsed IDX file: its dimensions and a pointer to its element bytes.
struct IdxContents {
  std::string bytes;
  uint8_t element_type = 0;
  std::vector<uint32_t> dims;
  size_t data_offset = 0;
};

// IDX element types (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT").
constexpr uint8_t kIdxUnsignedByte = 0x08;
constexpr uint8_t kIdxFloat32 = 0x0D;

Result<IdxContents> ReadIdxFile(const std::string& path, size_t expected_dims) {
  Result<std::string> bytes = ReadFileMaybeGzip(path);
  if (!bytes.ok()) return bytes.status();
  IdxContents idx;
  idx.bytes = std::move(bytes).value();
  const std::string& b = idx.bytes;
  if (b.size() < 4 || b[0] != 0 || b[1] != 0) {
    return Status::Malformed(path + ": not an IDX file (the first two bytes must be zero)");
  }
  idx.element_type = static_cast<uint8_t>(b[2]);
  if (idx.element_type != kIdxUnsignedByte && idx.element_type != kIdxFloat32) {
    return Status::Malformed(path + ": IDX element type 0x" + std::to_string(idx.element_type) +
                             " is not supported (allowed: 0x08 unsigned byte, 0x0D float32)");
  }
  const size_t ndims = static_cast<uint8_t>(b[3]);
  if (ndims != expected_dims) {
    return Status::Malformed(path + ": IDX file has " + std::to_string(ndims) +
                             " dimensions, expected " + std::to_string(expected_dims));
  }
  if (b.size() < 4 + 4 * ndims) {
    return Status::Malformed(path + ": IDX header is truncated");
  }
  uint64_t elements = 1;
  for (size_t d = 0; d < ndims; ++d) {
    idx.dims.push_back(BigEndian32(b, 4 + 4 * d));
    elements *= idx.dims.back();
    if (elements > kMaxDecompressedBytes) {
      return Status::TooLarge(path + ": IDX dimensions describe more than 2 GiB");
    }
  }
  idx.data_offset = 4 + 4 * ndims;
  const uint64_t element_bytes = idx.element_type == kIdxFloat32 ? 4 : 1;
  const uint64_t expected = idx.data_offset + elements * element_bytes;
  if (b.size() != expected) {
    return Status::Malformed(path + ": IDX header promises " + std::to_string(expected) +
                             " bytes but the file holds " + std::to_string(b.size()) +
                             (b.size() < expected ? " (truncated)" : " (trailing bytes)"));
  }
  return idx;
}

}  // namespace

Result<std::string> ReadFileMaybeGzip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": no such file");
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  std::string out;
  std::vector<char> chunk(1 << 20);
  while (true) {
    const int n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int errnum = 0;
      std::string why = gzerror(file, &errnum);
      gzclose(file);
      return Status::Malformed(path + ": corrupt or truncated gzip data (" + why + ")");
    }
    if (n == 0) break;
    out.append(chunk.data(), static_cast<size_t>(n));
    if (out.size() > kMaxDecompressedBytes) {
      gzclose(file);
      return Status::TooLarge(path + ": more than 2 GiB after decompression");
    }
  }
  int errnum = 0;
  const char* why = gzerror(file, &errnum);
  std::string reason = why != nullptr ? why : "";
  const int close_result = gzclose(file);
  if (errnum != Z_OK && errnum != Z_STREAM_END) {
    return Status::Malformed(path + ": corrupt or truncated gzip data (" + reason + ")");
  }
  if (close_result == Z_BUF_ERROR) {
    return Status::Malformed(path + ": truncated gzip data (the stream ends early)");
  }
  if (close_result != Z_OK) return Status::Malformed(path + ": gzip stream error on close");
  return out;
}

Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path,
                        int64_t num_classes) {
  Result<IdxContents> images = ReadIdxFile(images_path, 3);
  if (!images.ok()) return images.status();
  Result<IdxContents> labels = ReadIdxFile(labels_path, 1);
  if (!labels.ok()) return labels.status();
  if (labels->element_type != kIdxUnsignedByte) {
    return Status::Malformed(labels_path + ": IDX labels must be unsigned bytes (type 0x08)");
  }
  const uint32_t n = images->dims[0];
  if (labels->dims[0] != n) {
    return Status::Malformed(labels_path + ": holds " + std::to_string(labels->dims[0]) +
                             " labels but " + images_path + " holds " + std::to_string(n) +
                             " images");
  }
  Dataset out;
  out.task = Task::kClassification;
  out.sample_shape = {1, images->dims[1], images->dims[2]};
  const size_t count = size_t{n} * images->dims[1] * images->dims[2];
  out.features.resize(count);
  const char* src = images->bytes.data() + images->data_offset;
  if (images->element_type == kIdxUnsignedByte) {
    for (size_t i = 0; i < count; ++i) {
      out.features[i] = static_cast<float>(static_cast<uint8_t>(src[i])) / 255.0f;
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits = BigEndian32(images->bytes, images->data_offset + 4 * i);
      std::memcpy(&out.features[i], &bits, 4);
      if (!std::isfinite(out.features[i])) {
        return Status::Malformed(images_path + ": pixel " + std::to_string(i) + " is not finite");
      }
    }
  }
  out.labels.resize(n);
  int64_t max_label = -1;
  for (uint32_t i = 0; i < n; ++i) {
    out.labels[i] = static_cast<uint8_t>(labels->bytes[labels->data_offset + i]);
    max_label = std::max(max_label, out.labels[i]);
  }
  if (num_classes > 0 && max_label >= num_classes) {
    return Status::Malformed(labels_path + ": label " + std::to_string(max_label) +
                             " is not below the " + std::to_string(num_classes) + " classes");
  }
  out.num_classes = num_classes > 0 ? num_classes : max_label + 1;
  return out;
}

Result<Dataset> ReadFashionMnist(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "t10k") {
    return Status::InvalidArgument("Fashion-MNIST split '" + split +
                                   "' is unknown (allowed: train, t10k)");
  }
  return ReadIdx(dir + "/" + split + "-images-idx3-ubyte.gz",
                 dir + "/" + split + "-labels-idx1-ubyte.gz", 10);
}

namespace {

// Parses {"data": [v, ...]} from `text` into `out`; returns an error naming `path`.
Status ParseDigitJson(const std::string& path, const std::string& text, std::vector<float>& out) {
  size_t pos = text.find("\"data\"");
  if (pos == std::string::npos) {
    return Status::Malformed(path + ": no \"data\" key (expected {\"data\": [numbers]})");
  }
  pos = text.find_first_not_of(" \t\r\n", pos + 6);
  if (pos == std::string::npos || text[pos] != ':') {
    return Status::Malformed(path + ": expected ':' after \"data\"");
  }
  pos = text.find_first_not_of(" \t\r\n", pos + 1);
  if (pos == std::string::npos || text[pos] != '[') {
    return Status::Malformed(path + ": \"data\" is not an array");
  }
  ++pos;
  while (true) {
    pos = text.find_first_not_of(" \t\r\n", pos);
    if (pos == std::string::npos) {
      return Status::Malformed(path + ": the data array is not closed (file truncated?)");
    }
    if (text[pos] == ']' && out.empty()) break;
    const size_t end = text.find_first_of(",]", pos);
    if (end == std::string::npos) {
      return Status::Malformed(path + ": the data array is not closed (file truncated?)");
    }
    float value = 0;
    if (!ParseFloat(std::string_view(text).substr(pos, end - pos), value) ||
        !(value >= 0.0f && value <= 1.0f)) {
      return Status::Malformed(path + ": value at byte " + std::to_string(pos) +
                               " is not a number in [0, 1]");
    }
    out.push_back(value);
    pos = end + 1;
    if (text[end] == ']') break;
  }
  pos = text.find_first_not_of(" \t\r\n", pos);
  if (pos == std::string::npos || text[pos] != '}') {
    return Status::Malformed(path + ": expected '}' after the data array (file truncated?)");
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> ReadMnistDigitsJson(const std::string& dir) {
  constexpr size_t kPixels = 28 * 28;
  Dataset out;
  out.task = Task::kClassification;
  out.sample_shape = {1, 28, 28};
  out.num_classes = 10;
  for (int digit = 0; digit < 10; ++digit) {
    const std::string path = dir + "/" + std::to_string(digit) + ".json";
    Result<std::string> text = ReadFileMaybeGzip(path);
    if (!text.ok()) return text.status();
    std::vector<float> values;
    MESHLEARN_RETURN_IF_ERROR(ParseDigitJson(path, *text, values));
    if (values.empty() || values.size() % kPixels != 0) {
      return Status::Malformed(path + ": holds " + std::to_string(values.size()) +
                               " values, not a positive multiple of 784 (28x28 images)");
    }
    out.features.insert(out.features.end(), values.begin(), values.end());
    out.labels.insert(out.labels.end(), values.size() / kPixels, digit);
  }
  return out;
}

namespace {

std::vector<std::string_view> SplitCells(std::string_view line, char delimiter) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(delimiter, start);
    cells.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return cells;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options) {
  if (options.label_column.empty()) {
    return Status::InvalidArgument(path + ": no label column configured");
  }
  Result<std::string> text = ReadFileMaybeGzip(path);
  if (!text.ok()) return text.status();
  std::vector<std::string_view> lines;
  for (std::string_view rest = *text; !rest.empty();) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!Trimmed(line).empty()) lines.push_back(line);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  size_t first_data_line = 0;
  std::vector<std::string_view> header;
  if (options.has_header) {
    if (lines.empty()) return Status::Malformed(path + ": empty file (expected a header row)");
    header = SplitCells(lines[0], options.delimiter);
    first_data_line = 1;
  }
  if (lines.size() <= first_data_line) return Status::Malformed(path + ": no data rows");
  const size_t columns = SplitCells(lines[first_data_line], options.delimiter).size();
  if (options.has_header && header.size() != columns) {
    return Status::Malformed(path + ": header has " + std::to_string(header.size()) +
                             " cells but line 2 has " + std::to_string(columns));
  }
  size_t label_index = columns;
  for (size_t c = 0; c < header.size(); ++c) {
    if (Trimmed(header[c]) == options.label_column) label_index = c;
  }
  if (label_index == columns) {
    const std::string& s = options.label_column;
    const std::optional<size_t> index = NumberFromText<size_t>(s);
    if (!index || *index >= columns) {
      return Status::InvalidArgument(path + ": label column '" + s +
                                     "' is neither a header name nor a column index below " +
                                     std::to_string(columns));
    }
    label_index = *index;
  }
  if (columns < 2) return Status::Malformed(path + ": needs at least one feature column");

  Dataset out;
  out.task = options.task;
  out.sample_shape = {static_cast<int64_t>(columns - 1)};
  int64_t max_label = -1;
  for (size_t l = first_data_line; l < lines.size(); ++l) {
    const std::vector<std::string_view> cells = SplitCells(lines[l], options.delimiter);
    const std::string where = path + ": line " + std::to_string(l + 1);
    if (cells.size() != columns) {
      return Status::Malformed(where + " has " + std::to_string(cells.size()) +
                               " cells, expected " + std::to_string(columns));
    }
    for (size_t c = 0; c < columns; ++c) {
      float value = 0;
      if (!ParseFloat(Trimmed(cells[c]), value) || !std::isfinite(value)) {
        return Status::Malformed(where + ", column " + std::to_string(c + 1) + ": '" +
                                 std::string(cells[c]) + "' is not a finite number");
      }
      if (c != label_index) {
        out.features.push_back(value);
      } else if (options.task == Task::kRegression) {
        out.targets.push_back(value);
      } else {
        if (value < 0 || value != std::floor(value) || value > 1e9f) {
          return Status::Malformed(where + ": class label '" + std::string(cells[c]) +
                                   "' is not an integer >= 0");
        }
        out.labels.push_back(static_cast<int64_t>(value));
        max_label = std::max(max_label, out.labels.back());
      }
    }
  }
  if (options.task == Task::kClassification) {
    if (options.num_classes > 0 && max_label >= options.num_classes) {
      return Status::Malformed(path + ": class label " + std::to_string(max_label) +
                               " is not below the configured " +
                               std::to_string(options.num_classes) + " classes");
    }
    out.num_classes = options.num_classes > 0 ? options.num_classes : max_label + 1;
  }
  return out;
}

}  // namespace meshlearn::training
