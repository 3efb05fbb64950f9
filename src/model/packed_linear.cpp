#include "model/packed_linear.h"
#include "model/thread_scratch.h"


#include <algorithm>
#include <optional>
#include <atomic>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <limits>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "core/multiversion.h"
#include "model/dnnl_engine.h"
#include "core/omp_threads.h"
#include "model/fast_math.h"
#include "sieve/error.h"

namespace sieve {

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;


// The per-row passes around a product (rounding to bfloat16, int8's quantization and epilogue)
// on the compute threads' OpenMP team: libtorch's pool, which at::parallel_for would use, is held
// at one thread (model/threads.cpp). Below kParallelFloats floats a pass stays on the calling
// thread, where waking the team would cost more than it saves (batch-1 queries).
constexpr int64_t kParallelFloats = int64_t{1} << 16;
template <class Fn>
void for_rows(int64_t m, int64_t width, Fn&& fn) {
  const int threads = compute_threads();
  if (threads <= 1 || m * width < kParallelFloats || m < 2) return fn(int64_t{0}, m);
  omp_ranges(static_cast<size_t>(m), threads,
             [&](size_t begin, size_t end) { fn(static_cast<int64_t>(begin), static_cast<int64_t>(end)); });
}


// oneDNN runs its products on OpenMP, whose pool sieve keeps at one thread so that OpenBLAS gets
// the cores for libtorch's products (src/model/threads.cpp). A product here takes
// compute_threads() for itself, on the calling thread only (ScopedOmpThreads).

// The per-row loops of the int8 path, compiled for AVX-512, AVX2 and the baseline, chosen at load
// time by the library's CPU probe (core/multiversion.h): they are memory-bound sweeps that the
// baseline's SSE2 runs at a fraction of the speed.

// One row to uint8 with its own scale and zero point; returns {scale, zero}, or {NaN, 0} when the
// row holds a NaN or an infinity (the caller refuses it: converting NaN to an integer is undefined).
using RowQuant = std::pair<float, int32_t>;  // a row's {scale, zero point}
SIEVE_VARIANT_BODY RowQuant quantize_row_body(const float* row, int64_t k, uint8_t* out) {
  float lo = 0, hi = 0, probe = 0;
#pragma omp simd reduction(min : lo) reduction(max : hi) reduction(+ : probe)
  for (int64_t i = 0; i < k; ++i) {
    lo = row[i] < lo ? row[i] : lo;
    hi = row[i] > hi ? row[i] : hi;
    probe += row[i] * 0.0f;  // NaN when any entry is NaN or infinite
  }
  if (probe != 0.0f) return {std::numeric_limits<float>::quiet_NaN(), 0};
  const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  const float inv = 1.0f / scale;
  const int32_t zero = std::clamp(static_cast<int32_t>(std::lrint(-lo * inv)), 0, 255);
  // Rounds half up: x * inv + zero is >= -0.5 up to rounding, so truncation after + 0.5 is a floor.
  const float shift = static_cast<float>(zero) + 0.5f;
#pragma omp simd
  for (int64_t i = 0; i < k; ++i) {
    const float v = std::min(std::max(row[i] * inv + shift, 0.0f), 255.0f);
    out[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
  return {scale, zero};
}
SIEVE_VARIANTS(RowQuant, quantize_row, (const float* row, int64_t k, uint8_t* out), (row, k, out))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIEVE_QUANTIZE_AVX512 1
// quantize_row on AVX-512 by hand (and the epilogue below): GCC's clone of the loop above packs the bytes through
// 128-bit blends (a fifth of an int8 pass at 32 x 128 tokens). The same arithmetic: the range
// widened to 0, x * (1 / scale) + zero + 0.5 clamped to [0, 255] and truncated.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512bw,avx512vl"))) std::pair<float, int32_t> quantize_row_avx512(const float* row, int64_t k,
                                                                                        uint8_t* out) {
  auto tail = [](int64_t left) { return static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1); };
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps(), probe = _mm512_setzero_ps();
  const __m512 zero_v = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    const __m512 x = _mm512_maskz_loadu_ps(tail(k - i), row + i);
    lo = _mm512_min_ps(lo, x);
    hi = _mm512_max_ps(hi, x);
    probe = _mm512_add_ps(probe, _mm512_mul_ps(x, zero_v));  // NaN when any entry is NaN or infinite
  }
  if (_mm512_reduce_add_ps(probe) != 0.0f) return {std::numeric_limits<float>::quiet_NaN(), 0};
  const float l = _mm512_reduce_min_ps(lo), h = _mm512_reduce_max_ps(hi);
  const float scale = h > l ? (h - l) / 255.0f : 1.0f;
  const float inv = 1.0f / scale;
  const int32_t zero = std::clamp(static_cast<int32_t>(std::lrint(-l * inv)), 0, 255);
  const __m512 vinv = _mm512_set1_ps(inv), shift = _mm512_set1_ps(static_cast<float>(zero) + 0.5f),
               top = _mm512_set1_ps(255.0f);
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = tail(k - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, row + i);
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(_mm512_mul_ps(x, vinv), shift), zero_v), top);
    _mm_mask_storeu_epi8(out + i, m, _mm512_cvtusepi32_epi8(_mm512_cvttps_epu32(v)));
  }
  return {scale, zero};
}

