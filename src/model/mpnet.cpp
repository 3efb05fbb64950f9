#include "model/mpnet.h"

#include <cmath>
#include <limits>
#include <string>

#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {

MpnetSelfAttentionImpl::MpnetSelfAttentionImpl(const BertOptions& opt) {
  const int64_t H = opt.config.hidden_size;
  q = register_module("q", torch::nn::Linear(H, H));
  k = register_module("k", torch::nn::Linear(H, H));
  v = register_module("v", torch::nn::Linear(H, H));
  o = register_module("o", torch::nn::Linear(H, H));
}

MpnetAttentionImpl::MpnetAttentionImpl(const BertOptions& opt) {
  attn = register_module("attn", MpnetSelfAttention(opt));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({opt.config.hidden_size}).eps(opt.config.layer_norm_eps)));
}

MpnetLayerImpl::MpnetLayerImpl(const BertOptions& opt) : cfg_(opt.config), dropout_(opt.dropout) {
  attention = register_module("attention", MpnetAttention(opt));
  intermediate = register_module("intermediate", BertIntermediate(opt));
  output = register_module("output", BertDenseLayerNorm(opt, opt.config.intermediate_size));
}

int MpnetLayerImpl::prepare_inference(Precision precision, int int8_levels) {
  at::NoGradGuard no_grad;
  auto& s = *attention->attn;
  qkv_packed_ = o_packed_ = inter_packed_ = out_packed_ = nullptr;
  if (!s.q->weight.device().is_cpu() || s.q->weight.scalar_type() != at::kFloat) return -1;
  auto pack = [precision, int8_levels](const at::Tensor& w, const at::Tensor& b) {
    return std::make_shared<const PackedLinear>(w, b, precision, int8_levels);
  };
  qkv_packed_ = pack(at::cat({s.q->weight, s.k->weight, s.v->weight}, 0).contiguous(),
                     at::cat({s.q->bias, s.k->bias, s.v->bias}, 0).contiguous());
  o_packed_ = pack(s.o->weight, s.o->bias);
  inter_packed_ = pack(intermediate->dense->weight, intermediate->dense->bias);
  out_packed_ = pack(output->dense->weight, output->dense->bias);
  return precision == Precision::Int8 ? out_packed_->weight_levels() : 0;
}

at::Tensor MpnetLayerImpl::forward(const at::Tensor& x, const at::Tensor& bias) {
  const bool train = is_training() && dropout_ > 0;
  const int64_t B = x.size(0), L = x.size(1), H = cfg_.hidden_size, nh = cfg_.num_attention_heads, dh = H / nh;
  auto& s = *attention->attn;
  auto split = [&](const at::Tensor& t) { return t.view({B, L, nh, dh}).permute({0, 2, 1, 3}); };
  at::Tensor q, k, v;
  if (qkv_packed_ && !is_training()) {
    at::Tensor qkv = qkv_packed_->forward(x);  // [B, L, 3H]: one product instead of three
    q = split(qkv.narrow(-1, 0, H));
    k = split(qkv.narrow(-1, H, H));
    v = split(qkv.narrow(-1, 2 * H, H));
  } else {
    q = split(s.q->forward(x));
    k = split(s.k->forward(x));
    v = split(s.v->forward(x));
  }
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)).mul_(1.0 / std::sqrt(static_cast<double>(dh))).add_(bias);
  at::Tensor probs = at::softmax(scores, -1);
  if (train) probs = at::dropout(probs, dropout_, true);
  at::Tensor a = dense(o_packed_, s.o, at::matmul(probs, v).permute({0, 2, 1, 3}).reshape({B, L, H}));
  if (train) a = at::dropout(a, dropout_, true);
  at::Tensor h = attention->LayerNorm->forward(a + x);
  at::Tensor inter = dense(inter_packed_, intermediate->dense, h);
  if (cfg_.hidden_act == "gelu")
    inter = at::gelu(inter);
  else if (cfg_.hidden_act == "relu")
    inter = at::relu(inter);
  else
    inter = at::gelu(inter, "tanh");
  at::Tensor out = dense(out_packed_, output->dense, inter);
  if (train) out = at::dropout(out, dropout_, true);
  return output->LayerNorm->forward(out + h);
}

