// Kernel pinning (training/cpu_pinning.h): a launch pins LibTorch's, oneDNN's and BLIS's kernels at
// AVX2 by itself, so its files are those of a launch whose every library was capped at AVX2 by
// hand; its manifest says what it computed with; a bad switch is refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include <toml++/toml.h>

#include "tests/e2e/launcher_support.h"
#include "training/cpu_pinning.h"

namespace meshlearn::e2e {
namespace {

// Every variable pinning sets, and its switch.
const std::vector<std::string> kKernelVariables = {training::kNativeKernelsVariable,
                                                   "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA",
                                                   "DNNL_MAX_CPU_ISA", "BLIS_ARCH_TYPE"};

// Sets the kernel variables to `values` (a variable not named there is unset) for the launchers
// this object's owner starts, and puts back the test process's own values when it goes.
class KernelEnvironment {
 public:
  using Values = std::map<std::string, std::string>;
  explicit KernelEnvironment(const Values& values) {
    for (const std::string& name : kKernelVariables) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
      auto value = values.find(name);
      if (value != values.end()) {
        ::setenv(name.c_str(), value->second.c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ~KernelEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

bool CpuHasAvx2AndFma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// [launches.host] of the first launch of the run in `out`.
std::map<std::string, std::string> HostOf(const std::string& out) {
  const std::string path = out + "/manifest.toml";
  std::map<std::string, std::string> host;
  try {
    const toml::table manifest = toml::parse(ReadText(path), path);
    if (const toml::table* table = manifest.at_path("launches[0].host").as_table()) {
      for (const auto& [key, value] : *table) host[std::string(key.str())] = value.value_or("");
    }
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << path << ": " << e.description();
  }
  return host;
}

// The quickstart's cnn (oneDNN's convolutions, BLIS's matrix products), 3 rounds of cos_weights,
// simulated into `<dir>/<name>`.
void RunQuickstart(const std::string& dir, const std::string& name) {
  Finished finished = RunToEnd(
      {MESHLEARN_LAUNCH_BIN, std::string(MESHLEARN_SOURCE_DIR) + "/configs/quickstart.toml",
       "--simulate", "--methods", "cos_weights", "--set", "node.training.rounds=3", "--out",
       dir + "/" + name},
      dir + "/" + name + ".log");
  EXPECT_TRUE(ExitedWith(finished.status, 0)) << finished.log;
}

TEST(KernelPinning, ADefaultRunIsByteIdenticalWithARunWhoseLibrariesWereCappedAtAvx2ByHand) {
  if (!CpuHasAvx2AndFma()) GTEST_SKIP() << "pinning leaves a CPU without AVX2 and FMA native";
  const std::string dir = ::testing::TempDir() + "/e2e_kernel_pinning";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    KernelEnvironment nothing_set(KernelEnvironment::Values{});
    RunQuickstart(dir, "pinned");
  }
  {
    KernelEnvironment by_hand(KernelEnvironment::Values{{training::kNativeKernelsVariable, "1"},
                                                        {"ATEN_CPU_CAPABILITY", "avx2"},
                                                        {"ONEDNN_MAX_CPU_ISA", "AVX2"},
                                                        {"BLIS_ARCH_TYPE", "3"}});
    RunQuickstart(dir, "by-hand");
  }
  ExpectIdenticalMethodFiles(dir + "/pinned", dir + "/by-hand", "cos_weights", 12);

  // Each manifest says how its digits were computed.
  std::map<std::string, std::string> pinned = HostOf(dir + "/pinned");
  EXPECT_EQ(pinned["kernels"], "pinned to AVX2");
  EXPECT_EQ(pinned["aten"], "avx2");
  EXPECT_EQ(pinned["onednn"], "avx2");
  EXPECT_NE(pinned["blas"].find("BLIS_ARCH_TYPE 3"), std::string::npos) << pinned["blas"];
  std::map<std::string, std::string> by_hand = HostOf(dir + "/by-hand");
  EXPECT_EQ(by_hand["kernels"], "native (MESHLEARN_NATIVE_KERNELS=1)");
  EXPECT_EQ(by_hand["onednn"], "avx2");
}

TEST(KernelPinning, ASwitchThatIsNeitherZeroNorOneIsRefusedByName) {
  const std::string dir = ::testing::TempDir() + "/e2e_kernel_pinning_switch";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  KernelEnvironment bad(KernelEnvironment::Values{{training::kNativeKernelsVariable, "yes"}});
  Finished finished = RunToEnd({MESHLEARN_LAUNCH_BIN, "--help"}, dir + "/launch.log");
  EXPECT_TRUE(ExitedWith(finished.status, 2)) << finished.log;
  EXPECT_NE(finished.log.find("MESHLEARN_NATIVE_KERNELS='yes': must be 0"), std::string::npos)
      << finished.log;
}

}  // namespace
}  // namespace meshlearn::e2e
