// F4: a tiny Transformer over 8x8 patches of phi(M) (paper.md, "F4"; sizes from
// paper-reference-code.md). Parameter names follow PyTorch's nn.TransformerEncoderLayer.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

/// One pre-LN encoder layer: x + Drop(MHA(LN1 x)), then x + Drop(W2 Drop(GELU(W1 LN2 x))).
class PreLnLayerImpl : public torch::nn::Module {
 public:
  PreLnLayerImpl(int64_t width, int64_t heads, int64_t ff, double dropout);
  /// x: [L, B, D] (sequence first); pad: [B, L] bool, true = ignore.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& pad);
  /// The same layer's output at position 0 only ([CLS]), for inference: x [B, L, D] (batch
  /// first) -> [B, D]. Attention from one query needs no projected keys or values per position:
  /// scores are h_j . (W_k^T q) + q . b_k, and the attended value is W_v (sum_j a_j h_j) + b_v.
  /// Dropout is not applied.
  at::Tensor forward_cls(const at::Tensor& x, const at::Tensor& pad);
  /// u = W_k,h^T q_h for [CLS] rows h_cls = norm1(x_cls) ([B, D] -> [B, H, D]; [D] -> [H, D]):
  /// the attention score of position j is then h_j . u_h (up to a per-row constant).
  at::Tensor folded_query(const at::Tensor& h_cls) const;
  /// The layer's output at [CLS] from its input x_cls ([B or 1, D]) and the attention-weighted
  /// sums z [B, H, D] of norm1 of the positions, per head.
  at::Tensor forward_from_attended(const at::Tensor& x_cls, const at::Tensor& z);
  at::Tensor norm1_weight() const { return norm1->weight.contiguous(); }
  at::Tensor norm1_bias() const { return norm1->bias.contiguous(); }
  double norm1_eps() const { return norm1->options.eps(); }

 private:
  /// The scaled attention query of [CLS] rows h_cls [B, D] -> [B, H, D / H].
  at::Tensor query(const at::Tensor& h_cls) const;
  /// [CLS]'s output from norm1 of its rows q_rows [B, D], its input x_cls [B, D], h, and pad.
  at::Tensor cls_tail(const at::Tensor& q_rows, const at::Tensor& x_cls, const at::Tensor& h, const at::Tensor& pad);

  torch::nn::MultiheadAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(PreLnLayer);

class F4TransformerImpl : public torch::nn::Module {
 public:
  F4TransformerImpl(const F4Options& o, int64_t map_size);
  /// Scores in [-1, 1], shape [B]. `crop`: run only the patch rows and columns the batch's maps
  /// can fill (the others are empty, hence masked, and cannot reach [CLS]); the result is the same
  /// as over all S/patch x S/patch patches, only cheaper.
  at::Tensor forward(const Maps& m, bool crop = true);
  /// Inference: forward() without dropout, computed for [CLS] alone in the last layer (the only
  /// output the head reads) and with the patch embedding as matrix products. Equal to forward()
  /// in eval mode up to float rounding; several times cheaper at the paper's sizes.
  at::Tensor score(const Maps& m);

 private:
  /// score() for the paper's single layer and prefix masks (the maps query_maps() builds); an
  /// undefined tensor when those do not hold. See the .cpp for the algebra.
  at::Tensor score_single_layer(const Maps& m);
  /// Patch rows and columns that can hold a valid pair of `m`.
  std::pair<int64_t, int64_t> used_grid(const Maps& m) const;
  /// [CLS] + patch tokens with positions, after the input LayerNorm: [B, 1 + rows * cols, D],
  /// and the attention padding mask [B, 1 + rows * cols] (true = empty patch).
  std::pair<at::Tensor, at::Tensor> embed(const Maps& m, int64_t rows, int64_t cols, bool as_matmul);

  F4Options o_;
  int64_t size_;
  torch::nn::Conv2d patch_embed{nullptr};
  at::Tensor cls_token, pos_embed;
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Linear head_fc1{nullptr}, head_fc2{nullptr};
};
TORCH_MODULE(F4Transformer);

}  // namespace sieve::verify