// The int8 epilogue of one row on AVX-512 by hand, dequantization and GELU (erf) in one pass:
// y = gelu((acc - zero * column_sum) * (scale * weight_scale) + bias) (+ y where `add`). GELU as
// gelu_erf (Abramowitz-Stegun erf with fast_exp's polynomial), its 1 / (1 + p |x|) by vrcp14ps
// and a Newton step (relative error about 1e-8) instead of a division (the portable loop's
// vdivps was most of its time). `gelu` false: dequantization only.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void epilogue_row_avx512(const int32_t* acc, int64_t n,
                                                                              float scale, int32_t zero,
                                                                              const int32_t* column_sum,
                                                                              const float* weight_scale,
                                                                              const float* bias, float* y, bool add,
                                                                              bool gelu) {
  auto tail = [](int64_t left) { return static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1); };
  const __m512i vzero = _mm512_set1_epi32(zero);
  const __m512 vscale = _mm512_set1_ps(scale), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f),
               two = _mm512_set1_ps(2.0f), rsqrt2 = _mm512_set1_ps(static_cast<float>(M_SQRT1_2));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail(n - i);
    const __m512i a = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, acc + i),
                                       _mm512_mullo_epi32(vzero, _mm512_maskz_loadu_epi32(m, column_sum + i)));
    const __m512 sw = _mm512_mul_ps(vscale, _mm512_maskz_loadu_ps(m, weight_scale + i));
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), sw, _mm512_maskz_loadu_ps(m, bias + i));
    if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y + i));
    if (gelu) {
      const __m512 u = _mm512_mul_ps(v, rsqrt2);
      const __m512 au = _mm512_abs_ps(u);
      const __m512 d = _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), au, one);
      __m512 t = _mm512_rcp14_ps(d);
      t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, two));
      __m512 poly = _mm512_fmadd_ps(t, _mm512_set1_ps(1.061405429f), _mm512_set1_ps(-1.453152027f));
      poly = _mm512_fmadd_ps(t, poly, _mm512_set1_ps(1.421413741f));
      poly = _mm512_fmadd_ps(t, poly, _mm512_set1_ps(-0.284496736f));
      poly = _mm512_fmadd_ps(t, poly, _mm512_set1_ps(0.254829592f));
      poly = _mm512_mul_ps(t, poly);
      const __m512 x = _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), au), au), _mm512_set1_ps(-87.3f));
      const __m512 e = fast_exp_avx512(x);  // exp(-u^2)
      const __m512 erf_abs = _mm512_fnmadd_ps(poly, e, one);                       // erf(|u|)
      const __m512i sign = _mm512_and_si512(_mm512_castps_si512(u), _mm512_set1_epi32(INT32_MIN));
      const __m512 erf_u = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(erf_abs), sign));  // u's sign
      v = _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_add_ps(one, erf_u));
    }
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

