// Writes tests/protocol/testdata/v1_<Type>.frames from SampleMessages(), and the fixtures of
// OptionalFieldSamples(). Run once per protocol version or new optional field
// (`protocol_write_fixtures <dir>`); the fixtures are then checked in and decoded forever. Existing
// fixtures must come out byte-identical (check with git diff).
#include <cstdio>

#include "protocol/codec.h"
#include "tests/protocol/sample_messages.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <testdata dir>\n", argv[0]);
    return 2;
  }
  auto write = [&](const std::string& name, const meshlearn::Message& message) {
    std::string path = std::string(argv[1]) + "/" + name;
    if (!meshlearn::testing::WriteFrames(path, meshlearn::Encode(message))) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return false;
    }
    std::printf("wrote %s\n", path.c_str());
    return true;
  };
  for (const auto& message : meshlearn::testing::SampleMessages()) {
    if (!write(meshlearn::testing::FixtureName(meshlearn::TypeOf(message.body)), message)) return 1;
  }
  for (const auto& sample : meshlearn::testing::OptionalFieldSamples()) {
    if (!write(sample.fixture, sample.message)) return 1;
  }
  return 0;
}
