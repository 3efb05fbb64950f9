#include "model/native_bert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include "core/multiversion.h"
#include "core/omp_threads.h"
#include "model/fast_math.h"
#include "model/bert.h"
#include "sieve/error.h"

namespace sieve {

namespace {

std::vector<float> copy_of(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU).to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// x <- LayerNorm(x + add) over rows of h, in place (add may be null).
SIEVE_MULTIVERSION void add_layer_norm_row(float* x, const float* add, int64_t h, const float* gamma,
                                           const float* beta, float eps) {
  if (add) {
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) x[i] += add[i];
  }
  float mean = 0;
#pragma omp simd reduction(+ : mean)
  for (int64_t i = 0; i < h; ++i) mean += x[i];
  mean /= static_cast<float>(h);
  float var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t i = 0; i < h; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<float>(h);
  const float inv = 1.0f / std::sqrt(var + eps);
#pragma omp simd
  for (int64_t i = 0; i < h; ++i) x[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

// The calling thread's scratch of at least n floats, kept between calls up to kKeptScratch floats
// (a batch of 32 x 128 tokens of MiniLM needs 63 MB): a larger one is the call's own and freed
// after it (ScratchLease), so that each thread of a server keeps at most that much. At 32 x 256
// tokens (126 MB) a fresh one cost about 4 % of a bf16 batch (44.2 against 46.2 sentences/s kept).
constexpr size_t kKeptScratch = size_t{16} << 20;  // floats (64 MB)
class ScratchLease {
 public:
  explicit ScratchLease(size_t n) {
    if (n > kKeptScratch) {
      own_.reset(new float[n]);
      data_ = own_.get();
      return;
    }
    thread_local std::unique_ptr<float[]> kept;
    thread_local size_t size = 0;
    if (size < n) {
      kept.reset(new float[n]);
      size = n;
    }
    data_ = kept.get();
  }
  float* data() const { return data_; }

 private:
  std::unique_ptr<float[]> own_;
  float* data_ = nullptr;
};

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
  return c.model_type == "bert" &&
         (c.hidden_act == "gelu" || c.hidden_act == "gelu_new" || c.hidden_act == "gelu_pytorch_tanh" ||
          c.hidden_act == "relu") &&
         c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads == 0;
}

NativeBert::NativeBert(const BertModelImpl& model, Precision precision, int int8_levels) : cfg_(model.config()) {
  SIEVE_THROW_IF_NOT(supports(cfg_), "the native engine runs BERT models (model_type bert, GELU or ReLU), not "
                                         << cfg_.model_type << " with " << cfg_.hidden_act);
  const auto& e = *model.embeddings;
  word_ = copy_of(e.word_embeddings->weight);
  position_ = copy_of(e.position_embeddings->weight);
  type_ = copy_of(e.token_type_embeddings->weight);
  emb_gamma_ = copy_of(e.LayerNorm->weight);
  emb_beta_ = copy_of(e.LayerNorm->bias);
  for (const auto& m : *model.encoder->layer) {
    const auto& l = *m->as<BertLayerImpl>();
    const auto& s = *l.attention->self;
    Layer n;
    at::Tensor qkv_w = at::cat({s.query->weight, s.key->weight, s.value->weight}, 0).detach().to(at::kCPU);
    at::Tensor qkv_b = at::cat({s.query->bias, s.key->bias, s.value->bias}, 0).detach().to(at::kCPU);
    n.qkv = std::make_unique<PackedLinear>(qkv_w, qkv_b, precision, int8_levels);
    auto pack = [&](const torch::nn::Linear& d, Activation act) {
      return std::make_unique<PackedLinear>(d->weight.detach().to(at::kCPU), d->bias.detach().to(at::kCPU), precision,
                                            int8_levels, act);
    };
    n.attn_out = pack(l.attention->output->dense, Activation::None);
    n.inter = pack(l.intermediate->dense, activation_of(cfg_.hidden_act));
    n.out = pack(l.output->dense, Activation::None);
    n.ln1_gamma = copy_of(l.attention->output->LayerNorm->weight);
    n.ln1_beta = copy_of(l.attention->output->LayerNorm->bias);
    n.ln2_gamma = copy_of(l.output->LayerNorm->weight);
    n.ln2_beta = copy_of(l.output->LayerNorm->bias);
    layers_.push_back(std::move(n));
  }
  attention_ = std::make_unique<NativeAttention>(cfg_.num_attention_heads, cfg_.hidden_size / cfg_.num_attention_heads,
                                                 cfg_.max_position_embeddings, precision == Precision::Bf16);
}

NativeBert::~NativeBert() = default;

void NativeBert::forward(const int64_t* ids, const int64_t* mask, const int64_t* types, int64_t B, int64_t L,
                         float* out) const {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size, heads = cfg_.num_attention_heads, dh = H / heads;
  const auto eps = static_cast<float>(cfg_.layer_norm_eps);
  std::fill(out, out + B * L * H, 0.0f);
  // The real tokens, packed: row t is (batch b, position j); each sequence's rows are contiguous.
  std::vector<int64_t> pos, first(static_cast<size_t>(B) + 1, 0);
  for (int64_t b = 0; b < B; ++b) {
    first[static_cast<size_t>(b)] = static_cast<int64_t>(pos.size());
    for (int64_t j = 0; j < L; ++j)
      if (mask[b * L + j] != 0) pos.push_back(b * L + j);
  }
  first[static_cast<size_t>(B)] = static_cast<int64_t>(pos.size());
  const auto T = static_cast<int64_t>(pos.size());
  if (T == 0) return;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t id = ids[pos[static_cast<size_t>(t)]];
    SIEVE_THROW_IF_NOT(id >= 0 && id < cfg_.vocab_size, "token id " << id << " is outside the vocabulary (" << cfg_.vocab_size << ")");
  }
  const int threads = compute_threads();
  ScopedOmpThreads scoped(threads);
  // Scratch for the whole call: states, fused query/key/value, context, the feed-forward's middle;
  // the calling thread's, kept between calls up to 64 MB (fresh zero-filled buffers cost page
  // faults and a fill: a tenth of a batch's time at 32 x 128 tokens).
  const ScratchLease scratch(static_cast<size_t>(T * (H + 3 * H + H + H + I)));
  float* const x = scratch.data();
  float* const qkv = x + T * H;
  float* const ctx = qkv + T * 3 * H;
  float* const tmp = ctx + T * H;
  float* const mid = tmp + T * H;
  omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const int64_t flat = pos[t], j = flat % L;
      const int64_t type = types ? types[flat] : 0;
      float* row = x + t * H;
      const float* w = word_.data() + ids[flat] * H;
      const float* p = position_.data() + j * H;
      const float* ty = type_.data() + type * H;
      for (int64_t i = 0; i < H; ++i) row[i] = w[i] + p[i] + ty[i];
      add_layer_norm_row(row, nullptr, H, emb_gamma_.data(), emb_beta_.data(), eps);
    }
  });
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (const Layer& layer : layers_) {
    layer.qkv->forward(x, T, qkv);
    // Attention per sequence over its real tokens: the libtorch path's additive mask makes the
    // padded keys' weights exactly 0, so leaving them out is the same sum. With a sequence per
    // thread where there are enough; else one after another, each product on the whole team.
    auto attend = [&](int64_t b) {
      const int64_t t0 = first[static_cast<size_t>(b)], n = first[static_cast<size_t>(b) + 1] - t0;
      attention_->attend(qkv + t0 * 3 * H, 3 * H, n, scale, ctx + t0 * H, H);
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
    layer.attn_out->forward(ctx, T, tmp);
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t)  // x <- LN(attn + x)
        add_layer_norm_row(x + t * H, tmp + t * H, H, layer.ln1_gamma.data(), layer.ln1_beta.data(), eps);
    });
    layer.inter->forward(x, T, mid);  // GELU fused
    layer.out->forward(mid, T, tmp);
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t)  // x <- LN(out + x)
        add_layer_norm_row(x + t * H, tmp + t * H, H, layer.ln2_gamma.data(), layer.ln2_beta.data(), eps);
    });
  }
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(out + pos[static_cast<size_t>(t)] * H, x + t * H, static_cast<size_t>(H) * sizeof(float));
}

}  // namespace sieve