#pragma GCC diagnostic pop

bool cpu_has_avx512bw_vl() { return cpu_features().avx512bw_vl; }
#endif

std::pair<float, int32_t> quantize(const float* row, int64_t k, uint8_t* out) {
#ifdef SIEVE_QUANTIZE_AVX512
  if (cpu_has_avx512bw_vl()) return quantize_row_avx512(row, k, out);
#endif
  return quantize_row(row, k, out);
}

// y[n] = (acc[n] - zero * column_sum[n]) * scale * weight_scale[n] + bias[n], or y[n] += that.
SIEVE_VARIANT_BODY void dequantize_row_body(const int32_t* acc, int64_t n, float scale, int32_t zero, const int32_t* column_sum,
                                 const float* weight_scale, const float* bias, float* y, bool add) {
  if (add) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] += static_cast<float>(acc[i] - zero * column_sum[i]) * (scale * weight_scale[i]) + bias[i];
    return;
  }
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(acc[i] - zero * column_sum[i]) * (scale * weight_scale[i]) + bias[i];
}
SIEVE_VARIANTS(void, dequantize_row, (const int32_t* acc, int64_t n, float scale, int32_t zero, const int32_t* column_sum, const float* weight_scale, const float* bias, float* y, bool add), (acc, n, scale, zero, column_sum, weight_scale, bias, y, add))

// Floats to bfloat16, rounded to nearest even (as oneDNN's own reorder). Returns false when any
// entry is a NaN or an infinity (the caller refuses the input; those entries become NaN here).
SIEVE_VARIANT_BODY bool to_bf16_body(const float* x, int64_t n, uint16_t* out) {
  float probe = 0;
#pragma omp simd reduction(+ : probe)
  for (int64_t i = 0; i < n; ++i) {
    out[i] = to_bf16_bits(x[i]);
    probe += x[i] * 0.0f;  // NaN when any entry is NaN or infinite
  }
  return probe == 0.0f;
}
SIEVE_VARIANTS(bool, to_bf16, (const float* x, int64_t n, uint16_t* out), (x, n, out))

// The int8 epilogue's activation over one row, in place.
SIEVE_VARIANT_BODY void activate_row_body(float* y, int64_t n, Activation act) {
  switch (act) {
    case Activation::None: return;
    case Activation::Gelu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = gelu_erf(y[i]);
      return;
    case Activation::GeluTanh: {
      const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.0f + std::tanh(c * (y[i] + 0.044715f * y[i] * y[i] * y[i])));
      return;
    }
    case Activation::Relu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
      return;
  }
}
SIEVE_VARIANTS(void, activate_row, (float* y, int64_t n, Activation act), (y, n, act))

dnnl::primitive_attr product_attr(Activation act, bool in_product, bool accumulate) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (in_product && accumulate) {  // dst = x W^T + b + dst (no activation: the constructor refuses one)
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  } else if (in_product && act != Activation::None) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f,
                       act == Activation::Gelu       ? dnnl::algorithm::eltwise_gelu_erf
                       : act == Activation::GeluTanh ? dnnl::algorithm::eltwise_gelu_tanh
                                                     : dnnl::algorithm::eltwise_relu,
                       0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// The pieces one product's rows are cut into, each run by a primitive made for exactly its row
// count: oneDNN's kernels for a fixed row count (brgemm: AMX, AVX-512 VNNI / BF16) are several
// times faster than its one primitive for a run-time row count (gemm:jit, which in int8 runs at
// about fp32's speed), and each primitive costs 50-800 us to make and tens of kilobytes of code,
// so row counts are bucketed: any count up to kExactRows as it is, then kChunkRows-row chunks and
// a remainder cut into a multiple of kRowStep and what is left. At most 1 + kExactRows +
// (kChunkRows - kExactRows) / kRowStep primitives a layer shape, made on first use.
constexpr int64_t kChunkRows = 256;
constexpr int64_t kExactRows = 64;
constexpr int64_t kRowStep = 16;
constexpr int64_t kEpilogueRows = 64;

