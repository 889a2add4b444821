#pragma once
// Which CPU kernels the libraries that train run, pinned so that a seed gives the same digits on
// every x86-64 machine with AVX2 (docs/experiments.md "The same digits on any machine").
//
// LibTorch (ATen), oneDNN and BLIS each pick their kernels by the CPU they find, and kernels of
// different widths or blockings sum in different orders: the quickstart at seed 1 gave other
// digits on an AVX2-only AMD EPYC than on an AVX-512 Xeon, each deterministic on its own machine.
// Pinning caps all of them at what every AVX2 machine runs:
//   ATen     ATEN_CPU_CAPABILITY=avx2 (LibTorch 1.13 already keeps AVX-512 opt-in; this keeps a
//            caller's avx512 out too);
//   oneDNN   ONEDNN_MAX_CPU_ISA=AVX2 and DNNL_MAX_CPU_ISA=AVX2 (the cnn's convolutions);
//   BLIS     BLIS_ARCH_TYPE=3, BLIS 0.9's number of its `haswell` configuration (the linear
//            layers' matrix products; otherwise `skx` or `zen*` by CPU).
// The project's own dispatched kernels (target_clones, similarity/dot_products.cc) have only an
// AVX2 and a portable version, so they need no cap.
//
// Each library reads its variable at its first use, not when it is loaded (observed with
// LibTorch 1.13.1, oneDNN 2.6.3 and BLIS 0.9.0 of Debian 12), so setting them first thing in
// main() is enough; child processes inherit them.
//
// Rationale for a default rather than an option: the digits of a results folder should not
// depend on which machine computed them. MESHLEARN_NATIVE_KERNELS=1 keeps each library's own
// choice (faster on an AVX-512 machine) and leaves these variables as the caller set them.

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace meshlearn::training {

// The environment variable that turns pinning off: "1" native kernels, "0" or unset pinned.
inline constexpr char kNativeKernelsVariable[] = "MESHLEARN_NATIVE_KERNELS";

// Pins the kernels as the header says, by setting the variables (overwriting the caller's),
// unless MESHLEARN_NATIVE_KERNELS=1 or the CPU lacks AVX2 or FMA (or is not x86-64), where an
// AVX2 pin would fault. Call it first in main(), before anything computes with torch or a BLAS.
// Returns whether it pinned; kInvalidArgument when MESHLEARN_NATIVE_KERNELS is neither "0" nor
// "1" (nothing set then).
Result<bool> PinCpuKernels();

// PinCpuKernels() for a program's main(): false, after printing "<program>: <error>" to stderr,
// when MESHLEARN_NATIVE_KERNELS is bad (the program then exits 2); true otherwise.
bool PinCpuKernelsOrExplain(const char* program);

// What this process computes with, as (key, value) pairs for a log or a manifest:
//   kernels  "pinned to AVX2", or "native (MESHLEARN_NATIVE_KERNELS=1)", or "native (no AVX2
//            and FMA)";
//   cpu      the CPU's model name and its widest vector extension ("avx512f", "avx2", "none");
//   aten     the capability ATen dispatches to ("no avx", "avx2", "avx512");
//   onednn   oneDNN's effective instruction set ("avx2", "avx512_core", ...; "absent");
//   blas     the file of the loaded BLAS and BLIS_ARCH_TYPE's value ("unset" when unset).
// Reading ATen's and oneDNN's choices fixes them for the process: call it after PinCpuKernels().
std::vector<std::pair<std::string, std::string>> CpuKernelFacts();

// CpuKernelFacts() on one line: "kernels pinned to AVX2; cpu ...; aten avx2; ...".
std::string CpuKernelSummary();

}  // namespace meshlearn::training
