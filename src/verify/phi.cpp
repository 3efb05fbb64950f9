#include "verify/phi.h"

#include <limits>

#include "sieve/error.h"

namespace sieve::verify {

at::Tensor pad_to(const at::Tensor& x, int64_t rows, int64_t cols) {
  at::Tensor y = x.slice(1, 0, std::min<int64_t>(rows, x.size(1))).slice(2, 0, std::min<int64_t>(cols, x.size(2)));
  if (y.size(1) == rows && y.size(2) == cols) return y;
  return at::constant_pad_nd(y, {0, cols - y.size(2), 0, rows - y.size(1)}, 0.0);
}

at::Tensor phi(const Maps& m, int64_t rows, int64_t cols, bool augmented, bool zero_invalid, bool exact_match,
               const CueSequences* cue_ids) {
  at::Tensor M = pad_to(m.M, rows, cols);
  at::Tensor P = pad_to(m.pair, rows, cols);
  at::Tensor x;
  if (!augmented) {
    x = M.unsqueeze(1);
  } else {
    const double ninf = -std::numeric_limits<double>::infinity();
    at::Tensor filled = M.masked_fill(P == 0, ninf);
    at::Tensor row = std::get<0>(filled.max(2, true));
    at::Tensor col = std::get<0>(filled.max(1, true));
    row = row.masked_fill(at::isinf(row), 0.0).expand_as(M);
    col = col.masked_fill(at::isinf(col), 0.0).expand_as(M);
    x = at::stack({M, row, col}, 1);
  }
  if (exact_match) {
    SIEVE_THROW_IF_NOT(m.match.defined(),
                       "this verifier reads token ids (its exact-match channel), and the token states carry none");
    x = at::cat({x, pad_to(m.match, rows, cols).to(x.scalar_type()).unsqueeze(1)}, 1);
  }
  if (cue_ids && !cue_ids->empty())
    x = at::cat({x, pad_to(cue_map(m, *cue_ids), rows, cols).to(x.scalar_type()).unsqueeze(1)}, 1);
  if (zero_invalid) x = x * P.unsqueeze(1);
  return x;
}

}  // namespace sieve::verify
