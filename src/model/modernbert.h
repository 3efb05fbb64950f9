// ModernBERT (Warner et al. 2024; model_type "modernbert", e.g. GTE-ModernBERT-base) as libtorch
// modules named after Hugging Face's keys ("embeddings.tok_embeddings", "layers.3.attn.Wqkv",
// "final_norm", ...). Pre-norm layers, rotary positions, alternating global and sliding-window
// attention, a GeGLU feed-forward. Runs unpadded, as the reference implementation does: the
// batch's real tokens are packed into one [T, H] matrix for every projection, and attention runs
// per text in blocks of queries, so that a sliding-window layer costs O(n * window) time and
// memory rather than O(n^2), and a global layer holds one block of scores at a time (long inputs,
// 8,192 tokens, without a quadratic mask). Internal to sieve.
#pragma once

#include <ATen/ATen.h>

#include <vector>
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
  /// x [T, H]: the real tokens of the batch's texts, packed one text after another; `offsets`
  /// (B + 1 entries) says where each text starts. cos/sin [Lmax, head_dim] of this layer's rotary
  /// base, for positions 0.. of every text.
  at::Tensor forward(const at::Tensor& x, const std::vector<int64_t>& offsets, const at::Tensor& cos,
                     const at::Tensor& sin);
  bool is_global() const { return global_; }

  ModernNorm attn_norm{nullptr};  ///< absent (identity) on layer 0
  ModernAttention attn{nullptr};
  ModernNorm mlp_norm{nullptr};
  ModernMlp mlp{nullptr};

 private:
  at::Tensor activation(const at::Tensor& x) const;
  /// Attention of G texts of one length n: q, k, v [G, heads, n, head_dim] (rotated) -> [G * n, H].
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool train) const;
  BertConfig cfg_;
  bool global_;
  double dropout_;
};
TORCH_MODULE(ModernLayer);

/// Queries per attention block (default 256). A test hook: results do not depend on it beyond
/// float rounding. Process-wide; not thread-safe against running models.
void set_modernbert_attention_block(int64_t queries);
int64_t modernbert_attention_block();

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
