#include "unit/model/naive_modernbert.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sieve/safetensors.h"

namespace sieve::test {
namespace {
std::shared_ptr<const SafetensorsFile> g_modern_file;  // kept alive for the reference's lifetime
}

NaiveModernBert::NaiveModernBert(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  if (!in) throw std::runtime_error("naive modernbert: no config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  if (j.value("model_type", "") != "modernbert") throw std::runtime_error("naive modernbert: not a modernbert");
  H_ = j["hidden_size"];
  heads_ = j["num_attention_heads"];
  I_ = j["intermediate_size"];
  layers_ = j["num_hidden_layers"];
  V_ = j["vocab_size"];
  every_ = j.value("global_attn_every_n_layers", 3);
  window_ = j.value("local_attention", 128);
  eps_ = j.value("norm_eps", 1e-5);
  global_theta_ = j.value("global_rope_theta", 160000.0);
  local_theta_ = j.value("local_rope_theta", global_theta_);
  norm_bias_ = j.value("norm_bias", false);
  attn_bias_ = j.value("attention_bias", false);
  mlp_bias_ = j.value("mlp_bias", false);
  act_ = j.value("hidden_activation", "gelu");
  g_modern_file = SafetensorsFile::open(dir + "/model.safetensors");
  if (g_modern_file->contains("model.embeddings.tok_embeddings.weight")) prefix_ = "model.";
  tok_ = tensor("embeddings.tok_embeddings.weight", size_t(V_) * H_);
  emb_norm_ = norm("embeddings.norm");
  for (int l = 0; l < layers_; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    Layer L;
    if (l > 0) L.attn_norm = norm(p + "attn_norm");
    L.wqkv = linear(p + "attn.Wqkv", 3 * H_, H_, attn_bias_);
    L.wo = linear(p + "attn.Wo", H_, H_, attn_bias_);
    L.mlp_norm = norm(p + "mlp_norm");
    L.wi = linear(p + "mlp.Wi", 2 * I_, H_, mlp_bias_);
    L.wo2 = linear(p + "mlp.Wo", H_, I_, mlp_bias_);
    stack_.push_back(std::move(L));
  }
  final_norm_ = norm("final_norm");
}

NaiveModernBert::Vec NaiveModernBert::tensor(const std::string& name, size_t expect) const {
  auto f = g_modern_file->get(prefix_ + name).to_float();
  if (f.size() != expect) throw std::runtime_error("naive modernbert: bad size for " + name);
  return Vec(f.begin(), f.end());
}

NaiveModernBert::Linear NaiveModernBert::linear(const std::string& name, int out, int in, bool bias) const {
  Linear l;
  l.out = out;
  l.in = in;
  l.w = tensor(name + ".weight", size_t(out) * in);
  l.b = bias ? tensor(name + ".bias", size_t(out)) : Vec(size_t(out), 0.0);
  return l;
}

NaiveModernBert::Norm NaiveModernBert::norm(const std::string& name) const {
  Norm n;
  n.present = true;
  n.g = tensor(name + ".weight", size_t(H_));
  n.b = norm_bias_ ? tensor(name + ".bias", size_t(H_)) : Vec(size_t(H_), 0.0);
  return n;
}

NaiveModernBert::Vec NaiveModernBert::apply(const Linear& l, const Vec& x) const {
  Vec y(l.out);
  for (int o = 0; o < l.out; ++o) {
    double s = l.b[o];
    for (int i = 0; i < l.in; ++i) s += l.w[size_t(o) * l.in + i] * x[i];
    y[o] = s;
  }
  return y;
}

void NaiveModernBert::layer_norm(const Norm& n, Vec& x) const {
  if (!n.present) return;  // layer 0's attn_norm is the identity
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - mean) / std::sqrt(var + eps_) * n.g[i] + n.b[i];
}

double NaiveModernBert::act(double x) const {
  if (act_ == "relu") return x > 0 ? x : 0;
  if (act_ == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

std::vector<std::vector<double>> NaiveModernBert::forward(const std::vector<int>& ids) const {
  const size_t L = ids.size();
  const int dh = H_ / heads_, half = dh / 2;
  std::vector<Vec> x(L, Vec(H_));
  for (size_t t = 0; t < L; ++t) {
    for (int h = 0; h < H_; ++h) x[t][h] = tok_[size_t(ids[t]) * H_ + h];
    layer_norm(emb_norm_, x[t]);
  }
  for (int l = 0; l < layers_; ++l) {
    const Layer& ly = stack_[l];
    const bool global = l % every_ == 0;
    const double theta = global ? global_theta_ : local_theta_;
    std::vector<Vec> q(L), k(L), v(L);
    for (size_t t = 0; t < L; ++t) {
      Vec h = x[t];
      layer_norm(ly.attn_norm, h);
      Vec qkv = apply(ly.wqkv, h);
      q[t].assign(qkv.begin(), qkv.begin() + H_);
      k[t].assign(qkv.begin() + H_, qkv.begin() + 2 * H_);
      v[t].assign(qkv.begin() + 2 * H_, qkv.end());
      // Rotary position t: pair e with e + half inside each head, angle t / theta^(2e/dh).
      for (int hd = 0; hd < heads_; ++hd)
        for (int e = 0; e < half; ++e) {
          double ang = double(t) / std::pow(theta, 2.0 * e / dh), c = std::cos(ang), s = std::sin(ang);
          for (Vec* u : {&q[t], &k[t]}) {
            double a = (*u)[hd * dh + e], b = (*u)[hd * dh + e + half];
            (*u)[hd * dh + e] = a * c - b * s;
            (*u)[hd * dh + e + half] = b * c + a * s;
          }
        }
    }
    std::vector<Vec> ctx(L, Vec(H_, 0.0));
    for (int hd = 0; hd < heads_; ++hd)
      for (size_t i = 0; i < L; ++i) {
        std::vector<size_t> keys;
        for (size_t j = 0; j < L; ++j) {
          long d = long(i) - long(j);
          if (global || std::abs(d) <= window_ / 2) keys.push_back(j);
        }
        Vec s(keys.size());
        double mx = -1e300;
        for (size_t n = 0; n < keys.size(); ++n) {
          double dot = 0;
          for (int e = 0; e < dh; ++e) dot += q[i][hd * dh + e] * k[keys[n]][hd * dh + e];
          s[n] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[n]);
        }
        double z = 0;
        for (double& u : s) z += (u = std::exp(u - mx));
        for (size_t n = 0; n < keys.size(); ++n)
          for (int e = 0; e < dh; ++e) ctx[i][hd * dh + e] += s[n] / z * v[keys[n]][hd * dh + e];
      }
    for (size_t t = 0; t < L; ++t) {
      Vec a = apply(ly.wo, ctx[t]);
      for (int h = 0; h < H_; ++h) a[h] += x[t][h];
      Vec m = a;
      layer_norm(ly.mlp_norm, m);
      Vec g = apply(ly.wi, m);
      Vec in(I_);
      for (int u = 0; u < I_; ++u) in[u] = act(g[u]) * g[I_ + u];
      Vec o = apply(ly.wo2, in);
      for (int h = 0; h < H_; ++h) o[h] += a[h];
      x[t] = o;
    }
  }
  for (auto& r : x) layer_norm(final_norm_, r);
  return x;
}

}  // namespace sieve::test
