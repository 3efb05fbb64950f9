#include "model/native_bert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/multiversion.h"
#include "core/omp_threads.h"
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

// exp(x) for the vectorised loops (libm's expf is a call per element): Cephes' reduction by ln 2
// in two parts and its degree-5 polynomial, within 2 ulp over the range softmax and GELU use;
// below -87.3 it gives 2^-126 scaled (about 1e-38), not 0.
inline float fast_exp(float x) {
  x = x < -87.3f ? -87.3f : x > 88.3f ? 88.3f : x;
  // Round to nearest by truncation of +-0.5 (a conversion the vectoriser knows, unlike floor).
  const float t = x * 1.44269504088896341f;
  const int32_t ni = static_cast<int32_t>(t + (t >= 0 ? 0.5f : -0.5f));
  const float n = static_cast<float>(ni);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// erf(x) by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), with fast_exp.
inline float fast_erf(float x) {
  const float a = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float e = 1.0f - poly * fast_exp(-a * a);
  return x < 0 ? -e : e;
}

// One head of one sequence: softmax(q k^T * scale) v over its n real tokens. `qkv` is the first
// token's fused row (query, key, value of width h each; rows `stride` floats apart) moved to the
// head's columns; `kv` scratch of dh * (2 n + 16) floats, `p` of n + 16; ctx rows
// `ctx_stride` apart. The keys are gathered transposed and padded to whole blocks of 16 columns, so
// that a query's scores for 16 keys build up in one register over the head's dh dimensions; DH > 0
// fixes dh at compile time (the common widths), so that a context row stays in registers too.
template <int DH>
SIEVE_MULTIVERSION void attend_head(const float* qkv, int64_t stride, int64_t h, int64_t n, int64_t dh_run,
                                    float scale, float* kv, float* p, float* ctx, int64_t ctx_stride) {
  constexpr int64_t kBlock = 16;
  const int64_t dh = DH > 0 ? DH : dh_run;
  const int64_t np = (n + kBlock - 1) / kBlock * kBlock;
  float* kt = kv;            // [dh][np]
  float* v = kv + dh * np;   // [n][dh]
  for (int64_t j = 0; j < n; ++j) {
    const float* row = qkv + j * stride;
    for (int64_t d = 0; d < dh; ++d) {
      kt[d * np + j] = row[h + d];
      v[j * dh + d] = row[2 * h + d];
    }
  }
  for (int64_t d = 0; d < dh; ++d)
    for (int64_t j = n; j < np; ++j) kt[d * np + j] = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float* q = qkv + i * stride;
    // Four blocks at a time where they fit: four independent chains of fused multiply-adds
    // instead of one waiting on its own latency.
    int64_t j0 = 0;
    for (; j0 + 4 * kBlock <= np; j0 += 4 * kBlock) {
      float acc[4 * kBlock] = {};
      for (int64_t d = 0; d < dh; ++d) {
        const float qd = q[d] * scale;
        const float* kd = kt + d * np + j0;
#pragma omp simd
        for (int64_t jj = 0; jj < 4 * kBlock; ++jj) acc[jj] += qd * kd[jj];
      }
#pragma omp simd
      for (int64_t jj = 0; jj < 4 * kBlock; ++jj) p[j0 + jj] = acc[jj];
    }
    for (; j0 < np; j0 += kBlock) {
      float acc[kBlock] = {};
      for (int64_t d = 0; d < dh; ++d) {
        const float qd = q[d] * scale;
        const float* kd = kt + d * np + j0;
#pragma omp simd
        for (int64_t jj = 0; jj < kBlock; ++jj) acc[jj] += qd * kd[jj];
      }
#pragma omp simd
      for (int64_t jj = 0; jj < kBlock; ++jj) p[j0 + jj] = acc[jj];
    }
    float mx = p[0];
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < n; ++j) mx = p[j] > mx ? p[j] : mx;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      p[j] = fast_exp(p[j] - mx);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    float* c = ctx + i * ctx_stride;
    if constexpr (DH > 0) {
      // Four partial sums over alternating keys (independent chains), added at the end.
      float out[4][DH] = {};
      int64_t j = 0;
      for (; j + 4 <= n; j += 4)
        for (int64_t u = 0; u < 4; ++u) {
          const float w = p[j + u];
          const float* vj = v + (j + u) * DH;
#pragma omp simd
          for (int64_t d = 0; d < DH; ++d) out[u][d] += w * vj[d];
        }
      for (; j < n; ++j) {
        const float w = p[j];
#pragma omp simd
        for (int64_t d = 0; d < DH; ++d) out[0][d] += w * v[j * DH + d];
      }
#pragma omp simd
      for (int64_t d = 0; d < DH; ++d) c[d] = ((out[0][d] + out[1][d]) + (out[2][d] + out[3][d])) * inv;
    } else {
      for (int64_t d = 0; d < dh; ++d) c[d] = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        const float w = p[j] * inv;
#pragma omp simd
        for (int64_t d = 0; d < dh; ++d) c[d] += w * v[j * dh + d];
      }
    }
  }
}

