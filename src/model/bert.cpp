#include "model/bert.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {

namespace {
torch::nn::LayerNorm make_layer_norm(const BertOptions& opt) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({opt.config.hidden_size}).eps(opt.config.layer_norm_eps));
}
}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertOptions& opt)
    : dropout(opt.dropout), roberta_positions(uses_roberta_positions(opt.config)), padding_idx(opt.config.pad_token_id) {
  const auto& c = opt.config;
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  position_embeddings =
      register_module("position_embeddings", torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
  if (c.type_vocab_size > 0)
    token_type_embeddings =
        register_module("token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module("LayerNorm", make_layer_norm(opt));
}

at::Tensor BertEmbeddingsImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                                       const at::Tensor& attention_mask) {
  const int64_t L = input_ids.size(1);
  at::Tensor x = word_embeddings->forward(input_ids);
  if (roberta_positions) {
    // RoBERTa: a real token's position is padding_idx + its 1-based rank among the non-pad tokens;
    // pad tokens take padding_idx. Slots the mask marks as padding count as pad whatever their id.
    at::Tensor real = input_ids.ne(padding_idx);
    if (attention_mask.defined()) real = real.logical_and(attention_mask.ne(0));
    at::Tensor r = real.to(at::kLong);
    at::Tensor pos = r.cumsum(1).mul_(r).add_(padding_idx);
    x = x + position_embeddings->forward(pos);
  } else {
    // Position ids 0..L-1 are the same for every row: add the first L rows, broadcast over the batch.
    x = x + position_embeddings->weight.narrow(0, 0, L).unsqueeze(0);
  }
  if (token_type_embeddings) {
    if (token_type_ids.defined())
      x = x + token_type_embeddings->forward(token_type_ids);
    else
      x = x + token_type_embeddings->weight[0];  // all-zero type ids
  }
  x = LayerNorm->forward(x);
  if (is_training() && dropout > 0) x = at::dropout(x, dropout, true);
  return x;
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertOptions& opt) {
  const int64_t H = opt.config.hidden_size;
  query = register_module("query", torch::nn::Linear(H, H));
  key = register_module("key", torch::nn::Linear(H, H));
  value = register_module("value", torch::nn::Linear(H, H));
}

BertDenseLayerNormImpl::BertDenseLayerNormImpl(const BertOptions& opt, int64_t in_features) {
  dense = register_module("dense", torch::nn::Linear(in_features, opt.config.hidden_size));
  LayerNorm = register_module("LayerNorm", make_layer_norm(opt));
}

BertAttentionImpl::BertAttentionImpl(const BertOptions& opt) {
  self = register_module("self", BertSelfAttention(opt));
  output = register_module("output", BertDenseLayerNorm(opt, opt.config.hidden_size));
}

BertIntermediateImpl::BertIntermediateImpl(const BertOptions& opt) {
  dense = register_module("dense", torch::nn::Linear(opt.config.hidden_size, opt.config.intermediate_size));
}

BertLayerImpl::BertLayerImpl(const BertOptions& opt) : cfg_(opt.config), dropout_(opt.dropout) {
  attention = register_module("attention", BertAttention(opt));
  intermediate = register_module("intermediate", BertIntermediate(opt));
  output = register_module("output", BertDenseLayerNorm(opt, opt.config.intermediate_size));
}

int BertLayerImpl::prepare_inference(Precision precision, int int8_levels) {
  at::NoGradGuard no_grad;
  auto& s = *attention->self;
  qkv_weight_ = at::cat({s.query->weight, s.key->weight, s.value->weight}, 0).contiguous();
  qkv_bias_ = at::cat({s.query->bias, s.key->bias, s.value->bias}, 0).contiguous();
  qkv_packed_ = attn_out_packed_ = inter_packed_ = out_packed_ = nullptr;
  if (!qkv_weight_.device().is_cpu() || qkv_weight_.scalar_type() != at::kFloat) return -1;
  auto pack = [precision, int8_levels](const at::Tensor& w, const at::Tensor& b) {
    return std::make_shared<const PackedLinear>(w, b, precision, int8_levels);
  };
  qkv_packed_ = pack(qkv_weight_, qkv_bias_);
  attn_out_packed_ = pack(attention->output->dense->weight, attention->output->dense->bias);
  inter_packed_ = pack(intermediate->dense->weight, intermediate->dense->bias);
  out_packed_ = pack(output->dense->weight, output->dense->bias);
  return precision == Precision::Int8 ? out_packed_->weight_levels() : 0;
}

at::Tensor packed_or_module(const std::shared_ptr<const PackedLinear>& packed, torch::nn::Linear& layer,
                            const at::Tensor& x, bool training) {
  if (packed && !training) return packed->forward(x);
  return layer->forward(x);
}

at::Tensor BertLayerImpl::activation(const at::Tensor& x) const {
  if (cfg_.hidden_act == "gelu") return at::gelu(x);
  if (cfg_.hidden_act == "relu") return at::relu(x);
  return at::gelu(x, "tanh");  // gelu_new, gelu_pytorch_tanh
}

// Self-attention over qkv [B, L, 3H] (query, key, value side by side): returns context [B, L, H].
at::Tensor BertLayerImpl::attend(const at::Tensor& qkv, int64_t B, int64_t L, const at::Tensor& mask_bias) const {
  const int64_t H = cfg_.hidden_size, nh = cfg_.num_attention_heads, dh = H / nh;
  at::Tensor heads = qkv.view({B, L, 3, nh, dh}).permute({2, 0, 3, 1, 4});  // [3, B, nh, L, dh]
  // Sequences [b0, b0 + n): context [n, nh, L, dh].
  auto block = [&](int64_t b0, int64_t n) {
    at::Tensor scores = at::matmul(heads[0].narrow(0, b0, n), heads[1].narrow(0, b0, n).transpose(-1, -2));
    scores.mul_(1.0 / std::sqrt(static_cast<double>(dh))).add_(mask_bias.narrow(0, b0, n));
    at::Tensor probs = at::softmax(scores, -1);
    if (is_training() && dropout_ > 0) probs = at::dropout(probs, dropout_, true);
    return at::matmul(probs, heads[2].narrow(0, b0, n));
  };
  // Inference takes a few sequences at a time, so that their scores [n, nh, L, L] stay in cache:
  // the whole batch's went through memory five times (product, scale, mask, softmax, product),
  // 181 against 66 ms a layer at 32 x 256 tokens (docs/benchmarks.md).
  constexpr int64_t kCachedScores = int64_t{1} << 20;  // floats (4 MB)
  const int64_t per_block = std::max<int64_t>(1, kCachedScores / std::max<int64_t>(1, nh * L * L));
  at::Tensor ctx;
  if (is_training() || per_block >= B) {
    ctx = block(0, B);
  } else {
    std::vector<at::Tensor> parts;
    for (int64_t b0 = 0; b0 < B; b0 += per_block) parts.push_back(block(b0, std::min(per_block, B - b0)));
    ctx = at::cat(parts, 0);
  }
  return ctx.permute({0, 2, 1, 3}).reshape({B, L, H});
}

// Attention output projection, residual + LayerNorm, then the feed-forward block; works on any
// leading shape ([B, L, H] or packed [T, H]).
at::Tensor BertLayerImpl::feed_forward(const at::Tensor& ctx, const at::Tensor& x) {
  const bool train = is_training() && dropout_ > 0;
  at::Tensor attn = dense(attn_out_packed_, attention->output->dense, ctx);
  if (train) attn = at::dropout(attn, dropout_, true);
  at::Tensor h = attention->output->LayerNorm->forward(attn + x);
  at::Tensor inter = activation(dense(inter_packed_, intermediate->dense, h));
  at::Tensor out = dense(out_packed_, output->dense, inter);
  if (train) out = at::dropout(out, dropout_, true);
  return output->LayerNorm->forward(out + h);
}

at::Tensor BertLayerImpl::forward(const at::Tensor& x, const at::Tensor& mask_bias) {
  const int64_t B = x.size(0), L = x.size(1);
  at::Tensor qkv;
  if (!is_training() && qkv_packed_) {
    qkv = qkv_packed_->forward(x);  // one [B*L, H] x [H, 3H] product instead of three
  } else if (!is_training() && qkv_weight_.defined()) {
    qkv = at::linear(x, qkv_weight_, qkv_bias_);
  } else {
    auto& s = *attention->self;
    qkv = at::cat({s.query->forward(x), s.key->forward(x), s.value->forward(x)}, -1);
  }
  return feed_forward(attend(qkv, B, L, mask_bias), x);
}

at::Tensor BertLayerImpl::forward_packed(const at::Tensor& xp, const at::Tensor& index, int64_t B, int64_t L,
                                         const at::Tensor& mask_bias) {
  SIEVE_ASSERT(!is_training() && qkv_weight_.defined());
  const int64_t H = cfg_.hidden_size;
  at::Tensor qkv_p = qkv_packed_ ? qkv_packed_->forward(xp) : at::linear(xp, qkv_weight_, qkv_bias_);
  at::Tensor qkv = at::zeros({B * L, 3 * H}, qkv_p.options()).index_copy_(0, index, qkv_p);
  at::Tensor ctx = attend(qkv.view({B, L, 3 * H}), B, L, mask_bias).view({B * L, H}).index_select(0, index);
  return feed_forward(ctx, xp);
}

BertEncoderStackImpl::BertEncoderStackImpl(const BertOptions& opt) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < opt.config.num_hidden_layers; ++i) layer->push_back(BertLayer(opt));
}

