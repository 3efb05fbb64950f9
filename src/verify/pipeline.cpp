// The two-stage pipeline and gate calibration.
#include <algorithm>
#include <cctype>
#include <set>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "sieve/error.h"
#include "sieve/pipeline.h"
#include "sieve/shard_scorer.h"
#include "sieve/shard_scorer.h"

namespace sieve {

namespace {

// Attaches scores to stage-1 hits, applies the threshold, the gate, the rerank and the cut.
std::vector<VerifiedHit> decide(const std::vector<Hit>& hits, const std::vector<float>& scores, double threshold,
                                const PipelineParams& params) {
  SIEVE_THROW_IF_NOT(!params.gate || !std::isnan(threshold),
                     "gating needs a threshold: calibrate the verifier (sieve verify calibrate) or give one");
  SIEVE_ASSERT(scores.size() == hits.size());
  // A NaN would be silently rejected by the gate and break the rerank's ordering (undefined
  // behaviour in std::stable_sort): a verifier that gives one is broken, so say where.
  for (size_t i = 0; i < scores.size(); ++i)
    SIEVE_THROW_IF_NOT(std::isfinite(scores[i]),
                       "the verifier's score of candidate " << i << " (0-based; stage-1 rank " << i + 1 << ", document '"
                           << hits[i].id << "') is " << scores[i]
                           << ": scores must be finite numbers (check the verifier file and the stored token states)");
  std::vector<VerifiedHit> out;
  for (size_t i = 0; i < hits.size(); ++i) {
    VerifiedHit v;
    v.hit = hits[i];
    v.verifier_score = scores[i];
    v.accepted = std::isnan(threshold) || scores[i] >= threshold;
    v.stage1_rank = i + 1;
    if (!params.gate || v.accepted) out.push_back(v);
  }
  if (params.rerank)
    std::stable_sort(out.begin(), out.end(),
                     [](const VerifiedHit& a, const VerifiedHit& b) { return a.verifier_score > b.verifier_score; });
  if (out.size() > params.k) out.resize(params.k);
  return out;
}

// Stage 1's top k, unverified (and the timing says so): the answer once the deadline has passed.
std::vector<VerifiedHit> stage1_cut(const std::vector<Hit>& hits, const PipelineParams& params, Stage2Timing* timing) {
  std::vector<VerifiedHit> out;
  for (size_t i = 0; i < hits.size() && i < params.k; ++i) {
    VerifiedHit v;
    v.hit = hits[i];
    v.verifier_score = std::numeric_limits<float>::quiet_NaN();
    v.stage1_rank = i + 1;
    out.push_back(v);
  }
  if (timing) {
    *timing = Stage2Timing{};
    timing->skipped = true;
  }
  return out;
}

// Past the deadline: stage1_cut into `out`, and true.
bool past_deadline(const std::vector<Hit>& hits, const PipelineParams& params, Stage2Timing* timing,
                   std::vector<VerifiedHit>* out) {
  if (params.deadline == std::chrono::steady_clock::time_point::max() || std::chrono::steady_clock::now() < params.deadline)
    return false;
  *out = stage1_cut(hits, params, timing);
  return true;
}

std::vector<VerifiedHit> search_cascade(const Index& index, const ResolvedVerifier& verifier, const std::string& query,
                                        const PipelineParams& params, Stage2Timing* timing) {
  require_calibrated_cascade(verifier);  // before the fast tier's work
  const double fast_threshold = verifier.verifier->config().threshold;
  // The fast tier over every candidate, in stage-1 order, nothing gated or cut yet.
  PipelineParams all = params;
  all.gate = false;
  all.rerank = false;
  all.k = params.candidates;
  all.threshold = std::numeric_limits<double>::quiet_NaN();
  Stage2Timing st;
  std::vector<VerifiedHit> fast = search_verified(index, *verifier.verifier, query, all, &st);
  if (st.skipped) {  // past the deadline: stage 1's top k
    if (fast.size() > params.k) fast.resize(params.k);
    if (timing) *timing = st;
    return fast;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Only the candidates inside the band need their texts (the rest keep an empty one, unread).
  std::vector<std::pair<std::string, std::string>> pairs(fast.size());
  std::vector<Hit> hits;
  std::vector<float> scores;
  for (const auto& v : fast) {
    hits.push_back(v.hit);
    scores.push_back(v.verifier_score);
  }
  parallel_ranges(pairs.size(), compute_threads(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (verifier.band.contains(scores[i])) pairs[i] = {query, encoder_text(index.document(hits[i].doc))};
  });
  const std::optional<size_t> sent = apply_cascade(verifier, pairs, scores, 32, params.deadline);
  if (!sent) return stage1_cut(hits, params, timing);  // the cross-encoder ran past the deadline
  if (timing) {
    *timing = st;
    timing->scored = hits.size();
    timing->sent = *sent;
    timing->cross = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return decide(hits, scores, std::isnan(params.threshold) ? fast_threshold : params.threshold, params);
}

}  // namespace

std::vector<VerifiedHit> search_verified_cosine(const Index& index, const std::string& query,
                                                const PipelineParams& params, Stage2Timing* timing) {
  SIEVE_THROW_IF_NOT(params.candidates > 0 && params.k > 0, "candidates and k must be positive");
  SIEVE_THROW_IF_NOT(index.encoder() != nullptr, "the cosine verifier needs the index's encoder");
  SearchParams sp = params.stage1;
  sp.k = params.candidates;
  sp.deadline = std::min(sp.deadline, params.deadline);
  SearchResult r = index.search(query, sp);
  std::vector<VerifiedHit> cut;
  if (past_deadline(r.hits, params, timing, &cut)) return cut;
  Embeddings e = index.encoder()->encode({query});
  std::vector<uint32_t> docs;
  for (const Hit& h : r.hits) docs.push_back(h.doc);
  std::vector<float> keys;
  try {
    keys = index.keys_of(docs, params.deadline);
  } catch (const ShardTimeout&) {  // remote shards had not answered by the deadline
    return stage1_cut(r.hits, params, timing);
  }
  std::vector<float> scores;
  for (size_t j = 0; j < docs.size(); ++j) {
    double dot = 0;
    for (size_t i = 0; i < e.dim; ++i) dot += double(keys[j * e.dim + i]) * e.pooled[i];
    scores.push_back(static_cast<float>(dot));
  }
  return decide(r.hits, scores, params.threshold, params);
}

std::vector<VerifiedHit> search_verified(const Index& index, const ResolvedVerifier& verifier, const std::string& query,
                                         const PipelineParams& params, Stage2Timing* timing) {
  if (verifier.cascade()) return search_cascade(index, verifier, query, params, timing);
  if (verifier.cross) return search_verified(index, *verifier.cross, query, params, timing);
  return verifier.cosine() ? search_verified_cosine(index, query, params, timing)
                           : search_verified(index, *verifier.verifier, query, params, timing);
}

std::vector<VerifiedHit> search_verified(const Index& index, const CrossEncoder& cross, const std::string& query,
                                         const PipelineParams& params, Stage2Timing* timing) {
  SIEVE_THROW_IF_NOT(params.candidates > 0 && params.k > 0, "candidates and k must be positive");
  SearchParams sp = params.stage1;
  sp.k = params.candidates;
  sp.deadline = std::min(sp.deadline, params.deadline);
  SearchResult r = index.search(query, sp);
  std::vector<VerifiedHit> cut;
  if (past_deadline(r.hits, params, timing, &cut)) return cut;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  // The candidates' texts as the encoder read them (title and text), from the corpus store.
  std::vector<std::string> texts(r.hits.size());
  parallel_ranges(texts.size(), compute_threads(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) texts[i] = encoder_text(index.document(r.hits[i].doc));
  });
  auto t1 = Clock::now();
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto& t : texts) pairs.emplace_back(query, std::move(t));
  std::optional<std::vector<float>> scored = cross.score_pairs_until(pairs, params.deadline);
  if (!scored) return stage1_cut(r.hits, params, timing);  // the cross-encoder ran past the deadline
  std::vector<float> scores = std::move(*scored);
  if (timing) {
    timing->decode = std::chrono::duration<double>(t1 - t0).count();
    timing->map = 0;
    timing->verify = std::chrono::duration<double>(Clock::now() - t1).count();
  }
  const double threshold = std::isnan(params.threshold) ? cross.threshold() : params.threshold;
  return decide(r.hits, scores, threshold, params);
}

std::vector<VerifiedHit> search_verified(const Index& index, const Verifier& verifier, const std::string& query,
                                         const PipelineParams& params, Stage2Timing* timing) {
  SIEVE_THROW_IF_NOT(params.candidates > 0 && params.k > 0, "candidates and k must be positive");
  // The one check of a verifier against its encoder (a string comparison when both identities
  // are of one scheme; otherwise the index's encoder's identity, memoised, in the verifier's).
  const auto encoder = index.shared_encoder();
  check_verifier_encoder(verifier, "", {encoder ? encoder->info().dir : index.stats().model_path,
                                        index.stats().model_identity});
  SearchParams sp = params.stage1;
  sp.k = params.candidates;
  sp.query_tokens = true;
  sp.deadline = std::min(sp.deadline, params.deadline);
  SearchResult r = index.search(query, sp);
  std::vector<VerifiedHit> cut;
  if (past_deadline(r.hits, params, timing, &cut)) return cut;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  std::vector<uint32_t> docs;
  for (const Hit& h : r.hits) docs.push_back(h.doc);
  const double threshold = std::isnan(params.threshold) ? verifier.config().threshold : params.threshold;
  // Shards served elsewhere that hold this verifier score their own candidates, all at once.
  // Shards that had not answered by the deadline: stage 1's hits, as when stage 1 ends past it.
  if (!params.shard_verifier.empty()) {
    std::optional<std::vector<float>> scores;
    try {
      scores = index.shard_scores(params.shard_verifier, r.query_tokens, docs, params.deadline);
    } catch (const ShardTimeout&) {
      return stage1_cut(r.hits, params, timing);
    }
    if (scores) {
      if (timing) timing->verify = std::chrono::duration<double>(Clock::now() - t0).count();
      return decide(r.hits, *scores, threshold, params);
    }
  }
  std::vector<TokenStates> cands;
  try {
    cands = stored_candidates(index, verifier.config(), docs, params.deadline);
  } catch (const ShardTimeout&) {
    return stage1_cut(r.hits, params, timing);
  }
  if (past_deadline(r.hits, params, timing, &cut)) return cut;  // decoding K candidates can take a while
  auto t1 = Clock::now();
  std::vector<const TokenStates*> ptrs;
  for (const auto& c : cands) ptrs.push_back(&c);
  ScoreTiming st;
  std::vector<float> scores = verifier.score(r.query_tokens, ptrs, &st);
  if (timing) {
    timing->decode = std::chrono::duration<double>(t1 - t0).count();
    timing->map = st.map;
    timing->verify = st.model;
  }
  return decide(r.hits, scores, threshold, params);
}

namespace {

// Positions of `scores`, highest first; non-finite scores are refused first (NaN breaks the sort's
// strict weak ordering, and the threshold picked ends up in the verifier file).
std::vector<size_t> order_by_score(const std::vector<float>& scores) {
  for (size_t i = 0; i < scores.size(); ++i)
    SIEVE_THROW_IF_NOT(std::isfinite(scores[i]), "calibration needs finite scores: the score at position "
                                                     << i << " (0-based) is " << scores[i]
                                                     << " (check the verifier and the pairs)");
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

}  // namespace

Calibration calibrate_threshold(const std::vector<float>& scores, const std::vector<bool>& positive,
                                double target_precision, bool balanced) {
  SIEVE_THROW_IF_NOT(scores.size() == positive.size() && !scores.empty(), "calibration needs labelled scores");
  SIEVE_THROW_IF_NOT(target_precision > 0 && target_precision <= 1, "the target precision must lie in (0, 1]");
  const std::vector<size_t> order = order_by_score(scores);
  Calibration c;
  for (bool p : positive) (p ? c.positives : c.negatives) += 1;
  SIEVE_THROW_IF_NOT(c.positives > 0, "calibration needs at least one positive pair");
  // Walk thresholds from high to low; a threshold is a distinct score (ties accepted together).
  size_t tp = 0, fp = 0;
  double best_precision = -1;
  Calibration most_precise;
  for (size_t i = 0; i < order.size(); ++i) {
    (positive[order[i]] ? tp : fp) += 1;
    if (i + 1 < order.size() && scores[order[i + 1]] == scores[order[i]]) continue;
    const double recall = double(tp) / double(c.positives);
    const double fpr = c.negatives ? double(fp) / double(c.negatives) : 0.0;
    const double precision = balanced ? recall / (recall + fpr) : double(tp) / double(tp + fp);
    if (precision >= target_precision) {  // lower thresholds only add recall: keep the last that qualifies
      c.threshold = scores[order[i]];
      c.precision = precision;
      c.recall = recall;
      c.reached = true;
    }
    if (precision > best_precision) {
      best_precision = precision;
      most_precise = c;
      most_precise.threshold = scores[order[i]];
      most_precise.precision = precision;
      most_precise.recall = recall;
      most_precise.reached = false;
    }
  }
  return c.reached ? c : most_precise;
}

Calibration calibrate_balanced_accuracy(const std::vector<float>& scores, const std::vector<bool>& positive) {
  SIEVE_THROW_IF_NOT(scores.size() == positive.size() && !scores.empty(), "calibration needs labelled scores");
  const std::vector<size_t> order = order_by_score(scores);
  Calibration c;
  for (bool p : positive) (p ? c.positives : c.negatives) += 1;
  SIEVE_THROW_IF_NOT(c.positives > 0 && c.negatives > 0,
                     "balanced-accuracy calibration needs positive and near-miss pairs (has " << c.positives << " and "
                                                                                               << c.negatives << ")");
  size_t tp = 0, fp = 0;
  // J * positives * negatives = tp * negatives - fp * positives, in integers: exact ties.
  long double best_j = -1.0L * static_cast<long double>(c.positives) * static_cast<long double>(c.negatives) - 1;
  for (size_t i = 0; i < order.size(); ++i) {
    (positive[order[i]] ? tp : fp) += 1;
    if (i + 1 < order.size() && scores[order[i + 1]] == scores[order[i]]) continue;
    const long double j = static_cast<long double>(tp) * c.negatives - static_cast<long double>(fp) * c.positives;
    const double tpr = double(tp) / double(c.positives), fpr = double(fp) / double(c.negatives);
    if (j > best_j) {  // strictly better: a tie keeps the higher threshold
      best_j = j;
      c.threshold = scores[order[i]];
      c.recall = tpr;
      c.precision = tpr / (tpr + fpr);
    }
  }
  c.reached = true;
  return c;
}

std::string gate_question_note(const std::string& query) {
  static const std::set<std::string> kQuestionWords = {
      "who", "whom", "whose", "what", "which", "when", "where", "why", "how", "is",    "are",  "was",
      "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have", "may"};
  std::string text = query;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::string first;
  for (char c : text) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      first += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!first.empty() || !std::isspace(static_cast<unsigned char>(c))) {
      break;
    }
  }
  if ((text.empty() || text.back() != '?') && !kQuestionWords.count(first)) return "";
  return "the gate keeps only candidates that say the same thing as the query (identity: deduplication, "
         "caching, claim matching); this query looks like a question, which no answer restates, so the gate "
         "will drop relevant answers: for relevance use stage 1 alone or rerank without the gate";
}

bool parse_identity_label(const std::string& label) {
  std::string l = label;
  for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* p : {"1", "true", "yes", "same", "entailment", "paraphrase", "positive"})
    if (l == p) return true;
  for (const char* n : {"0", "false", "no", "different", "contradiction", "neutral", "near_miss", "negative"})
    if (l == n) return false;
  SIEVE_THROW("label '" << label << "' is not an identity label (1/0, true/false, same/different, "
                                     "entailment/contradiction/neutral, ...)");
}

}  // namespace sieve