template <class Fn>
void for_each_piece(int64_t m, Fn&& fn) {
  int64_t at = 0;
  for (; m - at >= kChunkRows; at += kChunkRows) fn(at, kChunkRows);
  const int64_t rest = m - at;
  if (rest == 0) return;
  if (rest <= kExactRows) return fn(at, rest);
  const int64_t stepped = rest / kRowStep * kRowStep;
  fn(at, stepped);
  if (rest > stepped) fn(at + stepped, rest - stepped);
}

}  // namespace

struct PackedLinear::Impl {
  Dt src_type = Dt::f32, dst_type = Dt::f32;
  bool bias_in_product = false;  // fp32 and bf16: oneDNN adds the bias (and activates); int8: the epilogue
  Activation activation = Activation::None;
  bool accumulate = false;       // LinearOutput::AddToFloat
  memory::desc weights_desc;     // the packed layout (the same for every row count)
  memory weights;
  std::vector<float> bias;  // [N] (zeros when the layer has none)
  // Int8 only:
  std::vector<float> weight_scale;  // [N]
  std::vector<int32_t> column_sum;  // [N]: sum_k Wq[n, k]

  // The primitive for each row count, made on first use (slot m for m rows; see for_each_piece).
  struct Product {
    dnnl::matmul mm;
    memory::desc scratchpad;
  };
  std::unique_ptr<std::atomic<const Product*>[]> slots{new std::atomic<const Product*>[kChunkRows + 1]()};
  std::mutex making;
  std::vector<std::unique_ptr<Product>> made;
  int64_t k = 0, n = 0;

  memory::desc product_desc(memory::dim m, memory::desc& src, memory::desc& dst) const {
    src = memory::desc({m, k}, src_type, Tag::ab);
    dst = memory::desc({m, n}, dst_type, Tag::ab);
    return memory::desc({1, n}, Dt::f32, Tag::ab);
  }

  const Product& product(int64_t m) {
    if (const Product* p = slots[m].load(std::memory_order_acquire)) return *p;
    std::lock_guard<std::mutex> lock(making);
    if (const Product* p = slots[m].load(std::memory_order_acquire)) return *p;
    memory::desc src, dst;
    const memory::desc b = product_desc(m, src, dst);
    const dnnl::primitive_attr attr = product_attr(activation, bias_in_product, accumulate);
    const auto& eng = dnnl_cpu_engine();
    auto pd = bias_in_product ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights_desc, b, dst), attr, eng)
                              : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights_desc, dst), attr, eng);
    auto p = std::make_unique<Product>(Product{dnnl::matmul(pd), pd.scratchpad_desc()});
    made.push_back(std::move(p));
    slots[m].store(made.back().get(), std::memory_order_release);
    return *made.back();
  }
};

bool PackedLinear::cpu_has_vnni() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto has = [isa](dnnl::cpu_isa want) {
    const auto w = static_cast<unsigned>(want);
    return (isa & w) == w;
  };
  return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
}

bool PackedLinear::cpu_has_bf16() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & want) == want;
}

