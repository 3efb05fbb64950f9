#include "model/native_bert.h"
#include "model/thread_scratch.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include "core/multiversion.h"
#include "core/omp_threads.h"
#include "model/fast_math.h"
#include "model/bert.h"
#include "model/mpnet.h"
#include "sieve/error.h"

namespace sieve {

namespace {

std::vector<float> copy_of(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU).to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// x <- LayerNorm(x) over a row of h, in place, and its bfloat16 copy into xb where xb is not
// null. Returns false when the row held a NaN or an infinity.
SIEVE_VARIANT_BODY bool layer_norm_row_body(float* x, int64_t h, const float* gamma, const float* beta, float eps,
                                       uint16_t* xb) {
  float mean = 0;
#pragma omp simd reduction(+ : mean)
  for (int64_t i = 0; i < h; ++i) mean += x[i];
  mean /= static_cast<float>(h);
  float var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t i = 0; i < h; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<float>(h);
  if (!std::isfinite(var)) return false;
  const float inv = 1.0f / std::sqrt(var + eps);
  if (xb) {
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) {
      x[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
      xb[i] = to_bf16_bits(x[i]);
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) x[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
  }
  return true;
}
SIEVE_VARIANTS(bool, layer_norm_row, (float* x, int64_t h, const float* gamma, const float* beta, float eps, uint16_t* xb), (x, h, gamma, beta, eps, xb))

// The tokens a group of sequences aims at when groups run a thread each (NativeBert::forward).
constexpr int64_t kGroupRows = 256;

Activation activation_of(const std::string& name) {
  if (name == "gelu") return Activation::Gelu;
  if (name == "relu") return Activation::Relu;
  return Activation::GeluTanh;  // gelu_new, gelu_pytorch_tanh
}

}  // namespace

struct NativeBert::Layer {
  std::unique_ptr<PackedLinear> qkv, attn_out, inter, out;
  std::vector<float> ln1_gamma, ln1_beta, ln2_gamma, ln2_beta;
};

bool NativeBert::supports(const BertConfig& c) {
  return (c.model_type == "bert" || c.model_type == "roberta" || c.model_type == "xlm-roberta" ||
          c.model_type == "mpnet") &&
         (c.hidden_act == "gelu" || c.hidden_act == "gelu_new" || c.hidden_act == "gelu_pytorch_tanh" ||
          c.hidden_act == "relu") &&
         c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads == 0;
}

namespace {

// One post-norm layer's modules, whichever family's names they carry.
struct LayerParts {
  const torch::nn::Linear &q, &k, &v, &o, &inter, &out;
  const torch::nn::LayerNorm &ln1, &ln2;
};

}  // namespace

NativeBert::NativeBert(const EncoderBackbone& model, Precision precision, int int8_levels)
    : cfg_(model.config()),
      bf16_(precision == Precision::Bf16),
      bf16_attention_(bf16_ || (precision == Precision::Int8 && PackedLinear::cpu_has_bf16())) {
  SIEVE_THROW_IF_NOT(supports(cfg_), "the native engine runs the BERT family (model_type bert, roberta, xlm-roberta "
                                     "or mpnet; GELU or ReLU), not "
                                         << cfg_.model_type << " with " << cfg_.hidden_act);
  const auto* bert = dynamic_cast<const BertModelImpl*>(&model);
  const auto* mpnet = dynamic_cast<const MpnetModelImpl*>(&model);
  SIEVE_ASSERT(bert || mpnet);
  const auto& e = bert ? *bert->embeddings : *mpnet->embeddings;
  word_ = copy_of(e.word_embeddings->weight);
  position_ = copy_of(e.position_embeddings->weight);
  if (e.token_type_embeddings) type_ = copy_of(e.token_type_embeddings->weight);
  emb_gamma_ = copy_of(e.LayerNorm->weight);
  emb_beta_ = copy_of(e.LayerNorm->bias);
  roberta_positions_ = uses_roberta_positions(cfg_);
  max_length_ = max_sequence_length(cfg_);
  const int64_t heads = cfg_.num_attention_heads;
  if (mpnet) {
    // The bias of every distance key - query from -(max_length - 1) to max_length - 1, per head.
    const int64_t span = 2 * max_length_ - 1;
    at::Tensor buckets = mpnet_relative_buckets(at::arange(-(max_length_ - 1), max_length_, at::kLong),
                                                cfg_.relative_attention_num_buckets);
    at::Tensor table = mpnet->encoder->relative_attention_bias->weight.detach().to(at::kCPU).to(at::kFloat)
                           .index_select(0, buckets)  // [span, heads]
                           .t()
                           .contiguous();
    relative_.assign(table.data_ptr<float>(), table.data_ptr<float>() + heads * span);
  }
  auto pack_layer = [&](const LayerParts& l) {
    Layer n;
    at::Tensor qkv_w = at::cat({l.q->weight, l.k->weight, l.v->weight}, 0).detach().to(at::kCPU);
    at::Tensor qkv_b = at::cat({l.q->bias, l.k->bias, l.v->bias}, 0).detach().to(at::kCPU);
    // In bf16 the products feeding attention and the second feed-forward product write bfloat16;
    // the two before a LayerNorm add into the states (the residual).
    const LinearOutput chained = bf16_ ? LinearOutput::Bf16 : LinearOutput::Float;
    // int8 on a CPU with bf16 products: query/key/value rounded to bfloat16 for a bf16 attention.
    n.qkv = std::make_unique<PackedLinear>(qkv_w, qkv_b, precision, int8_levels, Activation::None,
                                           bf16_attention_ ? LinearOutput::Bf16 : LinearOutput::Float);
    auto pack = [&](const torch::nn::Linear& d, Activation act, LinearOutput output) {
      return std::make_unique<PackedLinear>(d->weight.detach().to(at::kCPU), d->bias.detach().to(at::kCPU), precision,
                                            int8_levels, act, output);
    };
    n.attn_out = pack(l.o, Activation::None, LinearOutput::AddToFloat);
    n.inter = pack(l.inter, activation_of(cfg_.hidden_act), chained);
    n.out = pack(l.out, Activation::None, LinearOutput::AddToFloat);
    n.ln1_gamma = copy_of(l.ln1->weight);
    n.ln1_beta = copy_of(l.ln1->bias);
    n.ln2_gamma = copy_of(l.ln2->weight);
    n.ln2_beta = copy_of(l.ln2->bias);
    layers_.push_back(std::move(n));
  };
  if (bert) {
    for (const auto& m : *bert->encoder->layer) {
      const auto& l = *m->as<BertLayerImpl>();
      const auto& s = *l.attention->self;
      pack_layer({s.query, s.key, s.value, l.attention->output->dense, l.intermediate->dense, l.output->dense,
                  l.attention->output->LayerNorm, l.output->LayerNorm});
    }
  } else {
    for (const auto& m : *mpnet->encoder->layer) {
      const auto& l = *m->as<MpnetLayerImpl>();
      const auto& s = *l.attention->attn;
      pack_layer({s.q, s.k, s.v, s.o, l.intermediate->dense, l.output->dense, l.attention->LayerNorm,
                  l.output->LayerNorm});
    }
  }
  attention_ = std::make_unique<NativeAttention>(heads, cfg_.hidden_size / heads, max_length_, bf16_attention_,
                                                 /*float_context=*/!bf16_);
}

NativeBert::~NativeBert() = default;

void NativeBert::forward(const int64_t* ids, const int64_t* mask, const int64_t* types, int64_t B, int64_t L,
                         float* out) const {
  const int64_t H = cfg_.hidden_size;
  std::fill(out, out + B * L * H, 0.0f);
  SIEVE_THROW_IF_NOT(L <= max_length_, "sequence length " << L << " exceeds the " << max_length_
                                                           << " positions of max_position_embeddings "
                                                           << cfg_.max_position_embeddings);
  // The real tokens, packed: row t is (batch b, position j); each sequence's rows are contiguous.
  // `at` is each one's position in its sequence (j), `row` its row of the position table: j, or
  // for RoBERTa and MPNet padding_idx + its rank among the sequence's real non-pad tokens
  // (padding_idx itself for a pad id), as the libtorch embeddings compute it.
  std::vector<int64_t> pos, at, row, first(static_cast<size_t>(B) + 1, 0);
  const int64_t pad = cfg_.pad_token_id;
  for (int64_t b = 0; b < B; ++b) {
    first[static_cast<size_t>(b)] = static_cast<int64_t>(pos.size());
    int64_t rank = 0;
    for (int64_t j = 0; j < L; ++j)
      if (mask[b * L + j] != 0) {
        pos.push_back(b * L + j);
        at.push_back(j);
        if (!roberta_positions_)
          row.push_back(j);
        else if (ids[b * L + j] != pad)
          row.push_back(pad + ++rank);
        else
          row.push_back(pad);
      }
  }
  first[static_cast<size_t>(B)] = static_cast<int64_t>(pos.size());
  const auto T = static_cast<int64_t>(pos.size());
  if (T == 0) return;
  const auto types_rows = static_cast<int64_t>(type_.size()) / H;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t id = ids[pos[static_cast<size_t>(t)]];
    SIEVE_THROW_IF_NOT(id >= 0 && id < cfg_.vocab_size, "token id " << id << " is outside the vocabulary (" << cfg_.vocab_size << ")");
    if (types && types_rows > 0) {
      const int64_t type = types[pos[static_cast<size_t>(t)]];
      SIEVE_THROW_IF_NOT(type >= 0 && type < types_rows, "token type " << type << " is outside the model's " << types_rows
                                                                        << " types");
    }
  }
  const int threads = compute_threads();
  ScopedOmpThreads scoped(threads);
  // The states x [T, H] (floats), the calling thread's scratch (model/thread_scratch.h: fresh
  // zero-filled buffers cost page faults and a fill, a tenth of a batch's time at 32 x 128).
  const ScratchLease states(Scratch::States, static_cast<size_t>(T * H) * sizeof(float));
  float* const x = states.as<float>();
  omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const int64_t flat = pos[t];
      float* r = x + t * H;
      const float* w = word_.data() + ids[flat] * H;
      const float* p = position_.data() + row[t] * H;
      for (int64_t i = 0; i < H; ++i) r[i] = w[i] + p[i];
      if (types_rows > 0) {
        const float* ty = type_.data() + (types ? types[flat] : 0) * H;
        for (int64_t i = 0; i < H; ++i) r[i] += ty[i];
      }
    }
  });
  Slice all;
  all.first = first.data();
  all.sequences = B;
  all.x = x;
  all.positions = at.data();
  // Sequences are independent through every layer: where there are enough of them, groups of
  // whole sequences of about kGroupRows tokens each run every layer on one thread, their working
  // rows staying in that core's cache and no product waiting on a team; else (batch-1 queries)
  // each product runs on the whole team.
  // Smaller groups where that gives every thread two (32 x 16 tokens on two threads: 128 rows).
  const int64_t target = std::min(kGroupRows, std::max<int64_t>(16, (T + 2 * threads - 1) / (2 * threads)));
  std::vector<int64_t> starts{0};
  for (int64_t b = 0; b < B; ++b)
    if (first[static_cast<size_t>(b) + 1] - first[static_cast<size_t>(starts.back())] >= target)
      starts.push_back(b + 1);
  if (starts.back() != B) starts.push_back(B);
  const auto groups = static_cast<int64_t>(starts.size()) - 1;
  if (groups >= 2 * threads || (threads == 1 && groups > 1)) {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(groups));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t g = 0; g < groups; ++g) {
      try {
        Slice slice = all;
        slice.first = first.data() + starts[static_cast<size_t>(g)];
        slice.sequences = starts[static_cast<size_t>(g) + 1] - starts[static_cast<size_t>(g)];
        run_layers(slice, 1);
      } catch (...) {
        errors[static_cast<size_t>(g)] = std::current_exception();
      }
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  } else {
    run_layers(all, threads);
  }
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(out + pos[static_cast<size_t>(t)] * H, x + t * H, static_cast<size_t>(H) * sizeof(float));
}

