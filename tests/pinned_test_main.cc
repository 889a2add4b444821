// The main() of the test programs that train: the CPU kernels pinned as in every meshlearn program
// that trains (training/cpu_pinning.h), then GoogleTest.

#include <gtest/gtest.h>

#include "training/cpu_pinning.h"

int main(int argc, char** argv) {
  if (!meshlearn::training::PinCpuKernelsOrExplain(argv[0])) return 2;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
