#include "verify/similarity_map.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/omp_threads.h"
#include "core/vec_math.h"
#include "sieve/error.h"

namespace sieve::verify {

Maps similarity_maps(const at::Tensor& Q, const at::Tensor& q_mask, const at::Tensor& C, const at::Tensor& c_mask,
                     const at::Tensor& q_ids, const at::Tensor& c_ids) {
  SIEVE_ASSERT(Q.dim() == 3 && C.dim() == 3 && Q.size(0) == C.size(0) && Q.size(2) == C.size(2));
  // Zero rows (padding) stay zero: their norm is clamped rather than divided by zero.
  at::Tensor qn = Q / Q.norm(2, -1, true).clamp_min(1e-12);
  at::Tensor cn = C / C.norm(2, -1, true).clamp_min(1e-12);
  Maps m;
  m.q_mask = q_mask.to(Q.scalar_type());
  m.c_mask = c_mask.to(Q.scalar_type());
  m.pair = m.q_mask.unsqueeze(2) * m.c_mask.unsqueeze(1);
  m.M = at::bmm(qn, cn.transpose(1, 2)) * m.pair;
  if (q_ids.defined() && c_ids.defined()) {
    m.match = match_map(q_ids, c_ids, m.pair);
    m.q_ids = q_ids;
    m.c_ids = c_ids;
  }
  return m;
}

Maps transposed(const Maps& m) {
  Maps t;
  t.M = m.M.transpose(1, 2).contiguous();
  t.pair = m.pair.transpose(1, 2).contiguous();
  t.q_mask = m.c_mask;
  t.c_mask = m.q_mask;
  if (m.match.defined()) t.match = m.match.transpose(1, 2).contiguous();
  t.q_ids = m.c_ids;
  t.c_ids = m.q_ids;
  t.pooled = m.pooled;
  return t;
}

void require_ids(const Maps& m, const char* what) {
  SIEVE_THROW_IF_NOT(m.q_ids.defined() && m.c_ids.defined(),
                     "this verifier reads token ids (" << what << "), and the token states carry none");
}

at::Tensor is_cue(const at::Tensor& ids, const CueSequences& cues, const at::Tensor& like, bool starts_only) {
  SIEVE_ASSERT(ids.dim() == 2);
  const int64_t L = ids.size(1);
  at::Tensor covered = at::zeros(ids.sizes(), ids.options().dtype(at::kBool));
  at::Tensor starts = at::zeros_like(covered);
  std::vector<int64_t> singles;
  for (const auto& run : cues) {
    const auto k = static_cast<int64_t>(run.size());
    if (k == 1) singles.push_back(run[0]);
    if (k <= 1 || k > L) continue;
    // Tokens t..t+k-1 equal the run: the window starting at t matches every piece.
    const int64_t n = L - k + 1;
    at::Tensor hit = ids.narrow(1, 0, n) == run[0];
    for (int64_t j = 1; j < k; ++j) hit = hit.logical_and(ids.narrow(1, j, n) == run[static_cast<size_t>(j)]);
    starts.narrow(1, 0, n).logical_or_(hit);
    for (int64_t j = 0; j < k; ++j) covered.narrow(1, j, n).logical_or_(hit);
  }
  if (!singles.empty()) {
    at::Tensor one = at::isin(ids, at::tensor(singles, at::kLong).to(ids.device()));
    starts.logical_or_(one);
    covered.logical_or_(one);
  }
  return (starts_only ? starts : covered).to(like.scalar_type());
}

at::Tensor cue_map(const Maps& m, const CueSequences& cues) {
  require_ids(m, "its cue channel");
  return (is_cue(m.q_ids, cues, m.pair).unsqueeze(2) + is_cue(m.c_ids, cues, m.pair).unsqueeze(1)) * m.pair;
}

at::Tensor match_map(const at::Tensor& q_ids, const at::Tensor& c_ids, const at::Tensor& pair) {
  SIEVE_ASSERT(q_ids.dim() == 2 && c_ids.dim() == 2 && pair.dim() == 3 && q_ids.size(0) == pair.size(0) &&
               c_ids.size(0) == pair.size(0) && q_ids.size(1) == pair.size(1) && c_ids.size(1) == pair.size(2));
  return (q_ids.unsqueeze(2) == c_ids.unsqueeze(1)).to(pair.scalar_type()) * pair;
}

at::Tensor pack_ids(const std::vector<const TokenStates*>& states, size_t max_tokens, int64_t len) {
  const int64_t B = static_cast<int64_t>(states.size());
  at::Tensor out = at::full({B, len}, -1, at::kLong);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const TokenStates& t = *states[b];
    const int64_t rows = std::min<int64_t>(len, static_cast<int64_t>(std::min(t.length, max_tokens)));
    if (rows == 0) continue;
    if (t.ids.size() != t.length) return {};
    std::copy(t.ids.begin(), t.ids.begin() + rows, o + b * len);
  }
  return out;
}

void pack_tokens(const std::vector<const TokenStates*>& states, size_t dim, size_t max_tokens, at::Tensor& out,
                 at::Tensor& mask) {
  size_t len = 1;
  for (const TokenStates* t : states) len = std::max(len, std::min(t->length, max_tokens));
  const int64_t B = static_cast<int64_t>(states.size());
  out = at::zeros({B, static_cast<int64_t>(len), static_cast<int64_t>(dim)}, at::kFloat);
  mask = at::zeros({B, static_cast<int64_t>(len)}, at::kFloat);
  float* o = out.data_ptr<float>();
  float* mk = mask.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) {
    const TokenStates& t = *states[b];
    SIEVE_THROW_IF_NOT(t.values.size() == t.length * dim, "token states of width " << dim << " expected");
    size_t rows = std::min(t.length, max_tokens);
    std::memcpy(o + b * len * dim, t.values.data(), rows * dim * sizeof(float));
    std::fill(mk + b * len, mk + b * len + rows, 1.f);
  }
}

