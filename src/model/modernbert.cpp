#include "model/modernbert.h"

#include <cmath>
#include <limits>
#include <string>

#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {

ModernNormImpl::ModernNormImpl(int64_t dim, double eps_, bool with_bias) : eps(eps_) {
  weight = register_parameter("weight", at::ones({dim}));
  if (with_bias) bias = register_parameter("bias", at::zeros({dim}));
}

at::Tensor ModernNormImpl::forward(const at::Tensor& x) const {
  return at::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

ModernEmbeddingsImpl::ModernEmbeddingsImpl(const BertConfig& c) {
  tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  norm = register_module("norm", ModernNorm(c.hidden_size, c.layer_norm_eps, c.norm_bias));
}

ModernAttentionImpl::ModernAttentionImpl(const BertConfig& c) {
  const int64_t H = c.hidden_size;
  Wqkv = register_module("Wqkv", torch::nn::Linear(torch::nn::LinearOptions(H, 3 * H).bias(c.attention_bias)));
  Wo = register_module("Wo", torch::nn::Linear(torch::nn::LinearOptions(H, H).bias(c.attention_bias)));
}

ModernMlpImpl::ModernMlpImpl(const BertConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  Wi = register_module("Wi", torch::nn::Linear(torch::nn::LinearOptions(H, 2 * I).bias(c.mlp_bias)));
  Wo = register_module("Wo", torch::nn::Linear(torch::nn::LinearOptions(I, H).bias(c.mlp_bias)));
}

ModernLayerImpl::ModernLayerImpl(const BertConfig& c, int64_t layer_id, double dropout)
    : cfg_(c), global_(layer_id % c.global_attn_every_n_layers == 0), dropout_(dropout) {
  if (layer_id > 0) attn_norm = register_module("attn_norm", ModernNorm(c.hidden_size, c.layer_norm_eps, c.norm_bias));
  attn = register_module("attn", ModernAttention(c));
  mlp_norm = register_module("mlp_norm", ModernNorm(c.hidden_size, c.layer_norm_eps, c.norm_bias));
  mlp = register_module("mlp", ModernMlp(c));
}

at::Tensor ModernLayerImpl::activation(const at::Tensor& x) const {
  if (cfg_.hidden_act == "gelu") return at::gelu(x);
  if (cfg_.hidden_act == "relu") return at::relu(x);
  return at::gelu(x, "tanh");  // gelu_new, gelu_pytorch_tanh
}

namespace {
// Rotary embedding, rotate-half convention: x * cos + [-x2, x1] * sin over the head dimension.
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}
}  // namespace

namespace {
int64_t g_attention_block = 256;
}  // namespace

void set_modernbert_attention_block(int64_t queries) {
  SIEVE_THROW_IF_NOT(queries > 0, "the attention block must hold at least one query");
  g_attention_block = queries;
}
int64_t modernbert_attention_block() { return g_attention_block; }

at::Tensor ModernLayerImpl::attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool train) const {
  const int64_t G = q.size(0), n = q.size(2), dh = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  // A local layer sees keys within `half` positions either side of the query.
  const int64_t half = global_ ? n : cfg_.local_attention / 2;
  const int64_t block = g_attention_block;
  std::vector<at::Tensor> out;
  for (int64_t s = 0; s < n; s += block) {
    const int64_t e = std::min(n, s + block);
    const int64_t ks = std::max<int64_t>(0, s - half), ke = std::min(n, e + half);
    at::Tensor scores = at::matmul(q.narrow(2, s, e - s), k.narrow(2, ks, ke - ks).transpose(-1, -2)).mul_(scale);
    if (!global_) {
      at::Tensor qi = at::arange(s, e, at::TensorOptions().dtype(at::kLong).device(q.device()));
      at::Tensor kj = at::arange(ks, ke, qi.options());
      at::Tensor far = (qi.view({-1, 1}) - kj.view({1, -1})).abs().gt(half);
      scores = scores.masked_fill(far, std::numeric_limits<float>::lowest());
    }
    at::Tensor probs = at::softmax(scores, -1);
    if (train) probs = at::dropout(probs, dropout_, true);
    out.push_back(at::matmul(probs, v.narrow(2, ks, ke - ks)));  // [G, heads, e - s, dh]
  }
  at::Tensor ctx = out.size() == 1 ? out[0] : at::cat(out, 2);
  return ctx.transpose(1, 2).reshape({G * n, cfg_.hidden_size});
}

at::Tensor ModernLayerImpl::forward(const at::Tensor& x, const std::vector<int64_t>& offsets, const at::Tensor& cos,
                                    const at::Tensor& sin) {
  const bool train = is_training() && dropout_ > 0;
  const int64_t T = x.size(0), H = cfg_.hidden_size, nh = cfg_.num_attention_heads, dh = H / nh;
  at::Tensor h = attn_norm ? attn_norm->forward(x) : x;
  at::Tensor qkv = attn->Wqkv->forward(h).view({T, 3, nh, dh});
  std::vector<at::Tensor> ctxs;
  // Consecutive texts of one length (the encoder sorts a batch by length) attend together.
  for (size_t b = 0; b + 1 < offsets.size();) {
    const int64_t n = offsets[b + 1] - offsets[b];
    size_t end = b + 1;
    while (end + 1 < offsets.size() && offsets[end + 1] - offsets[end] == n) ++end;
    const auto G = static_cast<int64_t>(end - b);
    if (n > 0) {
      at::Tensor heads = qkv.narrow(0, offsets[b], G * n).view({G, n, 3, nh, dh}).permute({2, 0, 3, 1, 4});  // [3, G, nh, n, dh]
      at::Tensor c = cos.narrow(0, 0, n), si = sin.narrow(0, 0, n);
      ctxs.push_back(attend(rotate(heads[0], c, si), rotate(heads[1], c, si), heads[2], train));
    }
    b = end;
  }
  at::Tensor ctx = ctxs.empty() ? at::zeros({0, H}, x.options()) : ctxs.size() == 1 ? ctxs[0] : at::cat(ctxs, 0);
  at::Tensor a = attn->Wo->forward(ctx);
  if (train) a = at::dropout(a, dropout_, true);
  at::Tensor y = x + a;
  at::Tensor gates = mlp->Wi->forward(mlp_norm->forward(y));
  const int64_t I = cfg_.intermediate_size;
  at::Tensor m = mlp->Wo->forward(activation(gates.narrow(-1, 0, I)) * gates.narrow(-1, I, I));
  if (train) m = at::dropout(m, dropout_, true);
  return y + m;
}