enum class Act { Gelu, GeluTanh, Relu };

SIEVE_MULTIVERSION void activate(float* x, int64_t n, Act act) {
  switch (act) {
    case Act::Gelu:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + fast_erf(x[i] * static_cast<float>(M_SQRT1_2)));
      break;
    case Act::GeluTanh: {
      const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
      for (int64_t i = 0; i < n; ++i)
        x[i] = 0.5f * x[i] * (1.0f + std::tanh(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
      break;
    }
    case Act::Relu:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
      break;
  }
}

Act act_of(const std::string& name) {
  if (name == "gelu") return Act::Gelu;
  if (name == "relu") return Act::Relu;
  return Act::GeluTanh;  // gelu_new, gelu_pytorch_tanh
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
    auto pack = [&](const torch::nn::Linear& d) {
      return std::make_unique<PackedLinear>(d->weight.detach().to(at::kCPU), d->bias.detach().to(at::kCPU), precision,
                                            int8_levels);
    };
    n.attn_out = pack(l.attention->output->dense);
    n.inter = pack(l.intermediate->dense);
    n.out = pack(l.output->dense);
    n.ln1_gamma = copy_of(l.attention->output->LayerNorm->weight);
    n.ln1_beta = copy_of(l.attention->output->LayerNorm->bias);
    n.ln2_gamma = copy_of(l.output->LayerNorm->weight);
    n.ln2_beta = copy_of(l.output->LayerNorm->bias);
    layers_.push_back(std::move(n));
  }
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
  // Scratch for the whole call: states, fused query/key/value, context, the feed-forward's middle.
  std::vector<float> x(static_cast<size_t>(T * H)), qkv(static_cast<size_t>(T * 3 * H)), ctx(static_cast<size_t>(T * H)),
      tmp(static_cast<size_t>(T * H)), mid(static_cast<size_t>(T * I));
  omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const int64_t flat = pos[t], j = flat % L;
      const int64_t type = types ? types[flat] : 0;
      float* row = x.data() + t * H;
      const float* w = word_.data() + ids[flat] * H;
      const float* p = position_.data() + j * H;
      const float* ty = type_.data() + type * H;
      for (int64_t i = 0; i < H; ++i) row[i] = w[i] + p[i] + ty[i];
      add_layer_norm_row(row, nullptr, H, emb_gamma_.data(), emb_beta_.data(), eps);
    }
  });
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const Act act = act_of(cfg_.hidden_act);
  for (const Layer& layer : layers_) {
    layer.qkv->forward(x.data(), T, qkv.data());
    // Attention per (sequence, head) over that sequence's real tokens: the libtorch path's
    // additive mask makes the padded keys' weights exactly 0, so leaving them out is the same sum.
#pragma omp parallel num_threads(threads)
    {
      std::vector<float> p(static_cast<size_t>(L + 16)), kv(static_cast<size_t>(dh * (2 * L + 16)));
      const auto attend = dh == 32 ? &attend_head<32> : dh == 64 ? &attend_head<64> : &attend_head<0>;
#pragma omp for schedule(dynamic, 1)
      for (int64_t task = 0; task < B * heads; ++task) {
        const int64_t b = task / heads, h = task % heads;
        const int64_t t0 = first[static_cast<size_t>(b)], n = first[static_cast<size_t>(b) + 1] - t0;
        attend(qkv.data() + t0 * 3 * H + h * dh, 3 * H, H, n, dh, scale, kv.data(), p.data(),
               ctx.data() + t0 * H + h * dh, H);
      }
    }
    layer.attn_out->forward(ctx.data(), T, tmp.data());
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t)  // x <- LN(attn + x)
        add_layer_norm_row(x.data() + t * H, tmp.data() + t * H, H, layer.ln1_gamma.data(), layer.ln1_beta.data(), eps);
    });
    layer.inter->forward(x.data(), T, mid.data());
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      activate(mid.data() + begin * I, static_cast<int64_t>(end - begin) * I, act);
    });
    layer.out->forward(mid.data(), T, tmp.data());
    omp_ranges(static_cast<size_t>(T), threads, [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t)  // x <- LN(out + x)
        add_layer_norm_row(x.data() + t * H, tmp.data() + t * H, H, layer.ln2_gamma.data(), layer.ln2_beta.data(), eps);
    });
  }
  for (int64_t t = 0; t < T; ++t)
    std::memcpy(out + pos[static_cast<size_t>(t)] * H, x.data() + t * H, static_cast<size_t>(H) * sizeof(float));
}

}  // namespace sieve
