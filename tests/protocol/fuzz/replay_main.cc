// Runs LLVMFuzzerTestOneInput (decode_fuzzer.cc) once on each file named on the command line, or
// on each regular file of a named directory, without libFuzzer. Lets compilers without libFuzzer
// (g++) build the fuzz target and check its contract on the seed corpus or on a saved reproducer:
//   protocol_decode_replay <file or directory>...
// Exits 0 when every input passed (a contract violation aborts), 1 when an argument cannot be
// read or names no input at all.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "protocol_decode_replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <file or directory>...\n", argv[0]);
    return 2;
  }
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg, error)) {
        if (!entry.is_regular_file()) continue;
        if (!RunFile(entry.path())) return 1;
        ++inputs;
      }
      if (error) {
        std::fprintf(stderr, "protocol_decode_replay: cannot list %s: %s\n", argv[i],
                     error.message().c_str());
        return 1;
      }
    } else {
      if (!RunFile(arg)) return 1;
      ++inputs;
    }
  }
  if (inputs == 0) {
    std::fprintf(stderr, "protocol_decode_replay: no input files\n");
    return 1;
  }
  std::printf("protocol_decode_replay: %zu inputs decoded within the contract\n", inputs);
  return 0;
}