BertModelImpl::BertModelImpl(const BertOptions& opt) : opt_(opt) {
  embeddings = register_module("embeddings", BertEmbeddings(opt));
  encoder = register_module("encoder", BertEncoderStack(opt));
}

at::Tensor BertModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                  const at::Tensor& token_type_ids) {
  SIEVE_THROW_IF_NOT(input_ids.dim() == 2, "input_ids must be [batch, length]");
  SIEVE_THROW_IF_NOT(input_ids.size(1) <= max_sequence_length(opt_.config),
                     "sequence length " << input_ids.size(1) << " exceeds the " << max_sequence_length(opt_.config)
                                        << " positions of max_position_embeddings "
                                        << opt_.config.max_position_embeddings);
  at::Tensor x = embeddings->forward(input_ids, token_type_ids, attention_mask);
  const int64_t B = x.size(0), L = x.size(1), H = x.size(2);
  // Additive mask over keys: 0 for real tokens, the most negative float for padding (as HF does).
  const float neg = std::numeric_limits<float>::lowest();
  at::Tensor bias = (1.0 - attention_mask.to(x.scalar_type())).mul_(neg).view({B, 1, 1, L});
  const bool packed_ok = !is_training() && encoder->layer->size() > 0 &&
                         encoder->layer[0]->as<BertLayerImpl>()->packed_ready();
  at::Tensor flat_mask = attention_mask.reshape({-1});
  const int64_t T = packed_ok ? flat_mask.count_nonzero().item<int64_t>() : B * L;
  if (T == B * L) {
    for (const auto& m : *encoder->layer) x = m->as<BertLayerImpl>()->forward(x, bias);
    return x;
  }
  // Padding present: the dense layers (nearly all the work) run on the T real tokens only.
  at::Tensor index = flat_mask.nonzero().reshape({-1});
  at::Tensor xp = x.reshape({B * L, H}).index_select(0, index);
  for (const auto& m : *encoder->layer) xp = m->as<BertLayerImpl>()->forward_packed(xp, index, B, L, bias);
  return at::zeros({B * L, H}, xp.options()).index_copy_(0, index, xp).view({B, L, H});
}

