// The calling thread's OpenMP thread count, set for a scope and restored after. OpenMP keeps the
// count per thread, so this touches no other thread's setting.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <vector>

namespace sieve {

class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : before_(omp_get_max_threads()) {
    if (threads > 0 && threads != before_) omp_set_num_threads(threads);
  }
  ~ScopedOmpThreads() {
    if (omp_get_max_threads() != before_) omp_set_num_threads(before_);
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int before_;
};

/// Calls fn(begin, end) on `threads` contiguous shares of [0, n) run by OpenMP's team: the team
/// the encoder, FAISS and oneDNN keep warm (its idle workers spin for a while after each region,
/// so std::threads started beside them compete with them for the cores). The first exception is
/// rethrown on the calling thread. Needs -fopenmp in the translation unit.
template <class Fn>
void omp_ranges(size_t n, int threads, Fn&& fn) {
  const int parts = static_cast<int>(std::max<size_t>(1, std::min<size_t>(n, threads > 0 ? threads : 1)));
  if (parts == 1) {
    fn(size_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int p = 0; p < parts; ++p) {
    try {
      fn(n * static_cast<size_t>(p) / parts, n * static_cast<size_t>(p + 1) / parts);
    } catch (...) {
      errors[static_cast<size_t>(p)] = std::current_exception();
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace sieve
