#include "model/packed_linear.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "core/multiversion.h"
#include "core/omp_threads.h"
#include "sieve/error.h"

namespace sieve {

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Rows per task of the quantize and epilogue loops.
constexpr int64_t kRowGrain = 8;

// A grow-only buffer per thread and purpose: the calls of one thread run one after another, and
// fresh zero-filled buffers per call cost page faults that show at batch 1.
uint8_t* thread_buffer(int slot, size_t bytes) {
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[4];
  Buffer& b = buffers[slot];
  if (b.size < bytes) {
    b.data.reset(new uint8_t[bytes]);
    b.size = bytes;
  }
  return b.data.get();
}
enum Slot { kScratch = 0, kQuantized = 1, kAccumulator = 2, kRowParams = 3 };

// oneDNN runs its products on OpenMP, whose pool sieve keeps at one thread so that OpenBLAS gets
// the cores for libtorch's products (src/model/threads.cpp). A product here takes
// compute_threads() for itself, on the calling thread only (ScopedOmpThreads).

// The per-row loops of the int8 path, compiled for AVX-512, AVX2 and the baseline, chosen at load
// time by the CPU (ifunc): they are memory-bound sweeps that the baseline's SSE2 runs at a
// fraction of the speed.
#define SIEVE_CLONES SIEVE_MULTIVERSION

// One row to uint8 with its own scale and zero point; returns {scale, zero}, or {NaN, 0} when the
// row holds a NaN or an infinity (the caller refuses it: converting NaN to an integer is undefined).
SIEVE_CLONES std::pair<float, int32_t> quantize_row(const float* row, int64_t k, uint8_t* out) {
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

// y[n] = (acc[n] - zero * column_sum[n]) * scale * weight_scale[n] + bias[n].
SIEVE_CLONES void dequantize_row(const int32_t* acc, int64_t n, float scale, int32_t zero, const int32_t* column_sum,
                                 const float* weight_scale, const float* bias, float* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(acc[i] - zero * column_sum[i]) * (scale * weight_scale[i]) + bias[i];
}

}  // namespace

struct PackedLinear::Impl {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul mm;
  memory weights;             // reordered into pd.weights_desc()
  std::vector<float> bias;    // [N] (zeros when the layer has none)
  // Int8 only:
  std::vector<float> weight_scale;  // [N]
  std::vector<int32_t> column_sum;  // [N]: sum_k Wq[n, k]
};

bool PackedLinear::cpu_has_vnni() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto has = [isa](dnnl::cpu_isa want) {
    const auto w = static_cast<unsigned>(want);
    return (isa & w) == w;
  };
  return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
}

PackedLinear::PackedLinear(const at::Tensor& weight, const at::Tensor& bias, Precision precision, int int8_levels)
    : impl_(std::make_unique<Impl>()), precision_(precision) {
  SIEVE_THROW_IF_NOT(int8_levels == 0 || int8_levels == 63 || int8_levels == 127,
                     "the int8 weight grid must be 127 or 63 levels, not " << int8_levels);
  SIEVE_THROW_IF_NOT(int8_levels != 127 || precision != Precision::Int8 || cpu_has_vnni(),
                     "int8 weights on the 127-level grid need a CPU with VNNI (AVX-512 VNNI or AVX-VNNI): without "
                     "it the u8 x s8 pair sums saturate; this CPU takes the 63-level grid");
  SIEVE_ASSERT(weight.dim() == 2 && weight.device().is_cpu() && weight.scalar_type() == at::kFloat);
  at::Tensor w = weight.detach().contiguous();
  n_ = w.size(0);
  k_ = w.size(1);
  const auto K = static_cast<memory::dim>(k_), N = static_cast<memory::dim>(n_);
  impl_->bias.assign(static_cast<size_t>(n_), 0.0f);
  if (bias.defined()) {
    at::Tensor b = bias.detach().contiguous();
    std::copy(b.data_ptr<float>(), b.data_ptr<float>() + n_, impl_->bias.begin());
  }
  const auto& eng = cpu_engine();
  dnnl::stream s(eng);
  // One primitive for every row count: M is a run-time dimension, so the packed weights do not
  // depend on the batch.
  const memory::dim M = DNNL_RUNTIME_DIM_VAL;
  if (precision == Precision::Fp32) {
    memory::desc src({M, K}, Dt::f32, Tag::ab), wei({K, N}, Dt::f32, Tag::any), b({1, N}, Dt::f32, Tag::ab),
        dst({M, N}, Dt::f32, Tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    impl_->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, b, dst), attr, eng);
    // W [N, K] row-major is the [K, N] matrix in column-major ("ba") order.
    memory plain({{K, N}, Dt::f32, Tag::ba}, eng, w.data_ptr<float>());
    impl_->weights = memory(impl_->pd.weights_desc(), eng);
    dnnl::reorder(plain, impl_->weights).execute(s, plain, impl_->weights);
  } else {
    levels_ = int8_levels != 0 ? int8_levels : default_weight_levels();
    std::vector<int8_t> q(static_cast<size_t>(n_ * k_));
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
    memory::desc src({M, K}, Dt::u8, Tag::ab), wei({K, N}, Dt::s8, Tag::any), dst({M, N}, Dt::s32, Tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    impl_->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, eng);
    memory plain({{K, N}, Dt::s8, Tag::ba}, eng, q.data());
    impl_->weights = memory(impl_->pd.weights_desc(), eng);
    dnnl::reorder(plain, impl_->weights).execute(s, plain, impl_->weights);
  }
  s.wait();
  impl_->mm = dnnl::matmul(impl_->pd);
}

