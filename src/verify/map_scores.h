// The parameter-free verifiers over a similarity map (F0, F1, F2) and the conditional-penalty
// score mode. ATen ops throughout, so they are differentiable for end-to-end training.
#pragma once

#include <ATen/ATen.h>

#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

/// F0: mean of M over valid pairs, sum_ij P_ij M_ij / max(1, sum_ij P_ij). Returns [B].
at::Tensor f0_score(const Maps& m);
/// F1 (MaxSim): mean over valid query tokens of max over valid candidate tokens of M_ij. [B].
at::Tensor f1_score(const Maps& m);
/// F2: soft alignment with positional bias (paper.md, "F2"). [B].
at::Tensor f2_score(const Maps& m, const F2Options& o);
/// Conditional penalty: base - beta * sigmoid(20 (base - tau_p)) * (1 - raw), base = F1.
/// |cues (whole runs) among the valid query tokens - among the valid candidate tokens| per pair [B]
/// (the cue penalty's gap). Needs the maps' ids.
at::Tensor cue_gap(const Maps& m, const CueSequences& cues);

/// |crossed - voice| * share^2 per pair [B] (the order penalty's gap, OrderPenaltyOptions):
/// crossed = the ids found exactly once among the valid tokens of each side appear in another
/// order in the candidate; voice = the two sides count the voice ids differently; share = the
/// fraction of valid query tokens whose id the candidate holds. Needs the maps' ids.
at::Tensor order_gap(const Maps& m, const std::vector<int32_t>& voice_ids);

/// What order_gap reads from one pair's valid token ids: `crossed` (the ids found exactly once on
/// each side come in another order in the candidate), `voice` (the two sides count `voice_ids`
/// differently), `share` (of the query's tokens whose id the candidate holds) and `discordant`
/// (the share of pairs of those once-each ids in another order; 0 for fewer than two).
struct OrderFacts {
  bool crossed = false, voice = false;
  double share = 0, discordant = 0;
};
OrderFacts order_facts(const std::vector<int64_t>& q, const std::vector<int64_t>& c, const std::vector<int32_t>& voice_ids);
/// The ids of pair b's valid tokens: ids [B, L] int64 and mask [B, L] float, both on the CPU, contiguous.
std::vector<int64_t> valid_ids(const at::Tensor& ids, const at::Tensor& mask, int64_t b);

at::Tensor conditional_penalty(const at::Tensor& raw, const at::Tensor& base, const PenaltyOptions& o);

}  // namespace sieve::verify