int BertModelImpl::prepare_inference(Precision precision, int int8_levels) {
  int levels = -1;
  for (const auto& m : *encoder->layer) levels = m->as<BertLayerImpl>()->prepare_inference(precision, int8_levels);
  return levels;
}

namespace {

// Finds a parameter's tensor under its HF name, with or without the family's prefix ("bert.",
// or "roberta." as RobertaForMaskedLM / XLMRobertaModel save it), accepting the old
// TF-converted LayerNorm names gamma/beta.
const TensorView* find_tensor(const SafetensorsFile& f, const std::string& name, const std::string& prefix) {
  std::vector<std::string> candidates = {name, prefix + name};
  auto ln = name.rfind("LayerNorm.");
  if (ln != std::string::npos) {
    std::string base = name.substr(0, ln + 10), leaf = name.substr(ln + 10);
    std::string alt = base + (leaf == "weight" ? "gamma" : leaf == "bias" ? "beta" : leaf);
    candidates.push_back(alt);
    candidates.push_back(prefix + alt);
  }
  for (const auto& c : candidates)
    if (f.contains(c)) return &f.get(c);
  return nullptr;
}

}  // namespace

void BertModelImpl::load_weights(const SafetensorsFile& file) {
  at::NoGradGuard no_grad;
  const std::string prefix = opt_.config.model_type == "bert" ? "bert." : "roberta.";
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    at::Tensor& param = item.value();
    const TensorView* t = find_tensor(file, name, prefix);
    SIEVE_THROW_IF_NOT(t != nullptr, file.path() << ": tensor '" << name << "' (or '" << prefix << name
                                                 << "') is missing");
    copy_tensor(file, *t, param);
  }
}

at::Tensor pool_and_normalize(const at::Tensor& states, const at::Tensor& attention_mask, Pooling pooling) {
  at::Tensor pooled;
  at::Tensor mask = attention_mask.to(states.scalar_type());
  switch (pooling) {
    case Pooling::Cls:
      pooled = states.select(1, 0);
      break;
    case Pooling::Mean: {
      at::Tensor sum = (states * mask.unsqueeze(-1)).sum(1);
      pooled = sum / mask.sum(1, /*keepdim=*/true).clamp_min(1e-9);
      break;
    }
    case Pooling::LastToken: {
      // Right padding: the last real token sits at length - 1.
      at::Tensor last = (attention_mask.to(at::kLong).sum(1) - 1).clamp_min(0);
      at::Tensor idx = last.view({-1, 1, 1}).expand({states.size(0), 1, states.size(2)});
      pooled = states.gather(1, idx).squeeze(1);
      break;
    }
  }
  return pooled / pooled.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12);
}

}  // namespace sieve
