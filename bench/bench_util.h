// Timing helpers shared by the end-to-end benchmarks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace sieve::bench {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The p-th percentile (nearest rank) of `v`; 0 when empty.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::min(i == 0 ? 0 : i - 1, v.size() - 1)];
}

}  // namespace sieve::bench
