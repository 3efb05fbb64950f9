// Small float kernels written so that the compiler vectorises them without -ffast-math: eight
// partial sums break the serial dependency of a reduction (the order of additions is fixed,
// so results are deterministic, though not bit-equal to a serial loop).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sieve {

/// sum_i x[i] * y[i] over n floats.
inline float dot8(const float* x, const float* y, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t k = 0; k < 8; ++k) acc[k] += x[i + k] * y[i + k];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

/// sum_i x[i] over n floats.
inline float sum8(const float* x, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t k = 0; k < 8; ++k) acc[k] += x[i + k];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += x[i];
  return s;
}

}  // namespace sieve
