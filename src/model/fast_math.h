// Vectorisable float functions for sieve's own inference loops (the native pass, PackedLinear's
// epilogues): exp, erf and GELU without a libm call per element, and rounding to bfloat16.
// Internal to sieve's model code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Always inlined: a call per element keeps a loop scalar, and the compiler stopped inlining
// fast_exp into the softmax once the function grew a second loop (exp was then 22 % of a bf16
// pass, which ran at 0.6 of its speed: 67 against about 110 sentences/s at 32 x 128 tokens).
#define SIEVE_INLINE_MATH __attribute__((always_inline)) inline

namespace sieve {

// exp(x) for the vectorised loops (libm's expf is a call per element): Cephes' reduction by ln 2
// in two parts and its degree-5 polynomial, within 2 ulp over the range softmax and GELU use;
// below -87.3 it gives 2^-126 scaled (about 1e-38), not 0.
SIEVE_INLINE_MATH float fast_exp(float x) {
  x = std::min(std::max(x, -87.3f), 88.3f);
  // Round to nearest by the shifter 1.5 x 2^23 (no branch, no call: the loops vectorise).
  constexpr float kShifter = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kShifter) - kShifter;
  const auto ni = static_cast<int32_t>(n);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// erf(x) by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), with fast_exp.
SIEVE_INLINE_MATH float fast_erf(float x) {
  const float a = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float e = 1.0f - poly * fast_exp(-a * a);
  return std::copysign(e, x);
}

// GELU by erf, 0.5 x (1 + erf(x / sqrt 2)), as BERT's "gelu".
SIEVE_INLINE_MATH float gelu_erf(float x) { return 0.5f * x * (1.0f + fast_erf(x * static_cast<float>(M_SQRT1_2))); }

// A float to bfloat16, rounded to nearest even (as torch and oneDNN round); NaN and infinities are
// the caller's to refuse (they come out as some NaN or infinity).
SIEVE_INLINE_MATH uint16_t to_bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIEVE_HAS_FAST_EXP_AVX512 1
// fast_exp on 16 lanes for sieve's hand-written AVX-512 loops (the softmax, the int8 epilogue's
// GELU): the same reduction and polynomial, 2^n applied by vscalefps (so no clamp is needed
// above; below about -87 it gives a denormal or 0 where fast_exp gives 1e-38). Callers are
// compiled for AVX-512 (target attributes) and run only where the CPU has it.
__attribute__((target("avx512f"), always_inline)) inline __m512 fast_exp_avx512(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}
#endif

}  // namespace sieve
