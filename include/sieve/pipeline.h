// sieve: the two-stage pipeline (stage 1 recall from an Index, stage 2 verification of the top K)
// and the calibration of a verifier's identity gate.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sieve/index.h"
#include "sieve/verify.h"

namespace sieve {

/// Per-call knobs of the two-stage search.
struct PipelineParams {
  SearchParams stage1;      ///< stage-1 mode and knobs; its k is replaced by `candidates`
  size_t candidates = 100;  ///< K: stage-1 hits the verifier reads
  size_t k = 10;            ///< results returned
  bool rerank = true;       ///< order by verifier score (else keep the stage-1 order)
  bool gate = false;        ///< drop candidates the verifier rejects (score < threshold)
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< NaN = the verifier file's
};

/// A stage-1 hit with the verifier's verdict.
struct VerifiedHit {
  Hit hit;                  ///< stage-1 result (its score is the stage-1 score)
  float verifier_score = 0;
  bool accepted = true;     ///< score >= threshold (true when there is no threshold)
  size_t stage1_rank = 0;   ///< 1-based rank in stage 1
};

/// Timing of one query's stage 2 (seconds): decoding the candidates' stored token states,
/// building the maps, running the verifier.
struct Stage2Timing {
  double decode = 0, map = 0, verify = 0;
};

/// Runs stage 1 for `query`, then the verifier over the top `candidates` (their stored token
/// states against the query's). Throws sieve::Error when the index has no token store or the
/// verifier was made for another encoder.
std::vector<VerifiedHit> search_verified(const Index& index, const Verifier& verifier, const std::string& query,
                                         const PipelineParams& params = {}, Stage2Timing* timing = nullptr);

/// The same with the pooled stage-1 cosine as the verifier ("cosine"): each candidate's stored
/// key against the query's key; `threshold` must come from params (no file holds it).
std::vector<VerifiedHit> search_verified_cosine(const Index& index, const std::string& query,
                                                const PipelineParams& params = {});

/// Result of a calibration.
struct Calibration {
  double threshold = 0;       ///< accept when score >= threshold
  double precision = 0;       ///< on the calibration pairs
  double recall = 0;
  size_t positives = 0, negatives = 0;
  bool reached = false;       ///< false: no threshold reaches the target; the most precise one is returned
};

/// The lowest threshold whose precision (accepted positives / accepted) on labelled scores is at
/// least `target_precision`, i.e. the one with the highest recall at that precision. `balanced`:
/// precision as if both classes were equally many, TPR / (TPR + FPR) (each pair weighted by one
/// over its class's size), so the threshold does not depend on the share of near-misses.
Calibration calibrate_threshold(const std::vector<float>& scores, const std::vector<bool>& positive,
                                double target_precision, bool balanced = false);

/// Parses a gold label: 1/true/yes/same/entailment/paraphrase/positive -> true;
/// 0/false/no/different/contradiction/neutral/near_miss/negative -> false; else sieve::Error.
bool parse_identity_label(const std::string& label);

}  // namespace sieve