PackedLinear::PackedLinear(const at::Tensor& weight, const at::Tensor& bias, Precision precision, int int8_levels,
                           Activation activation, LinearOutput output)
    : impl_(std::make_unique<Impl>()), precision_(precision), activation_(activation), output_(output) {
  impl_->activation = activation;
  impl_->accumulate = output == LinearOutput::AddToFloat;
  SIEVE_ASSERT(output != LinearOutput::AddToFloat || activation == Activation::None);
  SIEVE_ASSERT(output != LinearOutput::Bf16 || precision != Precision::Fp32);
  SIEVE_THROW_IF_NOT(int8_levels == 0 || int8_levels == 63 || int8_levels == 127,
                     "the int8 weight grid must be 127 or 63 levels, not " << int8_levels);
  SIEVE_THROW_IF_NOT(int8_levels != 127 || precision != Precision::Int8 || cpu_has_vnni(),
                     "int8 weights on the 127-level grid need a CPU with VNNI (AVX-512 VNNI or AVX-VNNI): without "
                     "it the u8 x s8 pair sums saturate; this CPU takes the 63-level grid");
  SIEVE_ASSERT(weight.dim() == 2 && weight.device().is_cpu() && weight.scalar_type() == at::kFloat);
  at::Tensor w = weight.detach().contiguous();
  n_ = w.size(0);
  k_ = w.size(1);
  impl_->k = k_;
  impl_->n = n_;
  const auto K = static_cast<memory::dim>(k_), N = static_cast<memory::dim>(n_);
  impl_->bias.assign(static_cast<size_t>(n_), 0.0f);
  if (bias.defined()) {
    at::Tensor b = bias.detach().contiguous();
    std::copy(b.data_ptr<float>(), b.data_ptr<float>() + n_, impl_->bias.begin());
  }
  const auto& eng = dnnl_cpu_engine();
  dnnl::stream s(eng);
  // The packed layout oneDNN picks for a chunk's row count; it does not depend on the row count,
  // and every other row count's primitive is made for this same layout (Impl::product).
  const memory::dim M = kChunkRows;
  Dt wtype = Dt::f32;
  const void* plain_data = w.data_ptr<float>();
  Dt plain_type = Dt::f32;
  std::vector<int8_t> q;
  if (precision == Precision::Fp32 || precision == Precision::Bf16) {
    impl_->src_type = precision == Precision::Bf16 ? Dt::bf16 : Dt::f32;
    impl_->dst_type = output == LinearOutput::Bf16 ? Dt::bf16 : Dt::f32;
    wtype = impl_->src_type;
    impl_->bias_in_product = true;
  } else {
    levels_ = int8_levels != 0 ? int8_levels : default_weight_levels();
    q.resize(static_cast<size_t>(n_ * k_));
    impl_->weight_scale.resize(static_cast<size_t>(n_));
    impl_->column_sum.resize(static_cast<size_t>(n_));
    const float* wp = w.data_ptr<float>();
    for (int64_t n = 0; n < n_; ++n) {
      const float* row = wp + n * k_;
      float mx = 0;
      for (int64_t k = 0; k < k_; ++k) mx = std::max(mx, std::fabs(row[k]));
      const float scale = mx > 0 ? mx / static_cast<float>(levels_) : 1.0f;
      int32_t sum = 0;
      for (int64_t k = 0; k < k_; ++k) {
        const auto v = static_cast<int8_t>(std::lrint(std::clamp(row[k] / scale, -float(levels_), float(levels_))));
        q[static_cast<size_t>(n * k_ + k)] = v;
        sum += v;
      }
      impl_->weight_scale[static_cast<size_t>(n)] = scale;
      impl_->column_sum[static_cast<size_t>(n)] = sum;
    }
    impl_->src_type = Dt::u8;
    impl_->dst_type = Dt::s32;
    wtype = plain_type = Dt::s8;
    plain_data = q.data();
  }
  memory::desc src({M, K}, impl_->src_type, Tag::ab), wei({K, N}, wtype, Tag::any),
      dst({M, N}, impl_->dst_type, Tag::ab), b({1, N}, Dt::f32, Tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    const dnnl::primitive_attr attr = product_attr(activation, impl_->bias_in_product, impl_->accumulate);
    pd = impl_->bias_in_product ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, b, dst), attr, eng)
                                : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, eng);
  } catch (const dnnl::error& e) {
    SIEVE_THROW("this CPU has no " << precision_name(precision) << " matrix product in oneDNN ("
                                   << e.what() << ")" << (precision == Precision::Bf16 ? ": bf16 needs AVX-512" : ""));
  }
  impl_->weights_desc = pd.weights_desc();
  // W [N, K] row-major is the [K, N] matrix in column-major ("ba") order; the reorder converts
  // fp32 to bf16 (rounding to nearest even) where asked.
  memory plain({{K, N}, plain_type, Tag::ba}, eng, const_cast<void*>(plain_data));
  impl_->weights = memory(impl_->weights_desc, eng);
  dnnl::reorder(plain, impl_->weights).execute(s, plain, impl_->weights);
  s.wait();
}

