// F3: a tiny CNN over phi(M) (paper.md, "F3"; sizes from paper-reference-code.md).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

class F3CnnImpl : public torch::nn::Module {
 public:
  F3CnnImpl(const F3Options& o, int64_t map_size);
  /// Scores in [-1, 1], shape [B].
  at::Tensor forward(const Maps& m);

 private:
  F3Options o_;
  int64_t size_;
  torch::nn::ModuleList convs_{nullptr}, norms_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  torch::nn::Dropout drop_{nullptr};
};
TORCH_MODULE(F3Cnn);

}  // namespace sieve::verify
