// ModernBERT (Warner et al. 2024; model_type "modernbert", e.g. GTE-ModernBERT-base) as libtorch
// modules named after Hugging Face's keys ("embeddings.tok_embeddings", "layers.3.attn.Wqkv",
// "final_norm", ...). Pre-norm layers, rotary positions, alternating global and sliding-window
// attention, a GeGLU feed-forward. Runs on padded batches with masks: the unpadded long-input
// path of the reference implementation is not done. Internal to sieve.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "model/encoder_backbone.h"
#include "sieve/model.h"

namespace sieve {

/// LayerNorm whose bias is optional (ModernBERT's norm_bias); parameters "weight" [, "bias"].
struct ModernNormImpl : torch::nn::Module {
  ModernNormImpl(int64_t dim, double eps, bool bias);
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor weight, bias;
  double eps;
};
TORCH_MODULE(ModernNorm);

struct ModernEmbeddingsImpl : torch::nn::Module {
  explicit ModernEmbeddingsImpl(const BertConfig& c);
  torch::nn::Embedding tok_embeddings{nullptr};
  ModernNorm norm{nullptr};
};
TORCH_MODULE(ModernEmbeddings);

struct ModernAttentionImpl : torch::nn::Module {
  explicit ModernAttentionImpl(const BertConfig& c);
  torch::nn::Linear Wqkv{nullptr}, Wo{nullptr};
};
TORCH_MODULE(ModernAttention);

struct ModernMlpImpl : torch::nn::Module {
  explicit ModernMlpImpl(const BertConfig& c);
  torch::nn::Linear Wi{nullptr}, Wo{nullptr};
};
TORCH_MODULE(ModernMlp);

struct ModernLayerImpl : torch::nn::Module {
  ModernLayerImpl(const BertConfig& c, int64_t layer_id, double dropout);
  /// x [B, L, H]; cos/sin [L, head_dim] of this layer's rotary base; bias [B, 1, L, L] or
  /// [B, 1, 1, L] additive (0 or the lowest float).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& bias);
  bool is_global() const { return global_; }

  ModernNorm attn_norm{nullptr};  ///< absent (identity) on layer 0
  ModernAttention attn{nullptr};
  ModernNorm mlp_norm{nullptr};
  ModernMlp mlp{nullptr};

 private:
  at::Tensor activation(const at::Tensor& x) const;
  BertConfig cfg_;
  bool global_;
  double dropout_;
};
TORCH_MODULE(ModernLayer);

struct ModernBertModelImpl : EncoderBackbone {
  ModernBertModelImpl(const BertConfig& c, double dropout);
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     const at::Tensor& token_type_ids = {}) override;
  /// Keys with or without "model." (ModernBertForMaskedLM's prefix).
  void load_weights(const SafetensorsFile& file) override;
  at::Tensor word_embeddings() const override { return embeddings->tok_embeddings->weight; }
  const BertConfig& config() const override { return cfg_; }

  ModernEmbeddings embeddings{nullptr};
  torch::nn::ModuleList layers{nullptr};
  ModernNorm final_norm{nullptr};

 private:
  BertConfig cfg_;
  double dropout_;
};
TORCH_MODULE(ModernBertModel);

}  // namespace sieve
