#include "verify/f4_transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

at::Tensor PreLnLayerImpl::forward_cls(const at::Tensor& x, const at::Tensor& pad) {
  at::Tensor h = norm1->forward(x);  // [B, L, D]
  return cls_tail(h.select(1, 0), x.select(1, 0), h, pad);
}

at::Tensor PreLnLayerImpl::query(const at::Tensor& h_cls) const {
  const int64_t D = h_cls.size(1), H = self_attn->options.num_heads(), dh = D / H;
  at::Tensor W = self_attn->in_proj_weight, b = self_attn->in_proj_bias;  // rows: q, k, v
  at::Tensor q = at::addmm(b.slice(0, 0, D), h_cls, W.slice(0, 0, D).t()).view({h_cls.size(0), H, dh});
  return q / std::sqrt(static_cast<double>(dh));
}

at::Tensor PreLnLayerImpl::folded_query(const at::Tensor& h_cls) const {
  const int64_t D = h_cls.size(-1), H = self_attn->options.num_heads(), dh = D / H;
  at::Tensor q = query(h_cls.view({-1, D}));  // [B, H, dh]
  at::Tensor Wk = self_attn->in_proj_weight.slice(0, D, 2 * D).view({H, dh, D});
  // The key bias adds q . b_k to every score of a row, which the softmax cancels.
  at::Tensor u = at::matmul(q.unsqueeze(2), Wk).squeeze(2);  // [B, H, D]
  return h_cls.dim() == 1 ? u[0] : u;
}

at::Tensor PreLnLayerImpl::forward_from_attended(const at::Tensor& x_cls, const at::Tensor& z) {
  const int64_t B = z.size(0), H = z.size(1), D = z.size(2), dh = D / H;
  at::Tensor W = self_attn->in_proj_weight, b = self_attn->in_proj_bias;
  at::Tensor Wv = W.slice(0, 2 * D).view({H, dh, D});
  // The attended value W_v,h z_h + b_v,h (the weights of a row sum to one).
  at::Tensor v = at::matmul(Wv, z.unsqueeze(3)).squeeze(3).reshape({B, D}) + b.slice(0, 2 * D);
  at::Tensor y = x_cls + self_attn->out_proj->forward(v);
  return y + linear2->forward(at::gelu(linear1->forward(norm2->forward(y))));
}

at::Tensor PreLnLayerImpl::cls_tail(const at::Tensor& q_rows, const at::Tensor& x_cls, const at::Tensor& h,
                                    const at::Tensor& pad) {
  at::Tensor u = folded_query(q_rows);                                     // [B, H, D]
  at::Tensor s = at::matmul(u, h.transpose(1, 2));                         // [B, H, L]
  s = s.masked_fill(pad.unsqueeze(1), -std::numeric_limits<double>::infinity());
  return forward_from_attended(x_cls, at::bmm(at::softmax(s, -1), h));  // z: [B, H, D]
}

F4TransformerImpl::F4TransformerImpl(const F4Options& o, int64_t map_size) : o_(o), size_(map_size) {
  SIEVE_THROW_IF_NOT(o.width > 0 && o.heads > 0 && o.width % o.heads == 0,
                     "F4 width " << o.width << " must be positive and divisible by its " << o.heads << " heads");
  SIEVE_THROW_IF_NOT(o.patch > 0 && map_size % o.patch == 0,
                     "F4 patch size " << o.patch << " must divide the map size " << map_size);
  const int64_t D = o.width, patches = (map_size / o.patch) * (map_size / o.patch);
  patch_embed = register_module(
      "patch_embed", torch::nn::Conv2d(torch::nn::Conv2dOptions(phi_channels(o.augmented, o.exact_match, !o.cue_ids.empty()), D, o.patch).stride(o.patch)));
  cls_token = register_parameter("cls_token", at::randn({1, 1, D}) * 0.02);
  pos_embed = register_parameter("pos_embed", at::randn({1, patches + 1, D}) * 0.02);
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int l = 0; l < o.layers; ++l) layers->push_back(PreLnLayer(D, o.heads, o.ff, o.dropout));
  head_fc1 = register_module("head_fc1", torch::nn::Linear(D, D));
  head_fc2 = register_module("head_fc2", torch::nn::Linear(D, 1));
}

