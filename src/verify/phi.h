// phi(M): the similarity map as an image for F3/F4, padded to a fixed S x S.
#pragma once

#include <ATen/ATen.h>

#include "verify/similarity_map.h"

namespace sieve::verify {

/// Pads (bottom/right, zeros) or crops a [B, m, n] tensor to [B, rows, cols].
at::Tensor pad_to(const at::Tensor& x, int64_t rows, int64_t cols);
inline at::Tensor pad_to(const at::Tensor& x, int64_t S) { return pad_to(x, S, S); }

/// Channels of phi: 3 ([M, row max, column max]) when augmented, else 1 ([M]); one more ([E], the
/// exact-match map) with `exact_match`.
inline int64_t phi_channels(bool augmented, bool exact_match, bool cues = false) {
  return (augmented ? 3 : 1) + (exact_match ? 1 : 0) + (cues ? 1 : 0);
}

/// [B, C, S, S] with C = 3 ([M, row max, column max]) when `augmented`, else 1 ([M]); with
/// `exact_match` the match map m.match follows as the last channel (sieve::Error when the maps
/// have none: the token ids were not given). The maxima
/// run over valid pairs (0 for a row or column without one) and are broadcast over the whole
/// padded row or column, as if every map were padded to S tokens (or to rows x cols: the same
/// values over a smaller or larger area, since padding holds no valid pair); `zero_invalid` then zeroes every
/// channel at invalid pairs (F4 does, F3 does not). The result never depends on batch padding.
at::Tensor phi(const Maps& m, int64_t rows, int64_t cols, bool augmented, bool zero_invalid, bool exact_match = false,
               const CueSequences* cue_ids = nullptr);
inline at::Tensor phi(const Maps& m, int64_t S, bool augmented, bool zero_invalid, bool exact_match = false) {
  return phi(m, S, S, augmented, zero_invalid, exact_match);
}

}  // namespace sieve::verify
