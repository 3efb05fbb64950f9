// Thread ownership for tensor code. libtorch parallelises element-wise work and batched
// products with OpenMP, and Debian's libtorch hands plain matrix products to the system BLAS
// (OpenBLAS), which has its own thread pool. Both pools at full width oversubscribe the cores
// (see docs/benchmarks.md), so sieve sets both explicitly.
#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/log.h"
#include "model/threads.h"
#include "core/cpu.h"
#include "sieve/error.h"
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
  // OpenBLAS's kernels follow the CPU itself, not SIEVE_PORTABLE (which is about sieve's own loops).
  const CpuFeatures cpu = probe_cpu(nullptr);
  if (cpu.x86_64_v4) return "SkylakeX";
  if (cpu.x86_64_v3) return "Haswell";
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
    // Idle OpenBLAS workers spin for 2^28 cycles (~0.1 s) before sleeping, taking a core from
    // the threads that decode and score candidates between matrix products; 2^16 cycles halved
    // stage 2's decode time on 2 cores (docs/benchmarks.md). Read only at load time too.
    ::setenv("OPENBLAS_THREAD_TIMEOUT", "16", 0);
    ::execv("/proc/self/exe", argv);  // returns only on failure; carry on with the slow kernels
  }
  log_warn_once("blas.core", std::string("OpenBLAS uses its generic kernels on this CPU (several times slower); "
                                         "start the process with OPENBLAS_CORETYPE=") + core);
}

void tune_allocator() {
#if defined(__GLIBC__)
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

namespace {
int cores() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}
std::atomic<int> g_threads{0};
}  // namespace

int compute_threads() {
  int n = g_threads.load();
  return n > 0 ? n : cores();
}

void ensure_compute_threads() {
  if (g_threads.load() == 0) set_compute_threads(0);
}

void set_compute_threads(int n) {
  if (n <= 0) n = cores();
  g_threads.store(n);
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

c10::Device parse_device(const std::string& name) {
  SIEVE_THROW_IF_NOT(name == "cpu" || name.rfind("cuda", 0) == 0,
                     "unknown device '" << name << "' (expected cpu, cuda or cuda:N)");
  if (name != "cpu")
    SIEVE_THROW_IF_NOT(at::hasCUDA(), "device '" << name << "' requested but this libtorch has no CUDA support "
                                                 "or no GPU is visible; use --device cpu");
  return c10::Device(name);
}

}  // namespace sieve
