// An independent scalar ModernBERT forward pass (plain loops in double precision, no libtorch),
// written from the published architecture: LayerNorm'd token embeddings, pre-norm layers (the
// first without attn_norm), rotary positions (rotate-half, per-layer base), global layers every
// global_attn_every_n_layers from layer 0 and sliding-window layers (|i - j| <= local_attention/2)
// between, GeGLU feed-forward, a final norm. The reference the libtorch ModernBERT is checked against.
#pragma once

#include <string>
#include <vector>

namespace sieve::test {

class NaiveModernBert {
 public:
  explicit NaiveModernBert(const std::string& dir);
  /// Final-layer states of one unpadded sequence: L rows of H values.
  std::vector<std::vector<double>> forward(const std::vector<int>& ids) const;
  int hidden() const { return H_; }

 private:
  using Vec = std::vector<double>;
  struct Linear { Vec w, b; int out = 0, in = 0; };
  struct Norm { Vec g, b; bool present = false; };
  struct Layer { Norm attn_norm, mlp_norm; Linear wqkv, wo, wi, wo2; };
  Vec tensor(const std::string& name, size_t expect) const;
  Linear linear(const std::string& name, int out, int in, bool bias) const;
  Norm norm(const std::string& name) const;
  Vec apply(const Linear& l, const Vec& x) const;
  void layer_norm(const Norm& n, Vec& x) const;
  double act(double x) const;

  int H_ = 0, heads_ = 0, I_ = 0, layers_ = 0, V_ = 0, every_ = 1, window_ = 0;
  double eps_ = 1e-5, global_theta_ = 160000, local_theta_ = 10000;
  bool norm_bias_ = false, attn_bias_ = false, mlp_bias_ = false;
  std::string act_, prefix_;
  Vec tok_;
  Norm emb_norm_, final_norm_;
  std::vector<Layer> stack_;
};

}  // namespace sieve::test
