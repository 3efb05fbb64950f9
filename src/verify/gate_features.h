// The Mlp gate (VerifierKind::Mlp): its features over the maps and its logistic score.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

/// [B, F] float: the features of gate_feature_names() for each pair of the maps, the maps' rows
/// being the query; `symmetric`: the mean of both directions' features (what a symmetric Mlp gate
/// reads). One pass over each pair's map (one exp per entry serves both F2 features and both
/// directions), the pairs shared over the compute threads; equal to f0_score, f1_score and
/// f2_score within float rounding (tested). Needs the maps' ids and pooled cosines.
at::Tensor gate_feature_matrix(const Maps& m, const MlpGateOptions& o, bool symmetric = false);
/// [B] float: the gate's scores of features [B, F] (MlpGateOptions: standardise, tanh hidden
/// layer when it has one, sigmoid of the output unit).
at::Tensor mlp_gate_scores(const at::Tensor& features, const MlpGateOptions& o);
/// Throws sieve::Error (naming `what`) unless `o` holds this sieve's features with finite weights,
/// positive scales and its cue ids.
void check_mlp_gate(const MlpGateOptions& o, const std::string& what);

}  // namespace sieve::verify
