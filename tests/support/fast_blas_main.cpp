// The main of the tests that encode many real texts: like the CLI, start on OpenBLAS's kernels
// for this CPU (re-executing with OPENBLAS_CORETYPE when OpenBLAS fell back to its generic ones);
// a Python oracle started by the test inherits the setting.
#include <gtest/gtest.h>

#include "sieve/encoder.h"

int main(int argc, char** argv) {
  sieve::ensure_fast_blas(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
