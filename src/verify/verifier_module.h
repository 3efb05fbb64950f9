// A verifier's configuration and learnable module with the scoring on maps: what the Verifier
// interface wraps for inference and what the trainers (src/train) optimise.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>

#include "sieve/safetensors.h"
#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

class VerifierModule {
 public:
  /// Completes `c` (F4 width 0 = encoder_dim) and builds F3/F4 with PyTorch's default
  /// initialisation from `seed`, in eval mode. Throws sieve::Error for an invalid config.
  VerifierModule(VerifierConfig c, uint64_t seed);

  const VerifierConfig& config() const { return c_; }
  /// The learnable module (F3, F4), or nullptr (F0-F2).
  const std::shared_ptr<torch::nn::Module>& module() const { return module_; }
  size_t parameter_count() const;

  /// Scores [B] of the maps, with the penalty when configured. `inference`: F4's fast path
  /// (eval mode only, no autograd); otherwise the differentiable module as it stands (train or eval).
  at::Tensor scores(const Maps& m, bool inference) const;
  /// The score of the maps as they are (query rows, candidate columns); scores() averages it
  /// over both directions when the config is symmetric.
  at::Tensor one_direction(const Maps& m, bool inference) const;

  /// Writes `config` (usually config() with a threshold or identity set) and the weights.
  void write(const std::string& path, const VerifierConfig& config) const;
  /// Copies weights from a verifier file; throws naming a missing tensor.
  void load_weights(const SafetensorsFile& f);

 private:
  VerifierConfig c_;
  std::shared_ptr<torch::nn::Module> module_;
};

}  // namespace sieve::verify