std::pair<int64_t, int64_t> F4TransformerImpl::used_grid(const Maps& m) const {
  const int64_t P = o_.patch, grid = size_ / P;
  return {std::min<int64_t>(grid, (m.M.size(1) + P - 1) / P), std::min<int64_t>(grid, (m.M.size(2) + P - 1) / P)};
}

std::pair<at::Tensor, at::Tensor> F4TransformerImpl::embed(const Maps& m, int64_t rows, int64_t cols, bool as_matmul) {
  const int64_t P = o_.patch, grid = size_ / P, D = o_.width;
  at::Tensor img = phi(m, rows * P, cols * P, o_.augmented, /*zero_invalid=*/true, o_.exact_match, &o_.cue_ids);
  at::Tensor pair = pad_to(m.pair, rows * P, cols * P);
  const int64_t B = img.size(0), C = img.size(1);
  at::Tensor x;
  if (as_matmul) {  // each patch a row of C*P*P values in the conv weight's (c, y, x) order
    at::Tensor patches =
        img.view({B, C, rows, P, cols, P}).permute({0, 2, 4, 1, 3, 5}).reshape({B * rows * cols, C * P * P});
    x = at::addmm(patch_embed->bias, patches, patch_embed->weight.view({D, C * P * P}).t()).view({B, rows * cols, D});
  } else {
    x = patch_embed->forward(img).flatten(2).transpose(1, 2);  // [B, rows * cols, D]
  }
  // A patch without any valid pair is ignored by attention; [CLS] never is.
  at::Tensor empty = at::max_pool2d(pair.unsqueeze(1), {P, P}, {P, P}).flatten(1) == 0;
  at::Tensor pad = at::cat({at::zeros({B, 1}, empty.options()), empty}, 1);
  // Positions of the used patches in the full grid (+1 for [CLS]).
  at::Tensor r = at::arange(rows, at::kLong).unsqueeze(1), c = at::arange(cols, at::kLong).unsqueeze(0);
  at::Tensor idx = at::cat({at::zeros({1}, at::kLong), (r * grid + c + 1).flatten()});
  at::Tensor pos = pos_embed.index_select(1, idx.to(pos_embed.device()));
  x = at::cat({cls_token.expand({B, 1, D}), x}, 1) + pos;
  return {norm->forward(x), pad};
}

at::Tensor F4TransformerImpl::forward(const Maps& m, bool crop) {
  const int64_t grid = size_ / o_.patch;
  auto [rows, cols] = crop ? used_grid(m) : std::pair<int64_t, int64_t>{grid, grid};
  auto [x, pad] = embed(m, rows, cols, /*as_matmul=*/false);
  x = dropout->forward(x).transpose(0, 1);  // [L, B, D]
  for (auto& layer : *layers) x = layer->as<PreLnLayer>()->forward(x, pad);
  at::Tensor cls = x[0];
  at::Tensor h = dropout->forward(at::gelu(head_fc1->forward(cls)));
  return at::tanh(head_fc2->forward(h)).squeeze(1);
}

at::Tensor F4TransformerImpl::score(const Maps& m) {
  if (layers->size() == 1 && !o_.exact_match && o_.cue_ids.empty()) {  // the fast path knows phi's three channels only
    at::Tensor s = score_single_layer(m);
    if (s.defined()) return s;
  }
  auto [rows, cols] = used_grid(m);
  auto [x, pad] = embed(m, rows, cols, /*as_matmul=*/true);
  at::Tensor cls;
  if (layers->is_empty()) {
    cls = x.select(1, 0);
  } else {
    const size_t last = layers->size() - 1;
    if (last > 0) {
      at::Tensor t = x.transpose(0, 1);
      for (size_t l = 0; l < last; ++l) t = layers[l]->as<PreLnLayer>()->forward(t, pad);
      x = t.transpose(0, 1);
    }
    cls = layers[last]->as<PreLnLayer>()->forward_cls(x, pad);
  }
  return at::tanh(head_fc2->forward(at::gelu(head_fc1->forward(cls)))).squeeze(1);
}

}  // namespace sieve::verify
