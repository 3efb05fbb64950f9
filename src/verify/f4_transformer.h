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

 private:
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

 private:
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
