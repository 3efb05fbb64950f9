// The token-token cosine map M(q, c) of a query against a batch of candidates, with masks.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "sieve/encoder.h"
#include "sieve/verify.h"

namespace sieve::verify {

/// Maps of B (query, candidate) pairs padded to m x n, with their masks (1 = real token).
struct Maps {
  at::Tensor M;       ///< [B, m, n] cosines; entries of padded rows/columns are 0
  at::Tensor pair;    ///< [B, m, n] float, q_mask_i * c_mask_j
  at::Tensor q_mask;  ///< [B, m] float
  at::Tensor c_mask;  ///< [B, n] float
  at::Tensor match;   ///< [B, m, n] float, 1 at valid pairs of equal token ids; undefined when ids are unknown
  at::Tensor q_ids;   ///< [B, m] int64 token ids (-1 = padding); undefined when unknown
  at::Tensor c_ids;   ///< [B, n] int64 token ids (-1 = padding); undefined when unknown
  /// [B] cosine of the two sides' mean valid rows (the raw states, before normalising); only when
  /// asked for (query_maps' `with_pooled`: the mlp gate reads it), else undefined.
  at::Tensor pooled;
};

/// The cue channel: K_bij = (cue(q_bi) + cue(c_bj)) * pair_bij, where cue(t) is 1 when token t lies
/// in a whole run of one of `cues` (0, 1 or 2 at a valid pair). Needs the maps' ids.
at::Tensor cue_map(const Maps& m, const CueSequences& cues);
/// Per token of `ids` [B, L]: 1 where it lies in a run of ids equal to one of `cues`, else 0
/// (`starts_only`: 1 only at each run's first token, so that a row's sum counts the cues), in
/// `like`'s dtype, the shape of `ids`.
at::Tensor is_cue(const at::Tensor& ids, const CueSequences& cues, const at::Tensor& like, bool starts_only = false);
/// The same maps read the other way round: the candidates as queries (M and the pair, match maps
/// transposed, masks and ids swapped).
Maps transposed(const Maps& m);
/// Throws sieve::Error unless the maps carry token ids; `what` names the reader ("its cue channel").
void require_ids(const Maps& m, const char* what);

/// M = normalize(Q) normalize(C)^T over the last dimension, batched; Q [B, m, d], C [B, n, d],
/// masks [B, m] and [B, n] (1 = real token). Differentiable. With token ids ([B, m] and [B, n]
/// integers) also the exact-match map.
Maps similarity_maps(const at::Tensor& Q, const at::Tensor& q_mask, const at::Tensor& C, const at::Tensor& c_mask,
                     const at::Tensor& q_ids = {}, const at::Tensor& c_ids = {});

/// E_bij = [q_ids_bi == c_ids_bj] * pair_bij: [B, m] and [B, n] integer ids, pair [B, m, n].
at::Tensor match_map(const at::Tensor& q_ids, const at::Tensor& c_ids, const at::Tensor& pair);

/// The ids of the states' leading rows (at most max_tokens, padded with -1 to `len` columns) as
/// [B, len] int64, or an undefined tensor when any of them carries no ids.
at::Tensor pack_ids(const std::vector<const TokenStates*>& states, size_t max_tokens, int64_t len);

/// Packs token states (rows of `dim` floats) into a zero-padded [B, max_len, dim] tensor and a
/// [B, max_len] mask, keeping at most `max_tokens` leading rows of each.
void pack_tokens(const std::vector<const TokenStates*>& states, size_t dim, size_t max_tokens, at::Tensor& out,
                 at::Tensor& mask);

/// The maps of one query against K candidates (the query repeated along the batch); the match
/// map too when the query and every candidate carry token ids; `with_pooled`: Maps::pooled too.
Maps query_maps(const TokenStates& query, const std::vector<const TokenStates*>& candidates, size_t dim,
                size_t max_tokens, bool with_pooled = false);

}  // namespace sieve::verify
