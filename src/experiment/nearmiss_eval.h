// Near-miss evaluation: how a scorer (the pooled cosine, or a verifier over the token map) scores
// near-misses against positives. Beyond the paper's per-category mean +- std it measures
// rejection: ROC-AUC of positives against near-misses, accuracy at a calibrated threshold, and the
// identity margin s(q, q+) >= s(q, q-) + gamma.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/pairs.h"
#include "eval/stats.h"
#include "sieve/encoder.h"
#include "sieve/verify.h"

namespace sieve::experiment {

struct NearMissEvalOptions {
  /// Categories (or labels, when a pair has no category) that mark a positive pair.
  std::vector<std::string> positive_categories = eval::default_positive_categories();
  /// Categories left out entirely (SNLI's "neutral" is neither a paraphrase nor a near-miss).
  std::vector<std::string> ignore_categories = {"neutral"};
  double gamma = 0.05;       ///< identity margin
  size_t batch_size = 32;
  size_t max_pairs = 0;      ///< > 0: only the first N pairs of the file
  /// A token codec (--codec of `sieve index build`: sq8, sq4, pq64, res1, ...) that the candidate's
  /// token states pass through, as an index would store them (the query's stay exact): trained on
  /// `codec_train_tokens` token states of the pairs' texts, sampled evenly. "" = exact states.
  std::string token_codec;
  size_t codec_train_tokens = 65536;
  EncoderOptions encoder;
};

/// Scores of one category of pairs under one scorer.
struct CategoryResult {
  std::string category;
  eval::MeanStd score;             ///< the paper's mean +- std (lower is better for near-misses)
  double auc = 0;                  ///< positives vs this category
  double accuracy = 0;             ///< share of this category rejected at the threshold
  double margin_rate = 0;          ///< share with s(q, q+) >= s(q, q-) + gamma
};

/// One scorer's results.
struct ScorerResult {
  std::string name;                ///< "cosine", "F1", or the verifier file's kind and name
  size_t parameters = 0;
  eval::MeanStd positives;         ///< score of the positive pairs
  std::vector<CategoryResult> categories;  ///< near-miss categories, sorted by name
  CategoryResult overall;          ///< all near-misses together
  /// Positive categories, sorted by name: auc = this category against every near-miss,
  /// accuracy = share accepted at the threshold (margin_rate unused).
  std::vector<CategoryResult> positive_categories;
  double threshold = 0;            ///< accept when score >= threshold
  std::string threshold_source;    ///< "file" (the verifier's calibrated gate) or "held-out half"
  double accuracy = 0;             ///< on positives and near-misses (held-out half when calibrated here)
  double balanced_accuracy = 0;
};

struct NearMissEval {
  size_t positives = 0, nearmisses = 0, ignored = 0;
  bool identity_positives = false; ///< no positive pairs in the file: positives are (q, q)
  std::string token_codec;         ///< the candidates' token codec ("" = exact token states)
  size_t token_code_bytes = 0;     ///< its bytes per token
  std::vector<ScorerResult> scorers;
};

/// A scorer to evaluate: a token-map verifier, a cross-encoder (reads the texts), or, when both
/// are null, the pooled cosine.
struct Scorer {
  std::string name;
  const Verifier* verifier = nullptr;
  const CrossEncoder* cross = nullptr;
  /// A cascade (then `verifier` is its fast tier and `cross` is unset): the pairs within its band
  /// are scored again by its cross-encoder (apply_cascade).
  const ResolvedVerifier* cascade = nullptr;
};

/// Encodes every text once with `model_dir` and evaluates each scorer on `pairs`.
/// Throws sieve::Error when the pairs hold no near-miss.
NearMissEval evaluate_nearmisses(const std::string& model_dir, const std::vector<eval::SentencePair>& pairs,
                                 const std::vector<Scorer>& scorers, const NearMissEvalOptions& opt);

nlohmann::json nearmiss_json(const NearMissEval& e);
/// A Markdown table: one row per scorer, per-category mean +- std, overall AUC and accuracy.
std::string nearmiss_markdown(const NearMissEval& e);

}  // namespace sieve::experiment