void NativeBert::run_layers(const Slice& slice, int threads) const {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size, heads = cfg_.num_attention_heads, dh = H / heads;
  const auto eps = static_cast<float>(cfg_.layer_norm_eps);
  const int64_t t0 = slice.first[0], T = slice.first[slice.sequences] - t0, B = slice.sequences;
  float* const x = slice.x + t0 * H;
  // This thread's working rows: a region the attention's fused query/key/value [T, 3H] and
  // context [T, H] share with the feed-forward's middle [T, I] (the former are dead when the
  // latter is written); in bf16 those are bfloat16, and xb [T, H] holds the states rounded for the
  // next product.
  const int64_t shared = std::max(4 * H, I);
  const int64_t floats = bf16_ ? (T * H + T * shared + 1) / 2 : T * shared;
  const ScratchLease work(Scratch::Work, static_cast<size_t>(floats) * sizeof(float));
  float* const region = work.as<float>();
  uint16_t* const xb = bf16_ ? reinterpret_cast<uint16_t*>(region) : nullptr;
  uint16_t* const region16 = bf16_ ? xb + T * H : nullptr;

  std::atomic<bool> non_finite{false};
  // x <- LN(x) on every row, and its bfloat16 copy in bf16.
  auto normalize = [&](const std::vector<float>& gamma, const std::vector<float>& beta) {
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t)
        if (!layer_norm_row(x + t * H, H, gamma.data(), beta.data(), eps, bf16_ ? xb + t * H : nullptr))
          non_finite = true;
    });
    SIEVE_THROW_IF_NOT(!non_finite, "a layer's states hold a NaN or an infinity (a non-finite activation); the "
                                    "model's weights are damaged");
  };
  normalize(emb_gamma_, emb_beta_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (const Layer& layer : layers_) {
    if (bf16_)
      layer.qkv->forward_bf16(xb, T, region16);
    else
      layer.qkv->forward(x, T, region);  // int8 with a bf16 attention: bfloat16 at region's start
    // Attention per sequence over its real tokens: the libtorch path's additive mask makes the
    // padded keys' weights exactly 0, so leaving them out is the same sum. With a sequence per
    // thread where there are enough; else one after another, each product on the whole team.
    auto attend = [&](int64_t b) {
      const int64_t s0 = slice.first[b] - t0, n = slice.first[b + 1] - slice.first[b];
      NativeAttention::RelativeBias bias;
      if (!relative_.empty()) {
        bias.table = relative_.data();
        bias.row = 2 * max_length_ - 1;
        bias.center = max_length_ - 1;
        bias.positions = slice.positions + t0 + s0;
      }
      if (bf16_)
        attention_->attend(region16 + s0 * 3 * H, 3 * H, n, scale, region16 + T * 3 * H + s0 * H, H, bias);
      else if (bf16_attention_)
        attention_->attend(reinterpret_cast<const uint16_t*>(region) + s0 * 3 * H, 3 * H, n, scale,
                           region + T * 3 * H + s0 * H, H, bias);
      else
        attention_->attend(region + s0 * 3 * H, 3 * H, n, scale, region + T * 3 * H + s0 * H, H, bias);
    };
    if (B >= threads && threads > 1) {
      std::vector<std::exception_ptr> errors(static_cast<size_t>(B));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int64_t b = 0; b < B; ++b) {
        try {
          attend(b);
        } catch (...) {
          errors[static_cast<size_t>(b)] = std::current_exception();
        }
      }
      for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    } else {
      for (int64_t b = 0; b < B; ++b) attend(b);
    }
    // x <- LN(x + attention output), the product adding itself into x.
    if (bf16_)
      layer.attn_out->forward_bf16(region16 + T * 3 * H, T, x);
    else
      layer.attn_out->forward(region + T * 3 * H, T, x);
    normalize(layer.ln1_gamma, layer.ln1_beta);
    // x <- LN(x + out(GELU(inter(x)))).
    if (bf16_) {
      layer.inter->forward_bf16(xb, T, region16);
      layer.out->forward_bf16(region16, T, x);
    } else {
      layer.inter->forward(x, T, region);
      layer.out->forward(region, T, x);
    }
    normalize(layer.ln2_gamma, layer.ln2_beta);
  }
}

}  // namespace sieve
