// Multi-head self-attention of one sequence for the native pass (issue 44): its queries, keys and
// values gathered per head into contiguous blocks, the two batched products (scores, context) by
// oneDNN's fixed-shape kernels (brgemm: AVX-512, AMX in bf16), the masked softmax between them
// by sieve's own loop. The products take a primitive per token count, made on first use and kept;
// counts above 32 are padded to a multiple of 16 (padded keys get weight 0, padded queries are
// dropped), so a model meets at most 32 + max_length / 16 shapes. Internal to sieve's model code.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace sieve {

/// Immutable once built (its primitives are made lazily under a lock); attend() may run on
/// several threads at once, each with its own scratch.
class NativeAttention {
 public:
  /// `bf16`: queries, keys, values, the softmax's weights and the context in bfloat16 (sums in
  /// fp32; attend() takes and writes bfloat16 rows), or with `float_context` the context written
  /// as floats (the int8 pass's: its next product quantizes floats); else fp32 throughout.
  /// `max_tokens`: the longest sequence it will see.
  NativeAttention(int64_t heads, int64_t head_dim, int64_t max_tokens, bool bf16, bool float_context = false);
  ~NativeAttention();
  NativeAttention(const NativeAttention&) = delete;
  NativeAttention& operator=(const NativeAttention&) = delete;

  /// One sequence of n tokens: `qkv` rows [n, 3H] (query, key, value of width H = heads x
  /// head_dim each, rows `qkv_stride` floats apart) -> ctx rows [n, H] (`ctx_stride` apart):
  /// softmax(q k^T * scale) v per head. Runs on the calling thread's OpenMP team (one thread
  /// inside a parallel region). fp32 attention only.
  void attend(const float* qkv, int64_t qkv_stride, int64_t n, float scale, float* ctx, int64_t ctx_stride) const {
    attend(qkv, qkv_stride, n, scale, ctx, ctx_stride, RelativeBias{});
  }
  /// The same in bfloat16 (bf16 attention only): rows of bfloat16 bits in and out, or out as
  /// floats (float_context).
  void attend(const uint16_t* qkv, int64_t qkv_stride, int64_t n, float scale, uint16_t* ctx, int64_t ctx_stride) const {
    attend(qkv, qkv_stride, n, scale, ctx, ctx_stride, RelativeBias{});
  }
  void attend(const uint16_t* qkv, int64_t qkv_stride, int64_t n, float scale, float* ctx, int64_t ctx_stride) const {
    attend(qkv, qkv_stride, n, scale, ctx, ctx_stride, RelativeBias{});
  }

  /// A bias added to the scaled scores that depends on the head and on the distance between key
  /// and query (MPNet's): score(h, i, j) += table[h * row + center + positions[j] - positions[i]].
  /// `positions`: the n tokens' positions in their sequence; the table must cover every distance.
  struct RelativeBias {
    const float* table = nullptr;  ///< null: no bias
    int64_t row = 0, center = 0;
    const int64_t* positions = nullptr;
  };
  void attend(const float* qkv, int64_t qkv_stride, int64_t n, float scale, float* ctx, int64_t ctx_stride,
              const RelativeBias& bias) const;
  void attend(const uint16_t* qkv, int64_t qkv_stride, int64_t n, float scale, uint16_t* ctx, int64_t ctx_stride,
              const RelativeBias& bias) const;
  void attend(const uint16_t* qkv, int64_t qkv_stride, int64_t n, float scale, float* ctx, int64_t ctx_stride,
              const RelativeBias& bias) const;

  /// The token count the products run at for n tokens (n up to 32, else n rounded up to 16).
  static int64_t padded(int64_t n) { return n <= 32 ? n : (n + 15) / 16 * 16; }

 private:
  struct Products;
  const Products& products(int64_t padded_n) const;
  template <class T, class U>
  void run(const T* qkv, int64_t qkv_stride, int64_t n, float scale, U* ctx, int64_t ctx_stride,
           const RelativeBias& bias) const;
  int64_t heads_, dh_, max_tokens_;
  bool bf16_, float_context_;
  std::unique_ptr<std::atomic<const Products*>[]> slots_;
  mutable std::mutex making_;
  mutable std::vector<std::unique_ptr<Products>> made_;
};

}  // namespace sieve
