// sieve: the two-stage pipeline (stage 1 recall from an Index, stage 2 verification of the top K)
// and the calibration of a verifier's identity gate.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
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
  bool rerank = false;      ///< order by verifier score (else keep the stage-1 order: every face's default)
  bool gate = false;        ///< drop candidates the verifier rejects (score < threshold)
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< NaN = the verifier file's
  /// Stage 2 runs only when stage 1 (and the candidates' decoding) end before this time; past it,
  /// the top k of stage 1 come back unverified (Stage2Timing::skipped). Default: none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The verifier's key (shard_verifier_key) when the index's shards score their own candidates
  /// (Index::shard_scores: a shard set served elsewhere whose shards hold that verifier): stage 2
  /// then asks them, and no token state crosses the wire. "": the token states are read here.
  std::string shard_verifier;
};

/// A stage-1 hit with the verifier's verdict.
struct VerifiedHit {
  Hit hit;                  ///< stage-1 result (its score is the stage-1 score)
  float verifier_score = 0;
  bool accepted = true;     ///< score >= threshold (true when there is no threshold)
  size_t stage1_rank = 0;   ///< 1-based rank in stage 1
};

/// The keys of a hit: one list for `sieve search`'s JSON lines, the server's /v1/search and the
/// Python package's hit dicts (which add "doc", the row number, and give None where JSON omits).
struct HitKeys {
  static constexpr const char* rank = "rank";                      ///< 1-based rank in the results
  static constexpr const char* id = "id";                          ///< the document's id
  static constexpr const char* score = "score";                    ///< stage 1's score (stage 1 only)
  static constexpr const char* dense = "dense";                    ///< cosine, when dense retrieval saw it
  static constexpr const char* dense_rank = "dense_rank";          ///< its rank in the dense list
  static constexpr const char* bm25 = "bm25";                      ///< BM25, when the lexical index saw it
  static constexpr const char* bm25_rank = "bm25_rank";            ///< its rank in the BM25 list
  static constexpr const char* stage1_score = "stage1_score";      ///< with stage 2: stage 1's score
  static constexpr const char* stage1_rank = "stage1_rank";        ///< with stage 2: its stage-1 rank
  static constexpr const char* verifier_score = "verifier_score";  ///< with stage 2
  static constexpr const char* accepted = "accepted";              ///< with stage 2: score >= threshold
  static constexpr const char* title = "title";                    ///< with text
  static constexpr const char* text = "text";                      ///< with text
  static constexpr const char* metadata = "metadata";              ///< with text, when it has some
  static constexpr const char* expires_at = "expires_at";          ///< with text, when it expires (s since 1970)
};

/// How hit_json writes a hit.
struct HitJsonOptions {
  bool text = false;  ///< add the document's title and text (read from the index)
  int digits = 0;     ///< > 0: scores rounded to this many significant digits (the CLI's 7); 0 = exact
};

/// A stage-1 hit as JSON, keys in this order: rank, id, score, then dense and dense_rank when the
/// dense list saw it, bm25 and bm25_rank when BM25 did, then title and text (options.text), and
/// with them metadata and expires_at when the document has them.
nlohmann::ordered_json hit_json(const Index& index, const Hit& hit, size_t rank, const HitJsonOptions& options = {});
/// A verified hit: rank, id, stage1_score, stage1_rank, verifier_score, accepted, then the
/// stage-1 hit's dense / bm25 scores and ranks as above, then title and text.
nlohmann::ordered_json hit_json(const Index& index, const VerifiedHit& hit, size_t rank,
                                const HitJsonOptions& options = {});

/// Timing of one query's stage 2 (seconds): decoding the candidates' stored token states,
/// building the maps, running the verifier.
struct Stage2Timing {
  double decode = 0, map = 0, verify = 0;
  /// A cascade (ResolvedVerifier::cascade()): candidates the fast tier scored, those sent to the
  /// cross-encoder, and its time (reading their texts included); `verify` is the fast tier's alone.
  size_t scored = 0, sent = 0;
  double cross = 0;
  /// The deadline (PipelineParams::deadline) passed before the verifier ran: the hits are stage
  /// 1's top k in its order, each with a NaN verifier_score and accepted = true.
  bool skipped = false;
};

/// Runs stage 1 for `query`, then the verifier over the top `candidates` (their stored token
/// states against the query's). Throws sieve::Error when the index has no token store, the
/// verifier was made for another encoder, or it gives a candidate a NaN or infinite score.
std::vector<VerifiedHit> search_verified(const Index& index, const Verifier& verifier, const std::string& query,
                                         const PipelineParams& params = {}, Stage2Timing* timing = nullptr);

/// The same with the pooled stage-1 cosine as the verifier ("cosine"): each candidate's stored
/// key against the query's key; `threshold` must come from params (no file holds it).
std::vector<VerifiedHit> search_verified_cosine(const Index& index, const std::string& query,
                                                const PipelineParams& params = {}, Stage2Timing* timing = nullptr);

/// search_verified with a resolved verifier (resolve_verifier): search_verified_cosine when it is
/// the pooled cosine (`timing` then stays zero), the cross-encoder's search when it is one, and for
/// a cascade the fast tier over every candidate, then the cross-encoder over those whose fast score
/// lies in the band, each scored by cascade_score and gated at the fast threshold (sieve::Error
/// when the cascade has no band for its fast tier: calibrate it).
std::vector<VerifiedHit> search_verified(const Index& index, const ResolvedVerifier& verifier, const std::string& query,
                                         const PipelineParams& params = {}, Stage2Timing* timing = nullptr);

/// Runs stage 1 for `query`, then the cross-encoder over the top `candidates`: the query's text
/// against each candidate's (title and text, as the encoder read them, from the index's corpus
/// store). Any index works (no token store needed). `timing`: decode = reading the texts,
/// verify = the cross-encoder.
std::vector<VerifiedHit> search_verified(const Index& index, const CrossEncoder& cross, const std::string& query,
                                         const PipelineParams& params = {}, Stage2Timing* timing = nullptr);

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
/// Throws sieve::Error naming the first NaN or infinite score.
Calibration calibrate_threshold(const std::vector<float>& scores, const std::vector<bool>& positive,
                                double target_precision, bool balanced = false);

/// The threshold of the highest balanced accuracy (TPR + TNR) / 2 on labelled scores, i.e.
/// Youden's J = TPR - FPR, for a gate with no precision target: each class weighs the same
/// whatever its size. Ties go to the higher threshold. `precision` is the balanced precision
/// TPR / (TPR + FPR) there; `reached` is true. Needs both classes; throws sieve::Error as above.
Calibration calibrate_balanced_accuracy(const std::vector<float>& scores, const std::vector<bool>& positive);

/// The gate judges identity (statement against statement), not relevance: a question is never
/// the same statement as its answer. For a query that looks like a question (it ends with '?' or
/// starts with a question word: who, what, how, is, does, ...), the one-line note every face gives
/// when it gates it; "" for any other query.
std::string gate_question_note(const std::string& query);

/// Parses a gold label: 1/true/yes/same/entailment/paraphrase/positive -> true;
/// 0/false/no/different/contradiction/neutral/near_miss/negative -> false; else sieve::Error.
bool parse_identity_label(const std::string& label);

}  // namespace sieve
