#include "unit/model/naive_bert.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sieve/safetensors.h"

namespace sieve::test {
namespace {
std::shared_ptr<const SafetensorsFile> g_file;  // kept alive for the reference's lifetime
}

NaiveBert::NaiveBert(const std::string& dir) : dir_(dir) {
  std::ifstream in(dir + "/config.json");
  if (!in) throw std::runtime_error("naive: no config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  H_ = j["hidden_size"];
  heads_ = j["num_attention_heads"];
  I_ = j["intermediate_size"];
  layers_ = j["num_hidden_layers"];
  V_ = j["vocab_size"];
  P_ = j["max_position_embeddings"];
  T_ = j.value("type_vocab_size", 0);
  eps_ = j["layer_norm_eps"];
  act_ = j["hidden_act"];
  std::string type = j.value("model_type", "bert");
  mpnet_ = type == "mpnet";
  roberta_ = type == "roberta" || type == "xlm-roberta" || mpnet_;
  pad_ = j.value("pad_token_id", roberta_ ? 1 : 0);
  g_file = SafetensorsFile::open(dir + "/model.safetensors");
  for (const char* p : {"bert.", "roberta.", "mpnet."})
    if (g_file->contains(std::string(p) + "embeddings.word_embeddings.weight")) prefix_ = p;
  word_ = tensor("embeddings.word_embeddings.weight", size_t(V_) * H_);
  pos_ = tensor("embeddings.position_embeddings.weight", size_t(P_) * H_);
  if (T_ > 0) type_ = tensor("embeddings.token_type_embeddings.weight", size_t(T_) * H_);
  if (mpnet_) {
    buckets_ = j.value("relative_attention_num_buckets", 32);
    rel_ = tensor("encoder.relative_attention_bias.weight", size_t(buckets_) * heads_);
  }
  emb_ln_ = norm("embeddings.LayerNorm");
  for (int l = 0; l < layers_; ++l) {
    std::string p = "encoder.layer." + std::to_string(l) + ".";
    Layer L;
    if (mpnet_) {
      L.q = linear(p + "attention.attn.q", H_, H_);
      L.k = linear(p + "attention.attn.k", H_, H_);
      L.v = linear(p + "attention.attn.v", H_, H_);
      L.ao = linear(p + "attention.attn.o", H_, H_);
      L.ln1 = norm(p + "attention.LayerNorm");
    } else {
      L.q = linear(p + "attention.self.query", H_, H_);
      L.k = linear(p + "attention.self.key", H_, H_);
      L.v = linear(p + "attention.self.value", H_, H_);
      L.ao = linear(p + "attention.output.dense", H_, H_);
      L.ln1 = norm(p + "attention.output.LayerNorm");
    }
    L.inter = linear(p + "intermediate.dense", I_, H_);
    L.out = linear(p + "output.dense", H_, I_);
    L.ln2 = norm(p + "output.LayerNorm");
    stack_.push_back(std::move(L));
  }
}

// MPNet's bucket of relative position key - query: n = query - key; n < 0 (key after query) in
// the upper half; within a half, |n| < half/2 exactly, else logarithmically up to 128 (float32
// arithmetic, truncated, as the reference implementation computes it).
int NaiveBert::mpnet_bucket(long relative, int num_buckets) {
  long n = -relative;
  const int half = num_buckets / 2, exact = half / 2;
  int ret = n < 0 ? half : 0;
  n = std::abs(n);
  if (n < exact) return ret + int(n);
  float lg = std::log(float(n) / float(exact));
  float scale = float(std::log(128.0 / exact));
  long large = exact + long(lg / scale * float(half - exact));
  return ret + int(std::min<long>(large, half - 1));
}

NaiveBert::Mat NaiveBert::tensor(const std::string& name, size_t expect) const {
  const auto& t = g_file->get(prefix_ + name);
  auto f = t.to_float();
  if (f.size() != expect) throw std::runtime_error("naive: bad size for " + name);
  return Mat(f.begin(), f.end());
}

NaiveBert::Linear NaiveBert::linear(const std::string& name, int out, int in) const {
  Linear l;
  l.out = out;
  l.in = in;
  l.w = tensor(name + ".weight", size_t(out) * in);
  l.b = tensor(name + ".bias", size_t(out));
  return l;
}

NaiveBert::Norm NaiveBert::norm(const std::string& name) const {
  return Norm{tensor(name + ".weight", size_t(H_)), tensor(name + ".bias", size_t(H_))};
}

std::vector<double> NaiveBert::apply(const Linear& l, const std::vector<double>& x) const {
  std::vector<double> y(l.out);
  for (int o = 0; o < l.out; ++o) {
    double s = l.b[o];
    for (int i = 0; i < l.in; ++i) s += l.w[size_t(o) * l.in + i] * x[i];
    y[o] = s;
  }
  return y;
}

void NaiveBert::layer_norm(const Norm& n, std::vector<double>& x) const {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();  // biased variance, as torch.nn.LayerNorm
  for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - mean) / std::sqrt(var + eps_) * n.g[i] + n.b[i];
}

double NaiveBert::act(double x) const {
  if (act_ == "relu") return x > 0 ? x : 0;
  if (act_ == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

std::vector<std::vector<double>> NaiveBert::forward(const std::vector<int>& ids,
                                                    const std::vector<int>& type_ids) const {
  const size_t L = ids.size();
  const int dh = H_ / heads_;
  std::vector<std::vector<double>> x(L, std::vector<double>(H_));
  int seen = 0;  // non-pad tokens so far (RoBERTa)
  for (size_t t = 0; t < L; ++t) {
    size_t p = t;
    if (roberta_) p = ids[t] == pad_ ? size_t(pad_) : size_t(pad_ + ++seen);
    if (p >= size_t(P_)) throw std::runtime_error("naive: position beyond the table");
    for (int h = 0; h < H_; ++h)
      x[t][h] = word_[size_t(ids[t]) * H_ + h] + pos_[p * H_ + h] + (T_ > 0 ? type_[size_t(type_ids[t]) * H_ + h] : 0.0);
    layer_norm(emb_ln_, x[t]);
  }
  for (const Layer& ly : stack_) {
    std::vector<std::vector<double>> q(L), k(L), v(L);
    for (size_t t = 0; t < L; ++t) {
      q[t] = apply(ly.q, x[t]);
      k[t] = apply(ly.k, x[t]);
      v[t] = apply(ly.v, x[t]);
    }
    std::vector<std::vector<double>> ctx(L, std::vector<double>(H_, 0.0));
    for (int hd = 0; hd < heads_; ++hd) {
      for (size_t i = 0; i < L; ++i) {
        std::vector<double> s(L);
        double mx = -1e300;
        for (size_t j = 0; j < L; ++j) {
          double d = 0;
          for (int e = 0; e < dh; ++e) d += q[i][hd * dh + e] * k[j][hd * dh + e];
          s[j] = d / std::sqrt(double(dh));
          if (mpnet_) s[j] += rel_[size_t(mpnet_bucket(long(j) - long(i), buckets_)) * heads_ + hd];
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (size_t j = 0; j < L; ++j) z += (s[j] = std::exp(s[j] - mx));
        for (size_t j = 0; j < L; ++j)
          for (int e = 0; e < dh; ++e) ctx[i][hd * dh + e] += s[j] / z * v[j][hd * dh + e];
      }
    }
    for (size_t t = 0; t < L; ++t) {
      std::vector<double> a = apply(ly.ao, ctx[t]);
      for (int h = 0; h < H_; ++h) a[h] += x[t][h];
      layer_norm(ly.ln1, a);
      std::vector<double> in = apply(ly.inter, a);
      for (double& u : in) u = act(u);
      std::vector<double> o = apply(ly.out, in);
      for (int h = 0; h < H_; ++h) o[h] += a[h];
      layer_norm(ly.ln2, o);
      x[t] = o;
    }
  }
  return x;
}

std::vector<double> NaiveBert::pool(const std::vector<std::vector<double>>& states, const std::string& mode) {
  std::vector<double> p(states[0].size(), 0.0);
  if (mode == "cls") {
    p = states.front();
  } else if (mode == "last") {
    p = states.back();
  } else {
    for (const auto& s : states)
      for (size_t h = 0; h < p.size(); ++h) p[h] += s[h] / states.size();
  }
  double n = 0;
  for (double v : p) n += v * v;
  n = std::sqrt(n);
  for (double& v : p) v /= n;
  return p;
}

}  // namespace sieve::test
