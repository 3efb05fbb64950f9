// MLM pretraining pieces: packing tokenized sentences into sequences, dynamic masking, the head.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/bert.h"
#include "sieve/tokenizer.h"

namespace sieve::train {

/// Concatenates the documents' token ids (sentences in order; a document boundary is not
/// crossed by a sequence) and cuts them into sequences of seq_len - 2 tokens framed as
/// [CLS] ... [SEP]; a document's last piece may be shorter. Documents are lists of sentences'
/// ids (no specials).
std::vector<std::vector<int32_t>> pack_sequences(const std::vector<std::vector<std::vector<int32_t>>>& documents,
                                                 size_t seq_len, int32_t cls, int32_t sep);

/// Masked inputs and labels for a batch [B, L]: each position that is not special (`special`
/// ids) and not padding is chosen with probability p; chosen positions keep their id as label
/// (others -100) and become [MASK] (80%), a random id in [0, vocab) (10%) or stay (10%).
struct Masked {
  at::Tensor input, labels;
};
Masked mask_tokens(const at::Tensor& ids, const at::Tensor& attention_mask, const std::vector<int32_t>& special,
                   int32_t mask_id, int64_t vocab, double p, at::Generator gen);

/// BertOnlyMLMHead: dense - GELU - LayerNorm, then logits through the word embeddings (tied)
/// plus a bias. Tensor names follow Hugging Face ("cls.predictions.*").
class MlmHeadImpl : public torch::nn::Module {
 public:
  MlmHeadImpl(int64_t hidden, int64_t vocab, double eps);
  at::Tensor forward(const at::Tensor& states, const at::Tensor& word_embeddings);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  at::Tensor bias;
};
TORCH_MODULE(MlmHead);

/// Hugging Face's BERT initialisation in place: Linear and Embedding weights N(0, range), biases
/// 0, LayerNorm weight 1 and bias 0, the padding embedding row 0.
void hf_init(torch::nn::Module& m, double range, int64_t pad_id);

}  // namespace sieve::train