PackedLinear::~PackedLinear() = default;

at::Tensor PackedLinear::forward(const at::Tensor& x_in) const {
  SIEVE_ASSERT(x_in.device().is_cpu() && x_in.scalar_type() == at::kFloat && x_in.size(-1) == k_);
  at::Tensor x = x_in.reshape({-1, k_}).contiguous();
  const int64_t M = x.size(0);
  std::vector<int64_t> out_shape(x_in.sizes().begin(), x_in.sizes().end());
  out_shape.back() = n_;
  SIEVE_ASSERT(output_ == LinearOutput::Float);
  at::Tensor y = at::empty({M, n_}, x.options());
  forward(x.data_ptr<float>(), M, y.data_ptr<float>());
  return y.view(out_shape);
}

// The product of rows [0, M) of src (row-major, in the product's source type) into dst (in its
// destination type), piece by piece (for_each_piece), on the caller's OpenMP team.
void PackedLinear::run(const void* src, int64_t M, void* dst) const {
  const auto& eng = dnnl_cpu_engine();
  dnnl::stream s(eng);
  const auto K = static_cast<memory::dim>(k_), N = static_cast<memory::dim>(n_);
  memory b({{1, N}, Dt::f32, Tag::ab}, eng, const_cast<float*>(impl_->bias.data()));
  const size_t src_row = static_cast<size_t>(k_) * memory::data_type_size(impl_->src_type);
  const size_t dst_row = static_cast<size_t>(n_) * memory::data_type_size(impl_->dst_type);
  std::vector<std::unique_ptr<ScratchLease>> pads;  // until s.wait(): a product may run until then
  for_each_piece(M, [&](int64_t at, int64_t rows) {
    const Impl::Product& p = impl_->product(rows);
    const auto r = static_cast<memory::dim>(rows);
    // oneDNN only reads src.
    memory msrc({{r, K}, impl_->src_type, Tag::ab}, eng, const_cast<uint8_t*>(static_cast<const uint8_t*>(src)) + at * src_row);
    memory mdst({{r, N}, impl_->dst_type, Tag::ab}, eng, static_cast<uint8_t*>(dst) + at * dst_row);
    pads.push_back(std::make_unique<ScratchLease>(Scratch::Scratchpad, std::max<size_t>(64, p.scratchpad.get_size())));
    memory scratchpad(p.scratchpad, eng, pads.back()->bytes());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, msrc}, {DNNL_ARG_WEIGHTS, impl_->weights}, {DNNL_ARG_DST, mdst}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (impl_->bias_in_product) args.emplace(DNNL_ARG_BIAS, b);
    p.mm.execute(s, args);
  });
  s.wait();
}

void PackedLinear::forward_bf16(const uint16_t* x, int64_t M, void* y) const {
  SIEVE_ASSERT(precision_ == Precision::Bf16);
  if (M == 0) return;
  ScopedOmpThreads threads(compute_threads());
  run(x, M, y);
}

