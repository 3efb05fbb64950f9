#include "model/native_attention.h"
#include "model/thread_scratch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <oneapi/dnnl/dnnl.hpp>

#include "core/multiversion.h"
#include "model/dnnl_engine.h"
#include "model/fast_math.h"
#include "sieve/error.h"

namespace sieve {

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;


constexpr size_t kAlign = 64;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// One head's rows of queries, keys or values ([n, dh] at `src`, rows `stride` apart) into a
// contiguous block [np, dh], padded rows 0 (floats, or bfloat16 bits).
template <class T>
void gather_head(const T* src, int64_t stride, int64_t n, int64_t np, int64_t dh, T* out) {
  for (int64_t j = 0; j < n; ++j) std::memcpy(out + j * dh, src + j * stride, static_cast<size_t>(dh) * sizeof(T));
  std::memset(out + n * dh, 0, static_cast<size_t>((np - n) * dh) * sizeof(T));
}

// Softmax of one row of scores over its first n entries (scaled, plus bias[positions[j]] where
// bias is not null), as T; entries n..np are 0.
template <class T>
SIEVE_VARIANT_BODY void softmax_row_body(const float* s, int64_t n, int64_t np, float scale, const float* bias, const int64_t* positions, T* p, float* tmp) {
  float sum = 0;
  if (bias) {
    // As the libtorch pass orders it: the scaled score, then the bias added.
    for (int64_t j = 0; j < n; ++j) tmp[j] = s[j] * scale + bias[positions[j]];
    float mx = tmp[0];
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = tmp[j] > mx ? tmp[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      tmp[j] = fast_exp(tmp[j] - mx);
      sum += tmp[j];
    }
  } else {
    float mx = s[0];
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      tmp[j] = fast_exp((s[j] - mx) * scale);
      sum += tmp[j];
    }
  }
  const float inv = 1.0f / sum;
  if constexpr (sizeof(T) == sizeof(float)) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) p[j] = tmp[j] * inv;
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) p[j] = to_bf16_bits(tmp[j] * inv);
  }
  for (int64_t j = n; j < np; ++j) p[j] = T{};
}
// softmax_row_body compiled for AVX-512 F, AVX2 and the baseline, picked by the CPU probe
// (core/multiversion.h; a template, so written out here).
template <class T>
__attribute__((target("avx512f"))) void softmax_row_avx512f(const float* s, int64_t n, int64_t np, float scale, const float* bias, const int64_t* positions, T* p, float* tmp) {
  softmax_row_body<T>(s, n, np, scale, bias, positions, p, tmp);
}
template <class T>
__attribute__((target("avx2"))) void softmax_row_avx2(const float* s, int64_t n, int64_t np, float scale, const float* bias, const int64_t* positions, T* p, float* tmp) {
  softmax_row_body<T>(s, n, np, scale, bias, positions, p, tmp);
}
template <class T>
void softmax_row(const float* s, int64_t n, int64_t np, float scale, const float* bias, const int64_t* positions, T* p, float* tmp) {
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx512f) return softmax_row_avx512f<T>(s, n, np, scale, bias, positions, p, tmp);
  if (cpu.avx2) return softmax_row_avx2<T>(s, n, np, scale, bias, positions, p, tmp);
  softmax_row_body<T>(s, n, np, scale, bias, positions, p, tmp);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIEVE_SOFTMAX_AVX512 1
// GCC 12's AVX-512 headers warn of their own undefined placeholders (_mm512_reduce_*, masked
// loads) inside a target function: not this code's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The softmax row on AVX-512 by hand (a third of a bf16 pass at 256 tokens went to the portable
// loop above: its clamps and the bit arithmetic of its rounding): exp by the same reduction and
// polynomial as fast_exp, scaled by 2^n with vscalefps (no clamp: the arguments are <= 0, and
// below -87 it gives 0 or a denormal instead of fast_exp's 1e-38), the weights rounded to
// bfloat16 by vcvtneps2bf16 (nearest even, as to_bf16_bits). Ragged ends by masks. Same inputs,
// same order of operations as softmax_row, but for that floor.
template <class T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void softmax_row_avx512(const float* s, int64_t n, int64_t np,
                                                                       float scale, const float* bias,
                                                                       const int64_t* positions, T* p, float* tmp) {
  const float* src = s;
  float step = scale;  // exp((src - max) * step)
  if (bias) {
    for (int64_t j = 0; j < n; ++j) tmp[j] = s[j] * scale + bias[positions[j]];
    src = tmp;
    step = 1.0f;
  }
  auto tail = [](int64_t left) { return static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1); };
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16)
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail(n - j), src + j));
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), vstep = _mm512_set1_ps(step);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail(n - j);
    const __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, src + j), mx), vstep);
    const __m512 e = _mm512_maskz_mov_ps(m, fast_exp_avx512(x));
    vsum = _mm512_add_ps(vsum, e);
    _mm512_mask_storeu_ps(tmp + j, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int64_t j = 0; j < np; j += 16) {
    const __mmask16 m = tail(np - j);
    const __m512 w = j < n ? _mm512_mul_ps(_mm512_maskz_loadu_ps(tail(n - j), tmp + j), inv) : _mm512_setzero_ps();
    if constexpr (sizeof(T) == sizeof(float)) {
      _mm512_mask_storeu_ps(p + j, m, w);
    } else {
      const __m256i b = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(w));
      _mm256_mask_storeu_epi16(p + j, m, b);
    }
  }
}

