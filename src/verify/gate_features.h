// The Mlp gate (VerifierKind::Mlp): its features over the maps and its logistic score.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "sieve/verify.h"
#include "verify/similarity_map.h"

namespace sieve::verify {

/// [B, F] float: the features of gate_feature_names() for each pair of the maps (one direction:
/// the maps' rows are the query). Needs the maps' ids and pooled cosines.
at::Tensor gate_feature_matrix(const Maps& m, const MlpGateOptions& o);
/// The features of both directions, averaged when `symmetric` (what a symmetric Linear gate reads).
at::Tensor gate_feature_matrix(const Maps& m, const MlpGateOptions& o, bool symmetric);
/// [B] float: the gate's scores of features [B, F] (MlpGateOptions: standardise, tanh hidden
/// layer when it has one, sigmoid of the output unit).
at::Tensor mlp_gate_scores(const at::Tensor& features, const MlpGateOptions& o);
/// Throws sieve::Error (naming `what`) unless `o` holds this sieve's features with finite weights,
/// positive scales and its cue ids.
void check_mlp_gate(const MlpGateOptions& o, const std::string& what);

}  // namespace sieve::verify
