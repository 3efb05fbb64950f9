#include "verify/map_scores.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sieve/error.h"

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

at::Tensor cue_gap(const Maps& m, const CueSequences& cues) {
  require_ids(m, "its cue penalty");
  // Padding ids are -1, never a cue's, so a run cannot reach past the kept tokens.
  at::Tensor q = (is_cue(m.q_ids, cues, m.q_mask, /*starts_only=*/true) * m.q_mask).sum(1);
  at::Tensor c = (is_cue(m.c_ids, cues, m.c_mask, /*starts_only=*/true) * m.c_mask).sum(1);
  return (q - c).abs();
}

OrderFacts order_facts(const std::vector<int64_t>& q, const std::vector<int64_t>& c, const std::vector<int32_t>& voice_ids) {
  auto voices = [&](const std::vector<int64_t>& t) {
    return std::count_if(t.begin(), t.end(), [&](int64_t id) {
      return std::find(voice_ids.begin(), voice_ids.end(), id) != voice_ids.end();
    });
  };
  OrderFacts f;
  f.voice = voices(q) != voices(c);
  // Candidate positions of the ids found once on each side, in query order.
  std::unordered_map<int64_t, std::pair<int, int64_t>> seen;  // candidate id -> (count, last position)
  for (size_t j = 0; j < c.size(); ++j) {
    auto& e = seen[c[j]];
    ++e.first;
    e.second = static_cast<int64_t>(j);
  }
  std::unordered_map<int64_t, int> in_query;  // query id -> count
  for (int64_t id : q) ++in_query[id];
  std::vector<int64_t> order;
  for (int64_t id : q) {
    auto it = seen.find(id);
    if (in_query[id] == 1 && it != seen.end() && it->second.first == 1) order.push_back(it->second.second);
  }
  size_t inversions = 0;
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t k = i + 1; k < order.size(); ++k) inversions += order[k] < order[i];
  f.crossed = inversions > 0;
  const size_t n = order.size();
  f.discordant = n < 2 ? 0.0 : static_cast<double>(inversions) / (static_cast<double>(n) * (n - 1) / 2.0);
  size_t held = 0;
  for (int64_t id : q) held += seen.count(id);
  f.share = q.empty() ? 0.0 : static_cast<double>(held) / static_cast<double>(q.size());
  return f;
}

std::vector<int64_t> valid_ids(const at::Tensor& ids, const at::Tensor& mask, int64_t b) {
  const int64_t n = ids.size(1);
  const int64_t* id = ids.data_ptr<int64_t>() + b * n;
  const float* mk = mask.data_ptr<float>() + b * n;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i)
    if (mk[i] > 0) out.push_back(id[i]);
  return out;
}

at::Tensor order_gap(const Maps& m, const std::vector<int32_t>& voice_ids) {
  require_ids(m, "its order penalty");
  const at::Tensor qi = m.q_ids.to(at::kCPU, at::kLong).contiguous(), ci = m.c_ids.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor qm = m.q_mask.to(at::kCPU, at::kFloat).contiguous(), cm = m.c_mask.to(at::kCPU, at::kFloat).contiguous();
  const int64_t B = qi.size(0);
  std::vector<float> gap(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const OrderFacts f = order_facts(valid_ids(qi, qm, b), valid_ids(ci, cm, b), voice_ids);
    // Scaled by the squared share of query tokens the candidate holds: a role swap keeps every
    // word (1), a paraphrase that moves a clause and rewords the rest pays less.
    gap[static_cast<size_t>(b)] = f.crossed != f.voice ? static_cast<float>(f.share * f.share) : 0.0f;
  }
  return at::tensor(gap, at::kFloat).to(m.M.device(), m.M.scalar_type());
}

at::Tensor conditional_penalty(const at::Tensor& raw, const at::Tensor& base, const PenaltyOptions& o) {
  return base - o.beta * at::sigmoid(20.0 * (base - o.tau_p)) * (1.0 - raw);
}

}  // namespace sieve::verify