int MpnetModelImpl::prepare_inference(Precision precision, int int8_levels) {
  int levels = -1;
  for (const auto& m : *encoder->layer) levels = m->as<MpnetLayerImpl>()->prepare_inference(precision, int8_levels);
  return levels;
}

MpnetEncoderStackImpl::MpnetEncoderStackImpl(const BertOptions& opt) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < opt.config.num_hidden_layers; ++i) layer->push_back(MpnetLayer(opt));
  relative_attention_bias = register_module(
      "relative_attention_bias",
      torch::nn::Embedding(opt.config.relative_attention_num_buckets, opt.config.num_attention_heads));
}

MpnetModelImpl::MpnetModelImpl(const BertOptions& opt) : opt_(opt) {
  SIEVE_THROW_IF_NOT(uses_roberta_positions(opt.config), "MPNet needs RoBERTa-style positions");
  embeddings = register_module("embeddings", BertEmbeddings(opt));
  encoder = register_module("encoder", MpnetEncoderStack(opt));
}

at::Tensor mpnet_relative_buckets(const at::Tensor& relative_position, int64_t num_buckets, int64_t max_distance) {
  // n = query - key; the key-after-query direction (n < 0) takes the upper half of the buckets.
  at::Tensor n = relative_position.neg();
  const int64_t half = num_buckets / 2, exact = half / 2;
  at::Tensor ret = n.lt(0).to(at::kLong).mul_(half);
  n = n.abs();
  at::Tensor nf = n.to(at::kFloat).div_(static_cast<double>(exact)).log_();
  at::Tensor large = nf.div_(std::log(static_cast<double>(max_distance) / static_cast<double>(exact)))
                         .mul_(static_cast<double>(half - exact))
                         .to(at::kLong)
                         .add_(exact)
                         .clamp_max_(half - 1);
  return ret + at::where(n.lt(exact), n, large);
}

at::Tensor MpnetModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   const at::Tensor& /*token_type_ids*/) {
  SIEVE_THROW_IF_NOT(input_ids.dim() == 2, "input_ids must be [batch, length]");
  SIEVE_THROW_IF_NOT(input_ids.size(1) <= max_sequence_length(opt_.config),
                     "sequence length " << input_ids.size(1) << " exceeds the " << max_sequence_length(opt_.config)
                                        << " positions of max_position_embeddings "
                                        << opt_.config.max_position_embeddings);
  at::Tensor x = embeddings->forward(input_ids, {}, attention_mask);
  const int64_t B = x.size(0), L = x.size(1);
  at::Tensor pos = at::arange(L, input_ids.options());
  at::Tensor buckets = mpnet_relative_buckets(pos.view({1, L}) - pos.view({L, 1}), opt_.config.relative_attention_num_buckets);
  at::Tensor rel = encoder->relative_attention_bias->forward(buckets).permute({2, 0, 1}).unsqueeze(0);  // [1, nh, L, L]
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor pad = at::zeros({B, 1, 1, L}, x.options()).masked_fill(attention_mask.eq(0).view({B, 1, 1, L}), lowest);
  at::Tensor bias = rel + pad;
  for (const auto& m : *encoder->layer) x = m->as<MpnetLayerImpl>()->forward(x, bias);
  if (!is_training()) x = x * attention_mask.ne(0).unsqueeze(-1).to(x.scalar_type());  // padded rows 0
  return x;
}

void MpnetModelImpl::load_weights(const SafetensorsFile& file) {
  at::NoGradGuard no_grad;
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    const TensorView* t = nullptr;
    for (const std::string& c : {name, "mpnet." + name})
      if (!t && file.contains(c)) t = &file.get(c);
    SIEVE_THROW_IF_NOT(t != nullptr, file.path() << ": tensor '" << name << "' (or 'mpnet." << name << "') is missing");
    copy_tensor(file, *t, item.value());
  }
}

}  // namespace sieve
