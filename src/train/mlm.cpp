#include "train/mlm.h"

#include <algorithm>

#include "sieve/error.h"

namespace sieve::train {

std::vector<std::vector<int32_t>> pack_sequences(const std::vector<std::vector<std::vector<int32_t>>>& documents,
                                                 size_t seq_len, int32_t cls, int32_t sep) {
  SIEVE_THROW_IF_NOT(seq_len >= 3, "sequence length must leave room for [CLS] and [SEP]");
  const size_t room = seq_len - 2;
  std::vector<std::vector<int32_t>> out;
  for (const auto& doc : documents) {
    std::vector<int32_t> cur;
    auto flush = [&] {
      if (cur.empty()) return;
      std::vector<int32_t> seq;
      seq.reserve(cur.size() + 2);
      seq.push_back(cls);
      seq.insert(seq.end(), cur.begin(), cur.end());
      seq.push_back(sep);
      out.push_back(std::move(seq));
      cur.clear();
    };
    for (const auto& sentence : doc)
      for (int32_t id : sentence) {
        cur.push_back(id);
        if (cur.size() == room) flush();
      }
    flush();
  }
  return out;
}

Masked mask_tokens(const at::Tensor& ids, const at::Tensor& attention_mask, const std::vector<int32_t>& special,
                   int32_t mask_id, int64_t vocab, double p, at::Generator gen) {
  at::Tensor candidate = attention_mask.to(at::kBool);
  for (int32_t s : special) candidate = candidate & (ids != s);
  at::Tensor chosen = (at::rand(ids.sizes(), gen, at::TensorOptions().dtype(at::kFloat)) < p) & candidate;
  Masked m;
  m.labels = ids.masked_fill(~chosen, -100);
  at::Tensor r = at::rand(ids.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
  at::Tensor to_mask = chosen & (r < 0.8);
  at::Tensor to_random = chosen & (r >= 0.8) & (r < 0.9);
  at::Tensor random_ids = at::randint(0, vocab, ids.sizes(), gen, at::TensorOptions().dtype(ids.scalar_type()));
  m.input = ids.masked_fill(to_mask, mask_id);
  m.input = at::where(to_random, random_ids, m.input);
  return m;
}

MlmHeadImpl::MlmHeadImpl(int64_t hidden, int64_t vocab, double eps) {
  dense = register_module("dense", torch::nn::Linear(hidden, hidden));
  norm = register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(eps)));
  bias = register_parameter("bias", at::zeros({vocab}));
}

at::Tensor MlmHeadImpl::forward(const at::Tensor& states, const at::Tensor& word_embeddings) {
  at::Tensor h = norm->forward(at::gelu(dense->forward(states)));
  return at::linear(h, word_embeddings, bias);
}

void hf_init(torch::nn::Module& m, double range, int64_t pad_id) {
  at::NoGradGuard no_grad;
  for (auto& p : m.named_parameters(/*recurse=*/true)) {
    const std::string& n = p.key();
    at::Tensor& t = p.value();
    const bool layer_norm = n.find("LayerNorm") != std::string::npos;
    if (layer_norm && n.size() >= 6 && n.compare(n.size() - 6, 6, "weight") == 0) {
      t.fill_(1.0);
    } else if (n.size() >= 4 && n.compare(n.size() - 4, 4, "bias") == 0) {
      t.zero_();
    } else {
      t.normal_(0.0, range);
      if (n.find("word_embeddings") != std::string::npos && pad_id >= 0 && pad_id < t.size(0)) t[pad_id].zero_();
    }
  }
}

}  // namespace sieve::train
