// Pins ATen's, oneDNN's and BLIS's kernels at AVX2 through their environment variables, and
// reports what each library chose (cpu_pinning.h).

#include "training/cpu_pinning.h"

#include <ATen/Version.h>
#include <dlfcn.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace meshlearn::training {
namespace {

// (variable, value) of the pin, in the order the header lists them.
constexpr std::array<std::pair<const char*, const char*>, 4> kPinnedVariables{{
    {"ATEN_CPU_CAPABILITY", "avx2"},
    {"ONEDNN_MAX_CPU_ISA", "AVX2"},
    {"DNNL_MAX_CPU_ISA", "AVX2"},
    // BLIS 0.9 reads a number, its arch_t: 0 skx, 3 haswell, 6-8 zen3-zen. A name reads as 0.
    {"BLIS_ARCH_TYPE", "3"},
}};

// Why this process runs native kernels; empty when pinned.
std::string& NativeReason() {
  static std::string reason = "not pinned yet (PinCpuKernels was not called)";
  return reason;
}

// The AVX2 kernels every library would be pinned to need AVX2 and FMA (BLIS's haswell kernels
// use FMA); a CPU without them would fault on them.
bool CpuRunsAvx2Kernels() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

std::string WidestVectorExtension() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return "avx512f";
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return "none";
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("model name")) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown";
}

// ATen's dispatch capability, from the line "CPU capability usage: AVX2" of its build report (the
// one place LibTorch 1.13 exports it).
std::string AtenCapability() {
  constexpr std::string_view kLabel = "CPU capability usage: ";
  const std::string config = at::show_config();
  const size_t at = config.find(kLabel);
  if (at == std::string::npos) return "unknown";
  const size_t begin = at + kLabel.size();
  std::string capability = config.substr(begin, config.find('\n', begin) - begin);
  for (char& c : capability) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return capability;
}

// oneDNN's effective ISA, looked up at run time: LibTorch loads libdnnl, meshlearn does not link
// it. The numbers are oneDNN 2.x's dnnl_cpu_isa_t.
std::string OnednnIsa() {
  using EffectiveIsa = int (*)();
  auto effective =
      reinterpret_cast<EffectiveIsa>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  if (effective == nullptr) return "absent";
  const int isa = effective();
  constexpr std::array<std::pair<int, const char*>, 11> kNames{{{0x0, "all"},
                                                                {0x1, "sse41"},
                                                                {0x3, "avx"},
                                                                {0x7, "avx2"},
                                                                {0xf, "avx512_mic"},
                                                                {0x1f, "avx512_mic_4ops"},
                                                                {0x27, "avx512_core"},
                                                                {0x67, "avx512_core_vnni"},
                                                                {0xe7, "avx512_core_bf16"},
                                                                {0x3e7, "avx512_core_amx"},
                                                                {0x407, "avx2_vnni"}}};
  for (const auto& [value, name] : kNames) {
    if (value == isa) return name;
  }
  return "isa " + std::to_string(isa);
}

// The file of the BLAS whose sgemm_ LibTorch calls (symbolic links resolved), and the arch BLIS
// was told.
std::string BlasFile() {
  Dl_info info{};
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  std::string file = "absent";
  if (sgemm != nullptr && dladdr(sgemm, &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    std::filesystem::path resolved = std::filesystem::canonical(info.dli_fname, error);
    file = error ? info.dli_fname : resolved.string();
  }
  const char* arch = std::getenv("BLIS_ARCH_TYPE");
  return file + ", BLIS_ARCH_TYPE " + (arch != nullptr ? arch : "unset");
}

}  // namespace

Result<bool> PinCpuKernels() {
  const char* native = std::getenv(kNativeKernelsVariable);
  const std::string_view choice = native != nullptr ? native : "";
  if (choice == "1") {
    NativeReason() = "native (MESHLEARN_NATIVE_KERNELS=1)";
    return false;
  }
  if (!choice.empty() && choice != "0") {
    return Status::InvalidArgument(std::string(kNativeKernelsVariable) + "='" + native +
                                   "': must be 0 (kernels pinned to AVX2, the default) or 1 "
                                   "(each library's own choice)");
  }
  if (!CpuRunsAvx2Kernels()) {
    NativeReason() = "native (no AVX2 and FMA)";
    return false;
  }
  for (const auto& [variable, value] : kPinnedVariables) ::setenv(variable, value, 1);
  NativeReason().clear();
  return true;
}

bool PinCpuKernelsOrExplain(const char* program) {
  Result<bool> pinned = PinCpuKernels();
  if (!pinned.ok()) std::fprintf(stderr, "%s: %s\n", program, pinned.status().ToString().c_str());
  return pinned.ok();
}

std::vector<std::pair<std::string, std::string>> CpuKernelFacts() {
  const std::string& reason = NativeReason();
  return {
      {"kernels", reason.empty() ? "pinned to AVX2" : reason},
      {"cpu", CpuModelName() + " (" + WidestVectorExtension() + ")"},
      {"aten", AtenCapability()},
      {"onednn", OnednnIsa()},
      {"blas", BlasFile()},
  };
}

std::string CpuKernelSummary() {
  std::string line;
  for (const auto& [key, value] : CpuKernelFacts()) {
    line += (line.empty() ? "" : "; ") + key + " " + value;
  }
  return line;
}

}  // namespace meshlearn::training
