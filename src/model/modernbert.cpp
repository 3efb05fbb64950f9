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

at::Tensor ModernLayerImpl::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                    const at::Tensor& bias) {
  const bool train = is_training() && dropout_ > 0;
  const int64_t B = x.size(0), L = x.size(1), H = cfg_.hidden_size, nh = cfg_.num_attention_heads, dh = H / nh;
  at::Tensor h = attn_norm ? attn_norm->forward(x) : x;
  at::Tensor heads = attn->Wqkv->forward(h).view({B, L, 3, nh, dh}).permute({2, 0, 3, 1, 4});  // [3, B, nh, L, dh]
  at::Tensor q = rotate(heads[0], cos, sin), k = rotate(heads[1], cos, sin);
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)).mul_(1.0 / std::sqrt(static_cast<double>(dh))).add_(bias);
  at::Tensor probs = at::softmax(scores, -1);
  if (train) probs = at::dropout(probs, dropout_, true);
  at::Tensor ctx = at::matmul(probs, heads[2]).permute({0, 2, 1, 3}).reshape({B, L, H});
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
  at::Tensor x = embeddings->norm->forward(embeddings->tok_embeddings->forward(input_ids));
  if (is_training() && dropout_ > 0) x = at::dropout(x, dropout_, true);
  const int64_t B = x.size(0), L = x.size(1), dh = cfg_.hidden_size / cfg_.num_attention_heads;
  // Additive biases: padding keys get the lowest float; local layers also every key farther than
  // local_attention / 2. masked_fill (not a sum) keeps every value finite.
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor keep = attention_mask.ne(0).view({B, 1, 1, L});
  at::Tensor zeros = at::zeros({B, 1, 1, L}, x.options());
  at::Tensor global_bias = zeros.masked_fill(keep.logical_not(), lowest);
  at::Tensor local_bias;
  if (cfg_.global_attn_every_n_layers > 1 && cfg_.num_hidden_layers > 1) {  // some layer is local
    at::Tensor pos = at::arange(L, input_ids.options());
    at::Tensor near = (pos.view({L, 1}) - pos.view({1, L})).abs().le(cfg_.local_attention / 2).view({1, 1, L, L});
    local_bias = at::zeros({B, 1, L, L}, x.options()).masked_fill(keep.logical_and(near).logical_not(), lowest);
  }
  auto global_rot = rotary_tables(L, dh, cfg_.global_rope_theta, x.options());
  auto local_rot = rotary_tables(L, dh, cfg_.local_rope_theta, x.options());
  for (const auto& m : *layers) {
    auto* layer = m->as<ModernLayerImpl>();
    const auto& rot = layer->is_global() ? global_rot : local_rot;
    x = layer->forward(x, rot.first, rot.second, layer->is_global() ? global_bias : local_bias);
  }
  x = final_norm->forward(x);
  if (!is_training()) x = x * attention_mask.ne(0).unsqueeze(-1).to(x.scalar_type());  // padded rows 0
  return x;
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
