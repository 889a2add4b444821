// Converts protocol fixtures (tests/protocol/testdata/v*_*.frames, format in sample_messages.h)
// into decode-fuzzer inputs (format in fuzz_input.h), one seed file per fixture named after it
// without the extension, and one single-frame seed `compressed_<name>` per compressed sample blob
// (CompressedSamples() in sample_messages.h):
//   protocol_fuzz_seeds <output dir> <fixture>...
// The build runs it so that the seed corpus follows the fixtures and no binary copy is checked in.
// Exits non-zero, naming the file, when a fixture is missing or short or a seed cannot be written.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "tests/protocol/fuzz/fuzz_input.h"
#include "tests/protocol/sample_messages.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <output dir> <fixture>...\n", argv[0]);
    return 2;
  }
  std::filesystem::path out_dir(argv[1]);
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    std::fprintf(stderr, "cannot create %s: %s\n", argv[1], error.message().c_str());
    return 1;
  }
  auto write = [](const std::filesystem::path& seed, const std::vector<uint8_t>& input) {
    std::ofstream out(seed, std::ios::binary);
    out.write(reinterpret_cast<const char*>(input.data()),
              static_cast<std::streamsize>(input.size()));
    if (!out) std::fprintf(stderr, "cannot write %s\n", seed.c_str());
    return static_cast<bool>(out);
  };
  for (const auto& sample : meshlearn::testing::CompressedSamples()) {
    const meshlearn::Frame frame(sample.blob);
    auto input = meshlearn::fuzz::JoinFuzzInput(std::span(&frame, 1));
    if (!input || !write(out_dir / ("compressed_" + sample.name), *input)) return 1;
  }
  for (int i = 2; i < argc; ++i) {
    std::filesystem::path fixture(argv[i]);
    std::vector<meshlearn::Frame> frames = meshlearn::testing::ReadFrames(fixture.string());
    if (frames.empty()) {
      std::fprintf(stderr, "missing or short fixture %s\n", argv[i]);
      return 1;
    }
    auto input = meshlearn::fuzz::JoinFuzzInput(frames);
    if (!input) {
      std::fprintf(stderr, "fixture %s has a frame above %zu bytes\n", argv[i],
                   meshlearn::fuzz::kMaxFuzzFrameBytes);
      return 1;
    }
    if (!write(out_dir / fixture.stem(), *input)) return 1;
  }
  return 0;
}
