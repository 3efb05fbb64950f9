// The training objectives (paper.md; contrastive-training-chapter.txt), differentiable ATen.
#pragma once

#include <ATen/ATen.h>

namespace sieve::train {

/// sentence-transformers' MultipleNegativesRankingLoss. anchors [B, H]; candidates [C, H] with
/// C >= B, row i's positive at column i and every further column a hard negative of some row
/// (all of them are negatives for every anchor). Cosine similarities times `scale`, then
/// cross-entropy with target i. `symmetric` adds the positive -> anchor direction (positives
/// against the B anchors) and averages the two, as MultipleNegativesSymmetricRankingLoss.
at::Tensor mnrl_loss(const at::Tensor& anchors, const at::Tensor& candidates, double scale, bool symmetric = false);

/// The paper's verifier loss: in-batch InfoNCE over verifier scores. S [B, B] with S_ik the score
/// of anchor i against positive k, own_negative [B] each anchor's score against its own hard
/// negative; cross-entropy of [S | own_negative] / tau with target i, averaged over the B rows.
/// A share of the rows (data parallelism): S [b, B] holds rows first_row .. first_row + b - 1 of
/// a batch of `total_rows` (0 = b) and the result is their part of the batch mean.
at::Tensor verifier_infonce(const at::Tensor& S, const at::Tensor& own_negative, double tau, int64_t first_row = 0,
                            int64_t total_rows = 0);

/// A pointwise term beside the InfoNCE (sieve's extension; the paper's loss is relative only):
/// binary cross-entropy of each score / tau as a logit, label 1 for the anchor's own positive and
/// 0 for its own hard negative, so that one threshold near 0 separates them in absolute terms.
/// positive [b] and negative [b] scores of a share of a batch of `total_rows` (0 = b) rows; the
/// result is that share's part of the mean over the 2 * total_rows terms.
at::Tensor verifier_pointwise(const at::Tensor& positive, const at::Tensor& negative, double tau,
                              int64_t total_rows = 0);

/// The pairs objective: binary cross-entropy of each score / tau as a logit against its label
/// (1 same meaning, 0 not), for scores [b] and labels [b] (float) of a share of a batch of
/// `total_rows` (0 = b) rows; the result is that share's part of the mean over total_rows.
at::Tensor verifier_labelled_bce(const at::Tensor& scores, const at::Tensor& labels, double tau,
                                 int64_t total_rows = 0);

/// Learning-rate factor of the linear schedule with warm-up (Hugging Face's): step / warmup
/// during warm-up, then (total - step) / (total - warmup), never below 0. `step` counts from 0.
double linear_schedule(size_t step, size_t total, size_t warmup);

}  // namespace sieve::train