PackedLinear::~PackedLinear() = default;

at::Tensor PackedLinear::forward(const at::Tensor& x_in) const {
  SIEVE_ASSERT(x_in.device().is_cpu() && x_in.scalar_type() == at::kFloat && x_in.size(-1) == k_);
  at::Tensor x = x_in.reshape({-1, k_}).contiguous();
  const int64_t M = x.size(0);
  std::vector<int64_t> out_shape(x_in.sizes().begin(), x_in.sizes().end());
  out_shape.back() = n_;
  at::Tensor y = at::empty({M, n_}, x.options());
  forward(x.data_ptr<float>(), M, y.data_ptr<float>());
  return y.view(out_shape);
}

void PackedLinear::forward(const float* xp_in, int64_t M, float* yp_out) const {
  if (M == 0) return;
  auto* xp_mut = const_cast<float*>(xp_in);  // oneDNN's memory takes a non-const handle; it only reads
  const auto& eng = cpu_engine();
  dnnl::stream s(eng);
  const auto K = static_cast<memory::dim>(k_), N = static_cast<memory::dim>(n_), Md = static_cast<memory::dim>(M);
  memory::desc sp_desc = impl_->pd.scratchpad_desc();
  memory scratchpad(sp_desc, eng, thread_buffer(kScratch, std::max<size_t>(64, sp_desc.get_size())));
  ScopedOmpThreads threads(compute_threads());
  if (precision_ == Precision::Fp32) {
    memory src({{Md, K}, Dt::f32, Tag::ab}, eng, xp_mut);
    memory dst({{Md, N}, Dt::f32, Tag::ab}, eng, yp_out);
    memory b({{1, N}, Dt::f32, Tag::ab}, eng, const_cast<float*>(impl_->bias.data()));
    impl_->mm.execute(s, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_WEIGHTS, impl_->weights},
                          {DNNL_ARG_BIAS, b},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_SCRATCHPAD, scratchpad}});
    s.wait();
    return;
  }
  // Int8: each row to uint8 with its own scale and zero point.
  uint8_t* q = thread_buffer(kQuantized, static_cast<size_t>(M * k_));
  auto* row_params = reinterpret_cast<float*>(thread_buffer(kRowParams, static_cast<size_t>(M) * 2 * sizeof(float)));
  float* row_scale = row_params;
  auto* row_zero = reinterpret_cast<int32_t*>(row_params + M);
  const float* xp = xp_in;
  std::atomic<bool> non_finite{false};
  at::parallel_for(0, M, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const auto [scale, zero] = quantize_row(xp + m * k_, k_, q + m * k_);
      if (std::isnan(scale)) non_finite = true;
      row_scale[m] = scale;
      row_zero[m] = zero;
    }
  });
  SIEVE_THROW_IF_NOT(!non_finite, "an int8 layer's input holds a NaN or an infinity (a non-finite activation); "
                                  "the model's weights or its input states are damaged");
  auto* acc = reinterpret_cast<int32_t*>(thread_buffer(kAccumulator, static_cast<size_t>(M * n_) * sizeof(int32_t)));
  memory src({{Md, K}, Dt::u8, Tag::ab}, eng, q);
  memory dst({{Md, N}, Dt::s32, Tag::ab}, eng, acc);
  impl_->mm.execute(s, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_WEIGHTS, impl_->weights},
                        {DNNL_ARG_DST, dst},
                        {DNNL_ARG_SCRATCHPAD, scratchpad}});
  s.wait();
  float* yp = yp_out;
  const float* ws = impl_->weight_scale.data();
  const int32_t* cs = impl_->column_sum.data();
  const float* bp = impl_->bias.data();
  at::parallel_for(0, M, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m)
      dequantize_row(acc + m * n_, n_, row_scale[m], row_zero[m], cs, ws, bp, yp + m * n_);
  });
}

}  // namespace sieve
