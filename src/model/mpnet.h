// MPNet (Song et al. 2020; model_type "mpnet", e.g. all-mpnet-base-v2) as libtorch modules named
// after Hugging Face's keys ("encoder.layer.3.attention.attn.q", "encoder.relative_attention_bias",
// ...). BERT's post-norm layers and RoBERTa's position ids, plus a learned relative position bias
// shared by all layers: T5-style bidirectional buckets (half the buckets per direction, the
// first half of those exact, the rest logarithmic up to a distance of 128). Padded batches with
// masks (no packed fast path). For CPU inference the dense layers run through oneDNN over weights
// packed once (fp32 or int8, as BERT's do: model/packed_linear.h). Internal to sieve.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>

#include "model/bert.h"
#include "model/encoder_backbone.h"
#include "model/packed_linear.h"

namespace sieve {

struct MpnetSelfAttentionImpl : torch::nn::Module {
  explicit MpnetSelfAttentionImpl(const BertOptions& opt);
  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
};
TORCH_MODULE(MpnetSelfAttention);

struct MpnetAttentionImpl : torch::nn::Module {
  explicit MpnetAttentionImpl(const BertOptions& opt);
  MpnetSelfAttention attn{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(MpnetAttention);

struct MpnetLayerImpl : torch::nn::Module {
  explicit MpnetLayerImpl(const BertOptions& opt);
  /// x [B, L, H]; bias [B, nh, L, L]: the relative position bias plus the padding mask.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& bias);
  /// Packs the dense layers (q, k and v as one [3H, H] product; o; the feed-forward pair) for
  /// oneDNN at `precision`; call after weights change. Training keeps libtorch's layers.
  int prepare_inference(Precision precision, int int8_levels = 0);
  MpnetAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertDenseLayerNorm output{nullptr};

 private:
  at::Tensor dense(const std::shared_ptr<const PackedLinear>& packed, torch::nn::Linear& layer, const at::Tensor& x) {
    return packed_or_module(packed, layer, x, is_training());
  }
  BertConfig cfg_;
  double dropout_;
  std::shared_ptr<const PackedLinear> qkv_packed_, o_packed_, inter_packed_, out_packed_;
};
TORCH_MODULE(MpnetLayer);

struct MpnetEncoderStackImpl : torch::nn::Module {
  explicit MpnetEncoderStackImpl(const BertOptions& opt);
  torch::nn::ModuleList layer{nullptr};
  torch::nn::Embedding relative_attention_bias{nullptr};  ///< [num_buckets, heads]
};
TORCH_MODULE(MpnetEncoderStack);

struct MpnetModelImpl : EncoderBackbone {
  explicit MpnetModelImpl(const BertOptions& opt);
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     const at::Tensor& token_type_ids = {}) override;
  /// Keys with or without "mpnet.".
  void load_weights(const SafetensorsFile& file) override;
  at::Tensor word_embeddings() const override { return embeddings->word_embeddings->weight; }
  const BertConfig& config() const override { return opt_.config; }
  int prepare_inference(Precision precision = Precision::Fp32, int int8_levels = 0) override;

  BertEmbeddings embeddings{nullptr};
  MpnetEncoderStack encoder{nullptr};

 private:
  BertOptions opt_;
};
TORCH_MODULE(MpnetModel);

/// MPNet's bucket of each relative position (key - query) [L, L] -> int64, `num_buckets` in
/// all, distances up to `max_distance` told apart; computed in float32 as the reference does.
at::Tensor mpnet_relative_buckets(const at::Tensor& relative_position, int64_t num_buckets, int64_t max_distance = 128);

}  // namespace sieve