bool cpu_has_avx512_bf16() { return cpu_features().avx512_bf16; }
#pragma GCC diagnostic pop
#endif

// The softmax row on this CPU's best loop.
template <class T>
void softmax(const float* s, int64_t n, int64_t np, float scale, const float* bias, const int64_t* positions, T* p,
             float* tmp) {
#ifdef SIEVE_SOFTMAX_AVX512
  if (cpu_has_avx512_bf16()) return softmax_row_avx512(s, n, np, scale, bias, positions, p, tmp);
#endif
  softmax_row(s, n, np, scale, bias, positions, p, tmp);
}

}  // namespace

struct NativeAttention::Products {
  dnnl::matmul scores, context;
  memory::desc q, k, s, p, v, c;
  size_t scratchpad = 0;
};

NativeAttention::NativeAttention(int64_t heads, int64_t head_dim, int64_t max_tokens, bool bf16, bool float_context)
    : heads_(heads), dh_(head_dim), max_tokens_(max_tokens), bf16_(bf16), float_context_(float_context || !bf16) {
  SIEVE_ASSERT(heads > 0 && head_dim > 0 && max_tokens > 0);
  slots_.reset(new std::atomic<const Products*>[static_cast<size_t>(padded(max_tokens)) + 1]());
}

NativeAttention::~NativeAttention() = default;

