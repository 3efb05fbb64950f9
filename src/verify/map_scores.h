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

at::Tensor conditional_penalty(const at::Tensor& raw, const at::Tensor& base, const PenaltyOptions& o);

}  // namespace sieve::verify
