// An encoder whose weights can be trained: the network of a model directory in train mode,
// its tokenizer and pooling, and the writer of complete model directories (checkpoints).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "model/bert.h"  // pool_and_normalize
#include "model/encoder_backbone.h"
#include "sieve/model.h"
#include "sieve/tokenizer.h"

namespace sieve::train {

/// Token ids of a batch, padded to its longest member.
struct TokenBatch {
  at::Tensor ids, mask, types;  ///< [B, L] int64
};

class TrainableEncoder {
 public:
  /// Loads `model_dir` (weights, tokenizer, pooling); max_length 0 = the model's max_seq_length.
  TrainableEncoder(const std::string& model_dir, size_t max_length, const c10::Device& device, double dropout = 0.1);

  /// Tokenizes and pads `texts` (truncating to max_length) on the encoder's device.
  TokenBatch tokenize(const std::vector<std::string>& texts) const;
  /// Final-layer token states [B, L, H] (differentiable; dropout when the module trains).
  at::Tensor states(const TokenBatch& batch);
  /// Pooled, L2-normalised keys [B, H], in the order of `texts`. The texts go through the
  /// network in chunks of similar token length (length_buckets), which gives the same keys as one
  /// padded batch (padding is masked) at a fraction of the cost when lengths differ.
  at::Tensor embed(const std::vector<std::string>& texts);
  /// The fixed cost of one more chunk in embed, in padded tokens.
  static constexpr size_t kChunkCost = 1024;

  /// The network (any family); `model()->` reaches the torch::nn::Module and EncoderBackbone.
  std::shared_ptr<EncoderBackbone>& model() { return model_; }
  const ModelInfo& info() const { return info_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  Pooling pooling() const { return info_.pooling; }
  size_t max_length() const { return max_length_; }
  const c10::Device& device() const { return device_; }

  /// Writes a complete model directory at `dir` (the source directory's configuration,
  /// tokenizer and sentence-transformers files, and model.safetensors with these weights),
  /// atomically: built in `dir.partial`, then swapped in. `extra` tensors (e.g. an MLM head)
  /// are stored next to the encoder's, and `prefix` ("bert.") before the encoder's names.
  void save(const std::string& dir, const std::vector<std::pair<std::string, at::Tensor>>& extra = {},
            const std::string& prefix = "") const;

 private:
  std::vector<Encoding> encode(const std::vector<std::string>& texts) const;
  TokenBatch pad(const std::vector<Encoding>& enc, const std::vector<size_t>& rows) const;
  std::string source_dir_;
  ModelInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<EncoderBackbone> model_;
  size_t max_length_ = 0;
  c10::Device device_;
};

/// Splits texts sorted by token length into chunks that minimise the padded tokens computed plus
/// `chunk_cost` per chunk; returns each chunk's end (exclusive), the last being the count.
std::vector<size_t> length_buckets(const std::vector<size_t>& sorted_lengths, size_t chunk_cost);

/// Copies the non-weight files of a model directory (configuration, tokenizer files,
/// sentence-transformers module folders) from `from` into the existing directory `to`.
void copy_model_files(const std::string& from, const std::string& to);

/// Replaces directory `dir` by the complete directory `staged` (rename; the old one is removed).
void replace_dir(const std::string& staged, const std::string& dir);

}  // namespace sieve::train