void PackedLinear::forward(const float* xp_in, int64_t M, void* y) const {
  if (M == 0) return;
  ScopedOmpThreads threads(compute_threads());
  if (precision_ == Precision::Fp32) {
    run(xp_in, M, y);
    return;
  }
  if (precision_ == Precision::Bf16) {
    const ScratchLease rounded(Scratch::Quantized, static_cast<size_t>(M * k_) * sizeof(uint16_t));
    auto* xb = rounded.as<uint16_t>();
    std::atomic<bool> non_finite{false};
    for_rows(M, k_, [&](int64_t begin, int64_t end) {
      if (!to_bf16(xp_in + begin * k_, (end - begin) * k_, xb + begin * k_)) non_finite = true;
    });
    SIEVE_THROW_IF_NOT(!non_finite, "a bf16 layer's input holds a NaN or an infinity (a non-finite activation); "
                                    "the model's weights or its input states are damaged");
    run(xb, M, y);
    return;
  }
  // Int8: each row to uint8 with its own scale and zero point.
  const ScratchLease quantized(Scratch::Quantized, static_cast<size_t>(M * k_));
  const ScratchLease params(Scratch::RowParams, static_cast<size_t>(M) * 2 * sizeof(float));
  uint8_t* q = quantized.bytes();
  auto* row_params = params.as<float>();
  float* row_scale = row_params;
  auto* row_zero = reinterpret_cast<int32_t*>(row_params + M);
  const float* xp = xp_in;
  std::atomic<bool> non_finite{false};
  for_rows(M, k_, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const auto [scale, zero] = quantize(xp + m * k_, k_, q + m * k_);
      if (std::isnan(scale)) non_finite = true;
      row_scale[m] = scale;
      row_zero[m] = zero;
    }
  });
  SIEVE_THROW_IF_NOT(!non_finite, "an int8 layer's input holds a NaN or an infinity (a non-finite activation); "
                                  "the model's weights or its input states are damaged");
  // Each piece's int32 sums into one piece-sized buffer (at most kChunkRows rows: 1.5 MB for
  // 1,536 columns), turned to floats while they are in cache: the whole batch's sums (50 MB at
  // 8,192 rows) were most of int8's peak memory.
  const ScratchLease sums(Scratch::Accumulator, static_cast<size_t>(std::min<int64_t>(M, kChunkRows) * n_) * sizeof(int32_t));
  auto* acc = sums.as<int32_t>();
  auto* yp = static_cast<float*>(y);
  const float* ws = impl_->weight_scale.data();
  const int32_t* cs = impl_->column_sum.data();
  const float* bp = impl_->bias.data();
  const bool add = output_ == LinearOutput::AddToFloat, bf16_out = output_ == LinearOutput::Bf16;
#ifdef SIEVE_QUANTIZE_AVX512
  // No activation or GELU (erf): one hand-written pass on AVX-512.
  const bool fused = cpu_has_avx512bw_vl() && (activation_ == Activation::None || activation_ == Activation::Gelu);
#endif
  auto piece = [&](int64_t at, int64_t rows) {
    run(q + at * k_, rows, acc);
    for_rows(rows, n_, [&](int64_t begin, int64_t end) {
      // Bf16 output: each row as floats in a row of this thread's, then rounded into y.
      std::optional<ScratchLease> row_floats;
      if (bf16_out) row_floats.emplace(Scratch::Row, static_cast<size_t>(n_) * sizeof(float));
      float* tmp = bf16_out ? row_floats->as<float>() : nullptr;
      for (int64_t m = begin; m < end; ++m) {
        const int64_t row = at + m;
        float* yr = bf16_out ? tmp : yp + row * n_;
#ifdef SIEVE_QUANTIZE_AVX512
        if (fused) {
          epilogue_row_avx512(acc + m * n_, n_, row_scale[row], row_zero[row], cs, ws, bp, yr, add,
                              activation_ == Activation::Gelu);
        } else
#endif
        {
          dequantize_row(acc + m * n_, n_, row_scale[row], row_zero[row], cs, ws, bp, yr, add);
          activate_row(yr, n_, activation_);
        }
        if (bf16_out) to_bf16(yr, n_, static_cast<uint16_t*>(y) + row * n_);
      }
    });
  };
  for_each_piece(M, [&](int64_t at, int64_t rows) {
    for (int64_t sub = 0; sub < rows; sub += kEpilogueRows) piece(at + sub, std::min(kEpilogueRows, rows - sub));
  });
}

}  // namespace sieve
