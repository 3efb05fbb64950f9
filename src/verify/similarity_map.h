// The token-token cosine map M(q, c) of a query against a batch of candidates, with masks.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "sieve/encoder.h"

namespace sieve::verify {

/// Maps of B (query, candidate) pairs padded to m x n, with their masks (1 = real token).
struct Maps {
  at::Tensor M;       ///< [B, m, n] cosines; entries of padded rows/columns are 0
  at::Tensor pair;    ///< [B, m, n] float, q_mask_i * c_mask_j
  at::Tensor q_mask;  ///< [B, m] float
  at::Tensor c_mask;  ///< [B, n] float
};

/// M = normalize(Q) normalize(C)^T over the last dimension, batched; Q [B, m, d], C [B, n, d],
/// masks [B, m] and [B, n] (1 = real token). Differentiable.
Maps similarity_maps(const at::Tensor& Q, const at::Tensor& q_mask, const at::Tensor& C, const at::Tensor& c_mask);

/// Packs token states (rows of `dim` floats) into a zero-padded [B, max_len, dim] tensor and a
/// [B, max_len] mask, keeping at most `max_tokens` leading rows of each.
void pack_tokens(const std::vector<const TokenStates*>& states, size_t dim, size_t max_tokens, at::Tensor& out,
                 at::Tensor& mask);

/// The maps of one query against K candidates (the query repeated along the batch).
Maps query_maps(const TokenStates& query, const std::vector<const TokenStates*>& candidates, size_t dim,
                size_t max_tokens);

}  // namespace sieve::verify