Maps query_maps(const TokenStates& query, const std::vector<const TokenStates*>& candidates, size_t dim,
                size_t max_tokens, bool with_pooled) {
  SIEVE_THROW_IF_NOT(query.values.size() == query.length * dim, "token states of width " << dim << " expected");
  const int64_t B = static_cast<int64_t>(candidates.size()), d = static_cast<int64_t>(dim);
  const int64_t m = std::max<int64_t>(1, std::min(query.length, max_tokens));
  int64_t n = 1;
  for (const TokenStates* t : candidates) {
    SIEVE_THROW_IF_NOT(t->values.size() == t->length * dim, "token states of width " << dim << " expected");
    n = std::max<int64_t>(n, std::min(t->length, max_tokens));
  }
  // The inference path: no padded copy of the candidates. Each candidate's rows are read where
  // they lie, M^T[b] = C_b q^T lands in the first rows of a [n, m] block scaled by the candidate
  // rows' inverse norms; candidates are shared out over the compute threads.
  at::Tensor q = at::zeros({m, d}, at::kFloat);
  const int64_t qrows = std::min<int64_t>(m, static_cast<int64_t>(query.length));
  std::memcpy(q.data_ptr<float>(), query.values.data(), qrows * dim * sizeof(float));
  at::Tensor qn = (q / q.norm(2, -1, true).clamp_min(1e-12)).contiguous();  // [m, d]
  const float* qp = qn.data_ptr<float>();
  at::Tensor Mt = at::zeros({B, n, m}, at::kFloat);
  float* mt = Mt.data_ptr<float>();
  // The pooled cosine: the mean of each side's kept raw rows (the sums: the scale cancels).
  std::vector<double> qsum(with_pooled ? dim : 0, 0.0);
  for (int64_t i = 0; i < qrows && with_pooled; ++i)
    for (size_t h = 0; h < dim; ++h) qsum[h] += query.values[static_cast<size_t>(i) * dim + h];
  double qss = 0;
  for (double v : qsum) qss += v * v;
  std::vector<float> pooled(static_cast<size_t>(B), 0.f);
  omp_ranges(static_cast<size_t>(B), compute_threads(), [&](size_t begin, size_t end) {
    for (size_t b = begin; b < end; ++b) {
      const TokenStates& t = *candidates[b];
      const size_t rows = std::min<size_t>(static_cast<size_t>(n), t.length);
      float* block = mt + b * static_cast<size_t>(n * m);
      if (rows > 0) {
        // oneDNN's sgemm: inside this OpenMP share it runs on the calling thread (no nesting).
        const dnnl_status_t st = dnnl_sgemm('N', 'T', static_cast<dnnl_dim_t>(rows), m, d, 1.0f, t.values.data(), d, qp, d,
                                            0.0f, block, m);
        SIEVE_THROW_IF_NOT(st == dnnl_success, "oneDNN's sgemm failed (status " << static_cast<int>(st) << ")");
      }
      for (size_t j = 0; j < rows; ++j) {
        const float* v = t.values.data() + j * dim;
        const double ss = dot8(v, v, dim);
        const float inv = ss > 0 ? static_cast<float>(1.0 / std::sqrt(std::max(ss, 1e-24))) : 0.f;
        for (int64_t i = 0; i < m; ++i) block[j * m + i] *= inv;
      }
      if (!with_pooled) continue;
      double dot = 0, css = 0;
      std::vector<double> csum(dim, 0.0);
      for (size_t j = 0; j < rows; ++j)
        for (size_t h = 0; h < dim; ++h) csum[h] += t.values[j * dim + h];
      for (size_t h = 0; h < dim; ++h) {
        dot += qsum[h] * csum[h];
        css += csum[h] * csum[h];
      }
      pooled[b] = static_cast<float>(dot / std::max(std::sqrt(qss * css), 1e-12));
    }
  });
  Maps maps;
  maps.q_mask = at::zeros({B, m}, at::kFloat);
  maps.q_mask.narrow(1, 0, qrows).fill_(1.f);
  maps.c_mask = at::zeros({B, n}, at::kFloat);
  float* cm = maps.c_mask.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b)
    std::fill(cm + b * n, cm + b * n + std::min<int64_t>(n, static_cast<int64_t>(candidates[b]->length)), 1.f);
  maps.pair = maps.q_mask.unsqueeze(2) * maps.c_mask.unsqueeze(1);
  maps.M = Mt.transpose(1, 2).contiguous() * maps.pair;
  if (with_pooled) maps.pooled = at::tensor(pooled, at::kFloat);
  at::Tensor q_ids = pack_ids({&query}, max_tokens, m), c_ids = pack_ids(candidates, max_tokens, n);
  if (q_ids.defined() && c_ids.defined()) {
    maps.q_ids = q_ids.expand({B, m});
    maps.c_ids = c_ids;
    maps.match = match_map(maps.q_ids, c_ids, maps.pair);
  }
  return maps;
}

}  // namespace sieve::verify
