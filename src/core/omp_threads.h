// The calling thread's OpenMP thread count, set for a scope and restored after. OpenMP keeps the
// count per thread, so this touches no other thread's setting.
#pragma once

#include <omp.h>

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

}  // namespace sieve