ModernBertModelImpl::ModernBertModelImpl(const BertConfig& c, double dropout) : cfg_(c), dropout_(dropout) {
  SIEVE_THROW_IF_NOT(c.global_attn_every_n_layers >= 1, "global_attn_every_n_layers must be >= 1");
  SIEVE_THROW_IF_NOT((c.hidden_size / c.num_attention_heads) % 2 == 0, "ModernBERT's head size must be even (rotary)");
  embeddings = register_module("embeddings", ModernEmbeddings(c));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) layers->push_back(ModernLayer(c, l, dropout));
  final_norm = register_module("final_norm", ModernNorm(c.hidden_size, c.layer_norm_eps, c.norm_bias));
}

namespace {
// cos and sin [L, dh] for positions 0..L-1 and base `theta`: frequency k (of dh/2) is
// theta^(-2k/dh), repeated for both halves. Computed in double, then cast.
std::pair<at::Tensor, at::Tensor> rotary_tables(int64_t L, int64_t dh, double theta, const at::TensorOptions& to) {
  at::Tensor inv = at::pow(theta, at::arange(0, dh, 2, at::kDouble).div_(static_cast<double>(dh))).reciprocal_();
  at::Tensor ang = at::outer(at::arange(L, at::kDouble), inv);
  ang = at::cat({ang, ang}, -1);
  return {ang.cos().to(to), ang.sin().to(to)};
}
}  // namespace

at::Tensor ModernBertModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                        const at::Tensor& /*token_type_ids*/) {
  SIEVE_THROW_IF_NOT(input_ids.dim() == 2, "input_ids must be [batch, length]");
  SIEVE_THROW_IF_NOT(input_ids.size(1) <= cfg_.max_position_embeddings,
                     "sequence length " << input_ids.size(1) << " exceeds max_position_embeddings "
                                        << cfg_.max_position_embeddings);
  SIEVE_THROW_IF_NOT(attention_mask.sizes() == input_ids.sizes(), "attention_mask must have input_ids' shape");
  const int64_t B = input_ids.size(0), L = input_ids.size(1), dh = cfg_.hidden_size / cfg_.num_attention_heads;
  // Unpad: the real tokens of every text, packed in order (right padding: a prefix of each row).
  at::Tensor keep = attention_mask.ne(0);
  at::Tensor lengths = keep.sum(1).to(at::kCPU).to(at::kLong).contiguous();
  std::vector<int64_t> offsets(static_cast<size_t>(B) + 1, 0);
  for (int64_t b = 0; b < B; ++b) offsets[b + 1] = offsets[b] + lengths.data_ptr<int64_t>()[b];
  at::Tensor index = keep.flatten().nonzero().squeeze(1);
  SIEVE_THROW_IF_NOT(index.size(0) == offsets.back(), "attention_mask must mark a prefix of each row");
  {
    // Right padding: in row b the real tokens are exactly positions 0 .. length - 1.
    at::Tensor expect = at::arange(L, lengths.options()).view({1, L}).lt(lengths.view({B, 1}));
    SIEVE_THROW_IF_NOT(at::equal(expect, keep.to(at::kCPU)), "ModernBERT needs right-padded rows (real tokens first)");
  }
  at::Tensor x = embeddings->norm->forward(embeddings->tok_embeddings->forward(input_ids.flatten().index_select(0, index)));
  if (is_training() && dropout_ > 0) x = at::dropout(x, dropout_, true);
  auto global_rot = rotary_tables(L, dh, cfg_.global_rope_theta, x.options());
  auto local_rot = rotary_tables(L, dh, cfg_.local_rope_theta, x.options());
  for (const auto& m : *layers) {
    auto* layer = m->as<ModernLayerImpl>();
    const auto& rot = layer->is_global() ? global_rot : local_rot;
    x = layer->forward(x, offsets, rot.first, rot.second);
  }
  x = final_norm->forward(x);
  // Back to [B, L, H] with padded rows 0.
  return at::zeros({B * L, x.size(1)}, x.options()).index_copy(0, index, x).view({B, L, x.size(1)});
}

void ModernBertModelImpl::load_weights(const SafetensorsFile& file) {
  at::NoGradGuard no_grad;
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    const TensorView* t = nullptr;
    for (const std::string& c : {name, "model." + name})
      if (!t && file.contains(c)) t = &file.get(c);
    SIEVE_THROW_IF_NOT(t != nullptr, file.path() << ": tensor '" << name << "' (or 'model." << name << "') is missing");
    copy_tensor(file, *t, item.value());
  }
}

}  // namespace sieve
