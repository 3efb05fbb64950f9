#include "verify/f4_transformer.h"

#include <algorithm>

#include "sieve/error.h"
#include "verify/phi.h"

namespace sieve::verify {

PreLnLayerImpl::PreLnLayerImpl(int64_t width, int64_t heads, int64_t ff, double drop) {
  self_attn = register_module(
      "self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(width, heads).dropout(drop)));
  linear1 = register_module("linear1", torch::nn::Linear(width, ff));
  linear2 = register_module("linear2", torch::nn::Linear(ff, width));
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  dropout = register_module("dropout", torch::nn::Dropout(drop));
}

at::Tensor PreLnLayerImpl::forward(const at::Tensor& x, const at::Tensor& pad) {
  at::Tensor h = norm1->forward(x);
  at::Tensor a = std::get<0>(self_attn->forward(h, h, h, pad, /*need_weights=*/false));
  at::Tensor y = x + dropout->forward(a);
  at::Tensor f = linear2->forward(dropout->forward(at::gelu(linear1->forward(norm2->forward(y)))));
  return y + dropout->forward(f);
}

F4TransformerImpl::F4TransformerImpl(const F4Options& o, int64_t map_size) : o_(o), size_(map_size) {
  SIEVE_THROW_IF_NOT(o.width > 0 && o.heads > 0 && o.width % o.heads == 0,
                     "F4 width " << o.width << " must be positive and divisible by its " << o.heads << " heads");
  SIEVE_THROW_IF_NOT(o.patch > 0 && map_size % o.patch == 0,
                     "F4 patch size " << o.patch << " must divide the map size " << map_size);
  const int64_t D = o.width, patches = (map_size / o.patch) * (map_size / o.patch);
  patch_embed = register_module(
      "patch_embed", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.augmented ? 3 : 1, D, o.patch).stride(o.patch)));
  cls_token = register_parameter("cls_token", at::randn({1, 1, D}) * 0.02);
  pos_embed = register_parameter("pos_embed", at::randn({1, patches + 1, D}) * 0.02);
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < o.layers; ++l) layers->push_back(PreLnLayer(D, o.heads, o.ff, o.dropout));
  head_fc1 = register_module("head_fc1", torch::nn::Linear(D, D));
  head_fc2 = register_module("head_fc2", torch::nn::Linear(D, 1));
}

at::Tensor F4TransformerImpl::forward(const Maps& m, bool crop) {
  const int64_t P = o_.patch, grid = size_ / P;
  // The patch grid actually used: all of it, or the rows/columns that can hold a valid pair.
  const int64_t rows = crop ? std::min<int64_t>(grid, (m.M.size(1) + P - 1) / P) : grid;
  const int64_t cols = crop ? std::min<int64_t>(grid, (m.M.size(2) + P - 1) / P) : grid;
  at::Tensor img = phi(m, size_, o_.augmented, /*zero_invalid=*/true).slice(2, 0, rows * P).slice(3, 0, cols * P);
  at::Tensor pair = pad_to(m.pair, size_).slice(1, 0, rows * P).slice(2, 0, cols * P);
  const int64_t B = img.size(0);
  at::Tensor x = patch_embed->forward(img).flatten(2).transpose(1, 2);  // [B, rows * cols, D]
  // A patch without any valid pair is ignored by attention; [CLS] never is.
  at::Tensor empty = at::max_pool2d(pair.unsqueeze(1), {P, P}, {P, P}).flatten(1) == 0;
  at::Tensor pad = at::cat({at::zeros({B, 1}, empty.options()), empty}, 1);
  // Positions of the used patches in the full grid (+1 for [CLS]).
  at::Tensor r = at::arange(rows, at::kLong).unsqueeze(1), c = at::arange(cols, at::kLong).unsqueeze(0);
  at::Tensor idx = at::cat({at::zeros({1}, at::kLong), (r * grid + c + 1).flatten()});
  at::Tensor pos = pos_embed.index_select(1, idx.to(pos_embed.device()));
  x = at::cat({cls_token.expand({B, 1, x.size(2)}), x}, 1) + pos;
  x = dropout->forward(norm->forward(x)).transpose(0, 1);  // [L, B, D]
  for (auto& layer : *layers) x = layer->as<PreLnLayer>()->forward(x, pad);
  at::Tensor cls = x[0];
  at::Tensor h = dropout->forward(at::gelu(head_fc1->forward(cls)));
  return at::tanh(head_fc2->forward(h)).squeeze(1);
}

}  // namespace sieve::verify
