#include "verify/map_scores.h"

#include <limits>

namespace sieve::verify {
namespace {

constexpr double kEps = 1e-9;

// Mean over valid query tokens of per-token values t [B, m].
at::Tensor mean_over_query(const at::Tensor& t, const at::Tensor& q_mask) {
  return (t * q_mask).sum(1) / q_mask.sum(1).clamp_min(1.0);
}

}  // namespace

at::Tensor f0_score(const Maps& m) { return (m.M * m.pair).sum({1, 2}) / m.pair.sum({1, 2}).clamp_min(1.0); }

at::Tensor f1_score(const Maps& m) {
  const double ninf = -std::numeric_limits<double>::infinity();
  at::Tensor filled = m.M.masked_fill(m.c_mask.unsqueeze(1) == 0, ninf);
  at::Tensor row_max = std::get<0>(filled.max(2));
  row_max = row_max.masked_fill(at::isinf(row_max), 0.0);  // rows without a valid column
  return mean_over_query(row_max, m.q_mask);
}

at::Tensor f2_score(const Maps& m, const F2Options& o) {
  const int64_t rows = m.M.size(1), cols = m.M.size(2);
  auto opts = m.M.options();
  at::Tensor i = at::arange(rows, opts).unsqueeze(1);
  at::Tensor j = at::arange(cols, opts).unsqueeze(0);
  at::Tensor pen = o.lambda * (i - j).abs();  // [m, n], raw token positions ([CLS] = 0)
  at::Tensor logits = (m.M - pen) / std::max(o.tau, kEps);
  at::Tensor allowed = m.c_mask.unsqueeze(1).expand_as(m.M) > 0;
  if (o.bandwidth >= 0) allowed = allowed & (pen <= o.bandwidth).unsqueeze(0);  // scaled penalty, as the authors' code
  const double ninf = -std::numeric_limits<double>::infinity();
  at::Tensor masked = logits.masked_fill(~allowed, ninf);
  at::Tensor row_max = std::get<0>(masked.max(2, true));
  row_max = row_max.masked_fill(at::isinf(row_max), 0.0);
  at::Tensor e = (masked - row_max).exp() * allowed.to(m.M.scalar_type());
  at::Tensor A = e / e.sum(2, true).clamp_min(kEps);  // fully masked rows: all-zero weights
  at::Tensor t = (A * m.M).sum(2);
  at::Tensor s = mean_over_query(t, m.q_mask);
  if (o.gamma_mono > 0 && rows > 1) {
    at::Tensor p = (A * j).sum(2);  // expected aligned position per query token
    at::Tensor both = m.q_mask.slice(1, 0, rows - 1) * m.q_mask.slice(1, 1, rows);
    at::Tensor viol = at::relu(p.slice(1, 0, rows - 1) - p.slice(1, 1, rows)).pow(2) * both;
    s = s - o.gamma_mono * viol.sum(1) / both.sum(1).clamp_min(1.0);
  }
  return s;
}

at::Tensor conditional_penalty(const at::Tensor& raw, const at::Tensor& base, const PenaltyOptions& o) {
  return base - o.beta * at::sigmoid(20.0 * (base - o.tau_p)) * (1.0 - raw);
}

}  // namespace sieve::verify
