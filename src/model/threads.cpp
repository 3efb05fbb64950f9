// Thread ownership for tensor code. libtorch parallelises element-wise work and batched
// products with OpenMP, and Debian's libtorch hands plain matrix products to the system BLAS
// (OpenBLAS), which has its own thread pool. Both pools at full width oversubscribe the cores
// (see docs/benchmarks.md), so sieve sets both explicitly.
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <string>

#include "sieve/encoder.h"

namespace sieve {

namespace {
int blas_threads_for(int n) {
  // SIEVE_BLAS_THREADS lets a benchmark try other splits without recompiling.
  if (const char* env = std::getenv("SIEVE_BLAS_THREADS")) return std::max(1, std::atoi(env));
  return n;
}
}  // namespace

void set_compute_threads(int n) {
  if (n <= 0) n = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (n <= 0) n = 1;
  at::set_num_threads(n);
  // Found at run time so sieve works with any BLAS (the symbol only exists in OpenBLAS).
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    fn(blas_threads_for(n));
}

}  // namespace sieve
