// Splitting a loop over independent items across a few threads (no pool: for work of
// milliseconds, where starting a thread costs microseconds).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace sieve {

/// Calls fn(begin, end) on up to `threads` contiguous ranges covering [0, n), one per thread
/// (the caller's thread takes the first); rethrows the first exception after all have finished.
template <class Fn>
void parallel_ranges(size_t n, int threads, Fn&& fn) {
  const size_t parts = std::max<size_t>(1, std::min<size_t>(n, threads > 0 ? static_cast<size_t>(threads) : 1));
  if (parts == 1) {
    fn(size_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(parts);
  auto run = [&](size_t p) {
    try {
      fn(n * p / parts, n * (p + 1) / parts);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t p = 1; p < parts; ++p) pool.emplace_back(run, p);
  run(0);
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace sieve
