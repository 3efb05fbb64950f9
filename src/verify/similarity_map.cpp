#include "verify/similarity_map.h"

#include <algorithm>
#include <cstring>

#include "sieve/error.h"

namespace sieve::verify {

Maps similarity_maps(const at::Tensor& Q, const at::Tensor& q_mask, const at::Tensor& C, const at::Tensor& c_mask) {
  SIEVE_ASSERT(Q.dim() == 3 && C.dim() == 3 && Q.size(0) == C.size(0) && Q.size(2) == C.size(2));
  // Zero rows (padding) stay zero: their norm is clamped rather than divided by zero.
  at::Tensor qn = Q / Q.norm(2, -1, true).clamp_min(1e-12);
  at::Tensor cn = C / C.norm(2, -1, true).clamp_min(1e-12);
  Maps m;
  m.q_mask = q_mask.to(Q.scalar_type());
  m.c_mask = c_mask.to(Q.scalar_type());
  m.pair = m.q_mask.unsqueeze(2) * m.c_mask.unsqueeze(1);
  m.M = at::bmm(qn, cn.transpose(1, 2)) * m.pair;
  return m;
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
                size_t max_tokens) {
  at::Tensor q, qm, c, cm;
  pack_tokens({&query}, dim, max_tokens, q, qm);
  pack_tokens(candidates, dim, max_tokens, c, cm);
  const int64_t B = static_cast<int64_t>(candidates.size());
  return similarity_maps(q.expand({B, q.size(1), q.size(2)}), qm.expand({B, qm.size(1)}), c, cm);
}

}  // namespace sieve::verify
