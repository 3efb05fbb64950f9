// The BERT encoder as libtorch modules. Submodules are named after the Hugging Face keys
// ("embeddings.word_embeddings", "encoder.layer.3.attention.self.query", ...) so that loading
// safetensors is a name lookup. Internal to sieve (the public API is sieve/encoder.h).
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>
#include <string>

#include "model/encoder_backbone.h"
#include "model/packed_linear.h"
#include "sieve/model.h"

namespace sieve {

class SafetensorsFile;

/// Module options: the HF config plus the dropout used when training.
struct BertOptions {
  BertConfig config;
  double dropout = 0.1;  ///< hidden and attention dropout, active only in train()
};

struct BertEmbeddingsImpl : torch::nn::Module {
  explicit BertEmbeddingsImpl(const BertOptions& opt);
  /// attention_mask [B, L] is read only by the RoBERTa family (positions count real tokens).
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                     const at::Tensor& attention_mask = {});
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  double dropout;
  bool roberta_positions = false;  ///< position ids from the ids (RoBERTa / XLM-R)
  int64_t padding_idx = 0;         ///< RoBERTa's padding_idx (pad_token_id)
};
TORCH_MODULE(BertEmbeddings);

struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertOptions& opt);
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

struct BertDenseLayerNormImpl : torch::nn::Module {
  BertDenseLayerNormImpl(const BertOptions& opt, int64_t in_features);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertDenseLayerNorm);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertOptions& opt);
  BertSelfAttention self{nullptr};
  BertDenseLayerNorm output{nullptr};
};
TORCH_MODULE(BertAttention);

struct BertIntermediateImpl : torch::nn::Module {
  explicit BertIntermediateImpl(const BertOptions& opt);
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertIntermediate);

/// A dense layer: its packed copy (oneDNN) in inference when there is one, else the module.
at::Tensor packed_or_module(const std::shared_ptr<const PackedLinear>& packed, torch::nn::Linear& layer,
                            const at::Tensor& x, bool training);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertOptions& opt);
  /// x: [B, L, H]; mask_bias: [B, 1, 1, L] additive (0 or a large negative number).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask_bias);
  /// Inference on packed tokens: xp [T, H] holds only the real tokens of a [B, L] batch, `index`
  /// [T] their flat positions in it. Dense layers run on the T real rows; attention alone goes
  /// through the padded layout. Returns the packed output [T, H].
  at::Tensor forward_packed(const at::Tensor& xp, const at::Tensor& index, int64_t B, int64_t L,
                            const at::Tensor& mask_bias);
  /// Builds the fused query/key/value weight used by inference and, on the CPU, the layers packed
  /// for oneDNN at `precision`; call after weights change.
  int prepare_inference(Precision precision = Precision::Fp32, int int8_levels = 0);
  /// True when prepare_inference() has run (forward_packed may be used).
  bool packed_ready() const { return qkv_weight_.defined(); }

  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertDenseLayerNorm output{nullptr};

 private:
  at::Tensor activation(const at::Tensor& x) const;
  at::Tensor attend(const at::Tensor& qkv, int64_t B, int64_t L, const at::Tensor& mask_bias) const;
  at::Tensor feed_forward(const at::Tensor& ctx, const at::Tensor& x);
  BertConfig cfg_;
  double dropout_;
  at::Tensor qkv_weight_, qkv_bias_;  // inference-only fused copies (not parameters)
  // Inference on the CPU: query/key/value, attention output, intermediate, output (null elsewhere).
  std::shared_ptr<const PackedLinear> qkv_packed_, attn_out_packed_, inter_packed_, out_packed_;
  at::Tensor dense(const std::shared_ptr<const PackedLinear>& packed, torch::nn::Linear& layer, const at::Tensor& x) {
    return packed_or_module(packed, layer, x, is_training());
  }
};
TORCH_MODULE(BertLayer);

struct BertEncoderStackImpl : torch::nn::Module {
  explicit BertEncoderStackImpl(const BertOptions& opt);
  torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(BertEncoderStack);

/// The BERT backbone (no pooler: sieve pools token states itself). Also runs the RoBERTa family
/// (model_type "roberta", "xlm-roberta"): the same layers, positions computed from the ids.
struct BertModelImpl : EncoderBackbone {
  explicit BertModelImpl(const BertOptions& opt);
  /// input_ids, attention_mask, token_type_ids: [B, L] int64 (token_type_ids may be undefined).
  /// Returns the final-layer token states [B, L, H]; in inference with padding, padded rows are 0.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     const at::Tensor& token_type_ids = {}) override;
  /// Copies weights from a safetensors file (keys with or without "bert." / "roberta."); every parameter must
  /// be present with the right shape, else sieve::Error names the tensor.
  void load_weights(const SafetensorsFile& file) override;
  /// Prepares inference-only caches (fused QKV); call after load_weights / training.
  int prepare_inference(Precision precision = Precision::Fp32, int int8_levels = 0) override;
  at::Tensor word_embeddings() const override { return embeddings->word_embeddings->weight; }

  const BertConfig& config() const override { return opt_.config; }

  BertEmbeddings embeddings{nullptr};
  BertEncoderStack encoder{nullptr};

 private:
  BertOptions opt_;
};
TORCH_MODULE(BertModel);

/// Pools token states [B, L, H] under mask [B, L] into L2-normalised keys [B, H].
at::Tensor pool_and_normalize(const at::Tensor& states, const at::Tensor& attention_mask, Pooling pooling);

}  // namespace sieve
