// The encoder networks sieve runs (BERT, RoBERTa / XLM-R, ModernBERT) behind one interface, so
// that inference (encoder.cpp) and training (train/trainable_encoder) hold any family. Internal
// to sieve (the public API is sieve/encoder.h).
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <memory>

#include "sieve/model.h"

namespace sieve {

class SafetensorsFile;

/// A transformer encoder returning final-layer token states. Submodules carry Hugging Face's
/// parameter names, so weights load by name and named_parameters() saves in HF layout.
struct EncoderBackbone : torch::nn::Module {
  /// input_ids, attention_mask, token_type_ids: [B, L] int64, right-padded (token_type_ids may be
  /// undefined; families without token types ignore them). Returns [B, L, H]; in inference with
  /// padding, padded rows are 0.
  virtual at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                             const at::Tensor& token_type_ids = {}) = 0;
  /// Copies every parameter from a safetensors file (with or without the family's prefix:
  /// "bert.", "roberta.", "model."); sieve::Error names a missing or misshapen tensor.
  virtual void load_weights(const SafetensorsFile& file) = 0;
  /// Builds inference-only caches (fused weights, packed CPU layers at `precision`); call after
  /// load_weights / training / moving the model. `int8_levels`: PackedLinear's int8 grid (0 = the
  /// CPU's). Returns the int8 grid the layers were packed on in int8, 0 when they were packed at
  /// fp32 or bf16, -1 when nothing was packed (CUDA, or a family without packed layers: fp32).
  virtual int prepare_inference(Precision precision = Precision::Fp32, int int8_levels = 0) { return -1; }
  /// The token embedding matrix [V, H] (tied to an MLM decoder).
  virtual at::Tensor word_embeddings() const = 0;
  virtual const BertConfig& config() const = 0;
};

/// The network of config.model_type with freshly initialised weights; `dropout` acts only in
/// train(). sieve::Error for a model_type without an implementation.
std::shared_ptr<EncoderBackbone> make_encoder_backbone(const BertConfig& config, double dropout = 0.1);

}  // namespace sieve
