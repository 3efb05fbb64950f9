#include "verify/f3_cnn.h"

#include "verify/phi.h"

namespace sieve::verify {

F3CnnImpl::F3CnnImpl(const F3Options& o, int64_t map_size) : o_(o), size_(map_size) {
  convs_ = register_module("convs", torch::nn::ModuleList());
  norms_ = register_module("norms", torch::nn::ModuleList());
  int64_t in = phi_channels(o.augmented, o.exact_match);
  for (int b = 0; b < o.blocks; ++b) {
    int64_t out = static_cast<int64_t>(o.hidden) << b;
    convs_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, o.kernel).padding(o.kernel / 2)));
    norms_->push_back(torch::nn::BatchNorm2d(out));
    in = out;
  }
  fc1_ = register_module("fc1", torch::nn::Linear(in, o.mlp_hidden));
  fc2_ = register_module("fc2", torch::nn::Linear(o.mlp_hidden, 1));
  drop_ = register_module("dropout", torch::nn::Dropout(o.dropout));
}

at::Tensor F3CnnImpl::forward(const Maps& m) {
  at::Tensor x = phi(m, size_, o_.augmented, /*zero_invalid=*/false, o_.exact_match);
  for (size_t b = 0; b < convs_->size(); ++b) {
    x = convs_[b]->as<torch::nn::Conv2d>()->forward(x);
    x = norms_[b]->as<torch::nn::BatchNorm2d>()->forward(x);
    x = at::max_pool2d(at::relu(x), {2, 2}, {2, 2});
  }
  x = x.mean({2, 3});  // global average pool
  x = drop_->forward(at::relu(fc1_->forward(x)));
  return at::tanh(fc2_->forward(x)).squeeze(1);
}

}  // namespace sieve::verify
