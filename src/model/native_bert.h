// The BERT-family forward pass (BERT, RoBERTa / XLM-R, MPNet) for CPU inference without libtorch's per-operation dispatch (issue 44):
// every layer is four oneDNN products on the real tokens only (query/key/value fused, the
// attention output, the two feed-forward ones with GELU fused into the first; weights packed once,
// PackedLinear), attention's two products per sequence (NativeAttention) and loops of sieve's own
// for the rest (embeddings, LayerNorm, softmax), on one OpenMP team, with its scratch kept per
// thread. A batch runs in groups of whole sequences, each group every layer on one thread (its
// rows stay in that core's cache and no product waits on the team); a batch with too few
// sequences for that (batch-1 queries) runs each part on the whole team. The products add the residual into the states themselves; in bf16 the LayerNorm writes
// the next product's input in bfloat16 and the products before attention and after GELU write
// bfloat16, so no pass of its own converts or adds (each such pass reads activations that
// outgrow the cache at batch 32). The libtorch modules (bert.h) stay the reference
// and the training path; the two agree within float rounding (tests/unit/model/test_native_bert.cpp).
// Internal to sieve's model code.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/native_attention.h"
#include "model/packed_linear.h"
#include "sieve/encoder.h"
#include "sieve/model.h"

namespace sieve {

struct EncoderBackbone;

/// Immutable once built; forward() may run on several threads at once.
class NativeBert {
 public:
  /// Copies the weights of a loaded model of the BERT family (model_type bert, roberta,
  /// xlm-roberta: BertModelImpl; mpnet: MpnetModelImpl, with its relative position bias) and
  /// packs its dense layers at `precision` (`int8_levels` as PackedLinear's). sieve::Error for
  /// another family or activation.
  NativeBert(const EncoderBackbone& model, Precision precision, int int8_levels = 0);
  ~NativeBert();

  /// Whether the native pass can run this configuration (bert, roberta, xlm-roberta or mpnet,
  /// with gelu, gelu_new or relu).
  static bool supports(const BertConfig& config);

  /// Final-layer token states of a batch: ids, mask and types [B, L] row-major (types may be
  /// null: all 0; families without token types ignore them); out [B, L, H], padded rows 0 (as
  /// the libtorch path leaves them).
  void forward(const int64_t* ids, const int64_t* mask, const int64_t* types, int64_t batch, int64_t length,
               float* out) const;
  const BertConfig& config() const { return cfg_; }

 private:
  struct Layer;
  /// Consecutive sequences of a call: their rows are first[0] .. first[sequences] of x.
  struct Slice {
    const int64_t* first = nullptr;
    int64_t sequences = 0;
    float* x = nullptr;                  ///< every row's states [T, H]
    const int64_t* positions = nullptr;  ///< every row's position in its sequence
  };
  /// The embeddings' LayerNorm and every layer on a slice's rows, on `threads` threads.
  void run_layers(const Slice& slice, int threads) const;
  BertConfig cfg_;
  std::vector<float> word_, position_, type_, emb_gamma_, emb_beta_;  ///< type_ empty: no token types
  bool roberta_positions_ = false;  ///< positions from the ids (RoBERTa, MPNet), else 0..L-1
  int64_t max_length_ = 0;          ///< the longest sequence the position table allows
  std::vector<float> relative_;     ///< MPNet: [heads, 2 max_length - 1] bias by key - query; else empty
  std::vector<Layer> layers_;
  std::unique_ptr<NativeAttention> attention_;
  bool bf16_ = false;  ///< the activations between products in bfloat16 (Precision::Bf16)
  /// Attention's products in bfloat16: bf16, and int8 where the CPU has bf16 products (AMX or
  /// AVX-512 BF16; its query/key/value product then writes bfloat16, the context stays floats).
  bool bf16_attention_ = false;

 public:
  /// Whether the attention runs on bfloat16 operands (bf16, and int8 where the CPU has bf16
  /// products): part of the keys' numeric recipe (Encoder::key_grid).
  bool bf16_attention() const { return bf16_attention_; }

 private:
};

}  // namespace sieve
