#include "model/native_attention.h"

#include <algorithm>
#include <cstring>
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

// The calling thread's scratch, grown as needed and kept (the calls of a thread run one after
// another; fresh buffers per call cost page faults).
uint8_t* thread_scratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> data;
  thread_local size_t size = 0;
  if (size < bytes + kAlign) {
    data.reset(new uint8_t[bytes + kAlign]);
    size = bytes + kAlign;
  }
  auto p = reinterpret_cast<uintptr_t>(data.get());
  return reinterpret_cast<uint8_t*>((p + kAlign - 1) / kAlign * kAlign);
}

// One head's rows of queries, keys or values ([n, dh] at `src`, rows `stride` apart) into a
// contiguous block [np, dh], padded rows 0; as floats or bfloat16.
template <class T>
SIEVE_MULTIVERSION void gather_head(const float* src, int64_t stride, int64_t n, int64_t np, int64_t dh, T* out) {
  for (int64_t j = 0; j < n; ++j) {
    const float* row = src + j * stride;
    T* o = out + j * dh;
    if constexpr (sizeof(T) == sizeof(float)) {
      std::memcpy(o, row, static_cast<size_t>(dh) * sizeof(float));
    } else {
#pragma omp simd
      for (int64_t d = 0; d < dh; ++d) o[d] = to_bf16_bits(row[d]);
    }
  }
  std::memset(out + n * dh, 0, static_cast<size_t>((np - n) * dh) * sizeof(T));
}

// Softmax of one row of scores over its first n entries (scaled, plus bias[positions[j]] where
// bias is not null), as T; entries n..np are 0.
template <class T>
SIEVE_MULTIVERSION void softmax_row(const float* s, int64_t n, int64_t np, float scale, const float* bias,
                                    const int64_t* positions, T* p, float* tmp) {
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

}  // namespace

struct NativeAttention::Products {
  dnnl::matmul scores, context;
  memory::desc q, k, s, p, v, c;
  size_t scratchpad = 0;
};

NativeAttention::NativeAttention(int64_t heads, int64_t head_dim, int64_t max_tokens, bool bf16)
    : heads_(heads), dh_(head_dim), max_tokens_(max_tokens), bf16_(bf16) {
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
  pr.c = memory::desc({H, N, D}, Dt::f32, Tag::abc);
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
  if (n == 0) return;
  SIEVE_ASSERT(n <= max_tokens_);
  const int64_t np = padded(n), H = heads_ * dh_;
  const Products& pr = products(np);
  const size_t e = bf16_ ? sizeof(uint16_t) : sizeof(float);
  const size_t block = aligned(static_cast<size_t>(heads_ * np * dh_) * e);
  const size_t scores = aligned(static_cast<size_t>(heads_ * np * np) * sizeof(float));
  const size_t weights = bf16_ ? aligned(static_cast<size_t>(heads_ * np * np) * e) : 0;  // fp32: in place
  const size_t context = aligned(static_cast<size_t>(heads_ * np * dh_) * sizeof(float));
  const size_t row = aligned(static_cast<size_t>(np) * sizeof(float));
  uint8_t* base = thread_scratch(3 * block + scores + weights + context + row + aligned(pr.scratchpad));
  uint8_t *q = base, *k = q + block, *v = k + block, *s = v + block, *p = bf16_ ? s + scores : s;
  uint8_t *c = s + scores + weights, *tmp = c + context, *pad = tmp + row;
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t at = static_cast<size_t>(h * np * dh_) * e;
    const float* src = qkv + h * dh_;
    if (bf16_) {
      gather_head(src, stride, n, np, dh_, reinterpret_cast<uint16_t*>(q + at));
      gather_head(src + H, stride, n, np, dh_, reinterpret_cast<uint16_t*>(k + at));
      gather_head(src + 2 * H, stride, n, np, dh_, reinterpret_cast<uint16_t*>(v + at));
    } else {
      gather_head(src, stride, n, np, dh_, reinterpret_cast<float*>(q + at));
      gather_head(src + H, stride, n, np, dh_, reinterpret_cast<float*>(k + at));
      gather_head(src + 2 * H, stride, n, np, dh_, reinterpret_cast<float*>(v + at));
    }
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
          softmax_row(sf + at, n, np, scale, b, bias.positions, pb, tf);
        else
          std::memset(pb, 0, static_cast<size_t>(np) * sizeof(uint16_t));
      } else {
        if (i < n)
          softmax_row(sf + at, n, np, scale, b, bias.positions, sf + at, tf);
        else
          std::memset(sf + at, 0, static_cast<size_t>(np) * sizeof(float));
      }
    }
  pr.context.execute(st, {{DNNL_ARG_SRC, mp}, {DNNL_ARG_WEIGHTS, mv}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
  st.wait();
  const auto* cf = reinterpret_cast<const float*>(c);
  for (int64_t h = 0; h < heads_; ++h)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(ctx + j * ctx_stride + h * dh_, cf + (h * np + j) * dh_, static_cast<size_t>(dh_) * sizeof(float));
}

}  // namespace sieve
