// Thread ownership for tensor code. libtorch parallelises element-wise work and batched
// products with OpenMP, and Debian's libtorch hands plain matrix products to the system BLAS
// (OpenBLAS), which has its own thread pool. Both pools at full width oversubscribe the cores
// (see docs/benchmarks.md), so sieve sets both explicitly.
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/log.h"
#include "sieve/encoder.h"

namespace sieve {

namespace {
int blas_threads_for(int n) {
  // SIEVE_BLAS_THREADS lets a benchmark try other splits without recompiling.
  if (const char* env = std::getenv("SIEVE_BLAS_THREADS")) return std::max(1, std::atoi(env));
  return n;
}
// OpenBLAS builds older than the CPU (Debian 12 ships 0.3.21) fall back to their generic
// "Prescott" kernels on processors they do not recognise, e.g. Sapphire Rapids: matrix products
// then run about 4-5x slower (measured in docs/benchmarks.md). The kernel table is chosen when
// the library loads, from OPENBLAS_CORETYPE, so the fix must be in the environment at start-up.
const char* better_coretype() {
  using CoreName = char* (*)();
  auto name_fn = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (name_fn == nullptr) return nullptr;  // not OpenBLAS
  const char* core = name_fn();
  if (core == nullptr || std::strcmp(core, "Prescott") != 0) return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

}  // namespace

void ensure_fast_blas(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = better_coretype();
  if (core == nullptr) return;
  const char* opt = std::getenv("SIEVE_BLAS_REEXEC");
  if (argv != nullptr && (opt == nullptr || std::strcmp(opt, "0") != 0)) {
    ::setenv("OPENBLAS_CORETYPE", core, 1);
    ::execv("/proc/self/exe", argv);  // returns only on failure; carry on with the slow kernels
  }
  log_warn_once("blas.core", std::string("OpenBLAS uses its generic kernels on this CPU (several times slower); "
                                         "start the process with OPENBLAS_CORETYPE=") + core);
}

void set_compute_threads(int n) {
  if (n <= 0) n = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (n <= 0) n = 1;
  // Found at run time so sieve works with any BLAS (the symbol only exists in OpenBLAS).
  using SetThreads = void (*)(int);
  auto blas_fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (blas_fn == nullptr) {
    at::set_num_threads(n);
    return;
  }
  // With OpenBLAS the matrix products, which are nearly all of the encoder's time, get the
  // threads; libtorch's own pool stays at one thread. Both pools at n threads oversubscribe the
  // cores (their workers spin) and ran up to 3.5x slower at batch 1 (docs/benchmarks.md).
  at::set_num_threads(1);
  blas_fn(blas_threads_for(n));
}

}  // namespace sieve
