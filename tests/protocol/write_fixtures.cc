// Writes tests/protocol/testdata/v<version>_<Type>.frames from SampleMessages(version), and the
// fixtures of OptionalFieldSamples(version), for every version of FixtureVersions(). Run once per
// protocol version or new optional field (`protocol_write_fixtures <dir>`); the fixtures are then
// checked in and decoded forever. Existing fixtures must come out byte-identical (check with git
// diff).
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
  for (uint16_t version : meshlearn::testing::FixtureVersions()) {
    for (const auto& message : meshlearn::testing::SampleMessages(version)) {
      std::string name = meshlearn::testing::FixtureName(meshlearn::TypeOf(message.body), version);
      if (!write(name, message)) return 1;
    }
    for (const auto& sample : meshlearn::testing::OptionalFieldSamples(version)) {
      if (!write(sample.fixture, sample.message)) return 1;
    }
  }
  return 0;
}
