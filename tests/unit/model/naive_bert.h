// An independent scalar BERT forward pass (plain loops in double precision, no libtorch), used as
// the reference the libtorch encoder is checked against. Also the RoBERTa family (model_type
// "roberta", "xlm-roberta"): position of the k-th non-pad token = pad_token_id + k, pads at
// pad_token_id. And MPNet (model_type "mpnet"): those positions, MPNet's parameter names, and the
// relative position bias of T5-style bidirectional buckets added to every layer's scores.
#pragma once

#include <string>
#include <vector>

namespace sieve::test {

class NaiveBert {
 public:
  /// Reads config.json (with its own JSON parsing) and model.safetensors of a model directory.
  explicit NaiveBert(const std::string& dir);
  /// Final-layer states of one unpadded sequence: L rows of H values.
  std::vector<std::vector<double>> forward(const std::vector<int>& ids, const std::vector<int>& type_ids) const;
  /// Pools states ("cls", "mean", "last") and L2-normalises.
  static std::vector<double> pool(const std::vector<std::vector<double>>& states, const std::string& mode);
  int hidden() const { return H_; }
  /// MPNet's bucket of a relative position (key - query), the reference's own arithmetic.
  static int mpnet_bucket(long relative, int num_buckets);

 private:
  using Mat = std::vector<double>;  // row-major
  struct Linear { Mat w; Mat b; int out = 0, in = 0; };
  struct Norm { Mat g; Mat b; };
  struct Layer { Linear q, k, v, ao; Norm ln1; Linear inter, out; Norm ln2; };
  Linear linear(const std::string& name, int out, int in) const;
  Norm norm(const std::string& name) const;
  Mat tensor(const std::string& name, size_t expect) const;
  std::vector<double> apply(const Linear& l, const std::vector<double>& x) const;
  void layer_norm(const Norm& n, std::vector<double>& x) const;
  double act(double x) const;

  std::string dir_, act_;
  int H_ = 0, heads_ = 0, I_ = 0, layers_ = 0, V_ = 0, P_ = 0, T_ = 0;
  double eps_ = 1e-12;
  std::string prefix_;  // "", "bert." or "roberta."
  bool roberta_ = false, mpnet_ = false;
  int buckets_ = 32;
  Mat rel_;  // [buckets, heads]
  int pad_ = 0;
  Mat word_, pos_, type_;
  Norm emb_ln_;
  std::vector<Layer> stack_;
  const void* file_ = nullptr;
};

}  // namespace sieve::test
