#include "train/losses.h"

#include <algorithm>

namespace sieve::train {

at::Tensor mnrl_loss(const at::Tensor& anchors, const at::Tensor& candidates, double scale, bool symmetric) {
  const int64_t B = anchors.size(0);
  at::Tensor a = anchors / anchors.norm(2, -1, true).clamp_min(1e-12);
  at::Tensor c = candidates / candidates.norm(2, -1, true).clamp_min(1e-12);
  at::Tensor target = at::arange(B, at::TensorOptions().dtype(at::kLong).device(a.device()));
  at::Tensor forward = at::cross_entropy_loss(at::mm(a, c.t()) * scale, target);
  if (!symmetric) return forward;
  at::Tensor backward = at::cross_entropy_loss(at::mm(c.narrow(0, 0, B), a.t()) * scale, target);
  return (forward + backward) / 2;
}

at::Tensor verifier_infonce(const at::Tensor& S, const at::Tensor& own_negative, double tau, int64_t first_row,
                            int64_t total_rows) {
  const int64_t b = S.size(0), total = total_rows > 0 ? total_rows : b;
  at::Tensor logits = at::cat({S, own_negative.view({b, 1})}, 1) / tau;
  at::Tensor target = at::arange(first_row, first_row + b, at::TensorOptions().dtype(at::kLong).device(S.device()));
  return at::cross_entropy_loss(logits, target, {}, at::Reduction::Sum) / static_cast<double>(total);
}

at::Tensor verifier_pointwise(const at::Tensor& positive, const at::Tensor& negative, double tau,
                              int64_t total_rows) {
  const int64_t total = total_rows > 0 ? total_rows : positive.size(0);
  // -log sigmoid(x) = softplus(-x); -log(1 - sigmoid(x)) = softplus(x).
  at::Tensor sum = at::softplus(-positive / tau).sum() + at::softplus(negative / tau).sum();
  return sum / static_cast<double>(2 * total);
}

at::Tensor verifier_labelled_bce(const at::Tensor& scores, const at::Tensor& labels, double tau, int64_t total_rows) {
  const int64_t total = total_rows > 0 ? total_rows : scores.size(0);
  at::Tensor sum = (labels * at::softplus(-scores / tau) + (1 - labels) * at::softplus(scores / tau)).sum();
  return sum / static_cast<double>(total);
}

double linear_schedule(size_t step, size_t total, size_t warmup) {
  if (step < warmup) return static_cast<double>(step) / static_cast<double>(std::max<size_t>(1, warmup));
  if (step >= total) return 0.0;
  return static_cast<double>(total - step) / static_cast<double>(std::max<size_t>(1, total - warmup));
}

}  // namespace sieve::train