const NativeAttention::Products& NativeAttention::products(int64_t np) const {
  if (const Products* p = slots_[np].load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(making_);
  if (const Products* p = slots_[np].load(std::memory_order_acquire)) return *p;
  const Dt t = bf16_ ? Dt::bf16 : Dt::f32;
  const memory::dim H = heads_, N = np, D = dh_;
  auto made = std::make_unique<Products>();
  Products& pr = *made;
  pr.q = memory::desc({H, N, D}, t, Tag::abc);
  pr.k = memory::desc({H, D, N}, t, Tag::acb);  // the keys [H, N, D] read as their transpose
  pr.s = memory::desc({H, N, N}, Dt::f32, Tag::abc);
  pr.p = memory::desc({H, N, N}, t, Tag::abc);
  pr.v = memory::desc({H, N, D}, t, Tag::abc);
  pr.c = memory::desc({H, N, D}, float_context_ ? Dt::f32 : t, Tag::abc);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto& eng = dnnl_cpu_engine();
  try {
    dnnl::matmul::primitive_desc d1(dnnl::matmul::desc(pr.q, pr.k, pr.s), attr, eng);
    dnnl::matmul::primitive_desc d2(dnnl::matmul::desc(pr.p, pr.v, pr.c), attr, eng);
    pr.scores = dnnl::matmul(d1);
    pr.context = dnnl::matmul(d2);
    pr.scratchpad = std::max<size_t>({64, d1.scratchpad_desc().get_size(), d2.scratchpad_desc().get_size()});
  } catch (const dnnl::error& e) {
    SIEVE_THROW("this CPU has no " << (bf16_ ? "bf16" : "fp32") << " attention product in oneDNN (" << e.what() << ")");
  }
  made_.push_back(std::move(made));
  slots_[np].store(made_.back().get(), std::memory_order_release);
  return *made_.back();
}

void NativeAttention::attend(const float* qkv, int64_t stride, int64_t n, float scale, float* ctx,
                             int64_t ctx_stride, const RelativeBias& bias) const {
  SIEVE_ASSERT(!bf16_);
  run(qkv, stride, n, scale, ctx, ctx_stride, bias);
}

void NativeAttention::attend(const uint16_t* qkv, int64_t stride, int64_t n, float scale, uint16_t* ctx,
                             int64_t ctx_stride, const RelativeBias& bias) const {
  SIEVE_ASSERT(bf16_ && !float_context_);
  run(qkv, stride, n, scale, ctx, ctx_stride, bias);
}

void NativeAttention::attend(const uint16_t* qkv, int64_t stride, int64_t n, float scale, float* ctx,
                             int64_t ctx_stride, const RelativeBias& bias) const {
  SIEVE_ASSERT(bf16_ && float_context_);
  run(qkv, stride, n, scale, ctx, ctx_stride, bias);
}

template <class T, class U>
void NativeAttention::run(const T* qkv, int64_t stride, int64_t n, float scale, U* ctx, int64_t ctx_stride,
                          const RelativeBias& bias) const {
  if (n == 0) return;
  SIEVE_ASSERT(n <= max_tokens_);
  const int64_t np = padded(n), H = heads_ * dh_;
  const Products& pr = products(np);
  const size_t e = sizeof(T);
  const size_t block = aligned(static_cast<size_t>(heads_ * np * dh_) * e);
  const size_t scores = aligned(static_cast<size_t>(heads_ * np * np) * sizeof(float));
  const size_t weights = bf16_ ? aligned(static_cast<size_t>(heads_ * np * np) * e) : 0;  // fp32: in place
  const size_t context = aligned(static_cast<size_t>(heads_ * np * dh_) * sizeof(U));
  const size_t row = aligned(static_cast<size_t>(np) * sizeof(float));
  const ScratchLease scratch(Scratch::Attention, 3 * block + scores + weights + context + row + aligned(pr.scratchpad));
  uint8_t* base = scratch.bytes();
  uint8_t *q = base, *k = q + block, *v = k + block, *s = v + block, *p = bf16_ ? s + scores : s;
  uint8_t *c = s + scores + weights, *tmp = c + context, *pad = tmp + row;
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t at = static_cast<size_t>(h * np * dh_) * e;
    const T* src = qkv + h * dh_;
    gather_head(src, stride, n, np, dh_, reinterpret_cast<T*>(q + at));
    gather_head(src + H, stride, n, np, dh_, reinterpret_cast<T*>(k + at));
    gather_head(src + 2 * H, stride, n, np, dh_, reinterpret_cast<T*>(v + at));
  }
  const auto& eng = dnnl_cpu_engine();
  dnnl::stream st(eng);
  memory scratchpad({{static_cast<memory::dim>(pr.scratchpad)}, Dt::u8, Tag::a}, eng, pad);
  memory mq(pr.q, eng, q), mk(pr.k, eng, k), ms(pr.s, eng, s), mp(pr.p, eng, p), mv(pr.v, eng, v), mc(pr.c, eng, c);
  pr.scores.execute(st, {{DNNL_ARG_SRC, mq}, {DNNL_ARG_WEIGHTS, mk}, {DNNL_ARG_DST, ms}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
  st.wait();
  auto* sf = reinterpret_cast<float*>(s);
  auto* tf = reinterpret_cast<float*>(tmp);
  for (int64_t h = 0; h < heads_; ++h)
    for (int64_t i = 0; i < np; ++i) {
      const size_t at = static_cast<size_t>((h * np + i) * np);
      // Query i's bias row, indexed by the key's position.
      const float* b = bias.table && i < n ? bias.table + h * bias.row + bias.center - bias.positions[i] : nullptr;
      if (bf16_) {
        auto* pb = reinterpret_cast<uint16_t*>(p) + at;
        if (i < n)
          softmax(sf + at, n, np, scale, b, bias.positions, pb, tf);
        else
          std::memset(pb, 0, static_cast<size_t>(np) * sizeof(uint16_t));
      } else {
        if (i < n)
          softmax(sf + at, n, np, scale, b, bias.positions, sf + at, tf);
        else
          std::memset(sf + at, 0, static_cast<size_t>(np) * sizeof(float));
      }
    }
  pr.context.execute(st, {{DNNL_ARG_SRC, mp}, {DNNL_ARG_WEIGHTS, mv}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
  st.wait();
  const auto* cf = reinterpret_cast<const U*>(c);
  for (int64_t h = 0; h < heads_; ++h)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(ctx + j * ctx_stride + h * dh_, cf + (h * np + j) * dh_, static_cast<size_t>(dh_) * sizeof(U));
}

template void NativeAttention::run(const float*, int64_t, int64_t, float, float*, int64_t, const RelativeBias&) const;
template void NativeAttention::run(const uint16_t*, int64_t, int64_t, float, uint16_t*, int64_t,
                                   const RelativeBias&) const;
template void NativeAttention::run(const uint16_t*, int64_t, int64_t, float, float*, int64_t,
                                   const RelativeBias&) const;

}  // namespace sieve
