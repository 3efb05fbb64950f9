// BERT for sequence classification (Hugging Face's BertForSequenceClassification): the BERT
// backbone, the pooler (dense + tanh on [CLS]) and a linear classifier. The network of the
// cross-encoder (sieve/cross_encoder.h) and of its trainer. Internal to sieve.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <utility>
#include <vector>

#include "model/bert.h"
#include "sieve/model.h"
#include "sieve/tokenizer.h"

namespace sieve {

class SafetensorsFile;

/// Token ids of a batch of pairs, padded to its longest member.
struct PairBatch {
  at::Tensor ids, mask, types;  ///< [B, L] int64 on the CPU
  size_t truncated = 0;         ///< pairs cut to max_length
};

/// Frames each pair as [CLS] a [SEP] b [SEP] (type ids 0 up to the first [SEP], 1 after), cut to
/// max_length tokens longest-first, and pads with `pad_id`. Texts are stripped of surrounding
/// white space first, as sentence-transformers' CrossEncoder does.
PairBatch encode_pair_batch(const Tokenizer& tokenizer, const std::vector<const std::pair<std::string, std::string>*>& pairs,
                            size_t max_length, int64_t pad_id);

/// The token cap a cross-encoder folder implies, as CrossEncoder(dir) applies it:
/// tokenizer_config.json's model_max_length (512 when absent or absurd), at most the positions
/// config.json allows.
size_t cross_encoder_max_length(const std::string& dir, const BertConfig& config);

struct BertClassifierImpl : torch::nn::Module {
  /// A fresh network (weights as libtorch initialises them: load or init_head next). `dropout`
  /// acts only in train() (hidden, attention and the classifier's input, as in Hugging Face).
  BertClassifierImpl(const BertConfig& config, int64_t num_labels, double dropout = 0.1);
  /// input_ids, attention_mask, token_type_ids: [B, L] int64. Returns the logits [B, num_labels].
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& token_type_ids);
  /// Copies the backbone (keys with or without "bert."), and the pooler ("bert.pooler.dense.*" or
  /// "pooler.dense.*") and classifier ("classifier.*") when the file has them. Returns which of
  /// the two head parts were found; sieve::Error for a missing backbone tensor or a wrong shape.
  struct Loaded {
    bool pooler = false, classifier = false;
  };
  Loaded load_weights(const SafetensorsFile& file);
  /// Hugging Face's initialisation of a new head: weights N(0, init_std), zero biases, from `seed`.
  /// `pooler` false: only the classifier.
  void init_head(uint64_t seed, bool pooler, double init_std = 0.02);
  /// Every tensor under its BertForSequenceClassification name ("bert.embeddings...",
  /// "bert.pooler.dense.weight", "classifier.weight", ...), for saving.
  std::vector<std::pair<std::string, at::Tensor>> hf_tensors() const;
  /// Inference caches of the backbone (fused QKV); call after loading or training.
  void prepare_inference() { bert->prepare_inference(); }

  BertModel bert{nullptr};
  torch::nn::Linear pooler{nullptr}, classifier{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(BertClassifier);

/// config.json of a BertForSequenceClassification with `num_labels` outputs, made from an
/// encoder's config.json text (every other key kept): architectures, id2label, label2id.
std::string classifier_config_json(const std::string& encoder_config_json, int64_t num_labels);
/// The number of labels of a config.json: num_labels, else the size of id2label, else 2 (as
/// transformers); 0 when it is not a *ForSequenceClassification config (no architectures entry
/// ending so and no id2label).
int64_t classifier_num_labels(const std::string& config_json_text);

}  // namespace sieve
