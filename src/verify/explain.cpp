// explain_pair: the cosine map of two texts with the verifier's score and decision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sieve/error.h"
#include "sieve/verify.h"

namespace sieve {

Explanation explain_pair(const Encoder& encoder, const Verifier* verifier, const std::string& query,
                         const std::string& candidate, double threshold) {
  EncodeCall call;
  call.token_states = true;
  Embeddings e = encoder.encode({query, candidate}, call);
  Explanation x;
  for (size_t h = 0; h < e.dim; ++h) x.stage1_cosine += double(e.pooled[h]) * e.pooled[e.dim + h];
  const size_t cap = verifier ? verifier->config().max_tokens : 128;
  x.score = verifier ? verifier->score(e.tokens[0], {&e.tokens[1]})[0] : static_cast<float>(x.stage1_cosine);
  // A NaN fails every comparison, so it would read as a plain "reject": a verifier that gives one is broken.
  SIEVE_THROW_IF_NOT(std::isfinite(x.score), "the " << (verifier ? "verifier's score" : "pooled cosine") << " of this pair is "
                                                    << x.score << ": scores must be finite numbers (check the "
                                                    << (verifier ? "verifier file" : "model") << ")");
  x.threshold = std::isnan(threshold) && verifier ? verifier->config().threshold : threshold;
  x.verifier = verifier ? verifier_kind_name(verifier->config().kind) : "cosine";
  x.map = cosine_map(e.tokens[0], e.tokens[1], cap);
  x.query_tokens.assign(e.encodings[0].tokens.begin(), e.encodings[0].tokens.begin() + static_cast<std::ptrdiff_t>(x.map.m));
  x.candidate_tokens.assign(e.encodings[1].tokens.begin(),
                            e.encodings[1].tokens.begin() + static_cast<std::ptrdiff_t>(x.map.n));
  x.decision = std::isnan(x.threshold) ? "no threshold" : (x.score >= x.threshold ? "accept" : "reject");
  char title[256];
  std::snprintf(title, sizeof title, "stage-1 cosine %.3f   %s score %.3f   %s", x.stage1_cosine, x.verifier.c_str(),
                x.score,
                std::isnan(x.threshold) ? "(no threshold)"
                                        : (x.decision + " at " + std::to_string(x.threshold).substr(0, 5)).c_str());
  x.title = title;
  return x;
}

std::vector<float> score_pairs(const Verifier& verifier, const std::vector<TokenStates>& states) {
  std::vector<float> out(states.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = verifier.score(states[2 * i], {&states[2 * i + 1]})[0];
  return out;
}

std::vector<float> score_text_pairs(const Encoder& encoder, const Verifier* verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs, size_t batch_size) {
  std::vector<std::string> texts;
  texts.reserve(2 * pairs.size());
  for (const auto& [q, c] : pairs) {
    texts.push_back(q);
    texts.push_back(c);
  }
  EncodeCall call;
  call.batch_size = batch_size;
  call.token_states = verifier != nullptr;
  return score_pairs(verifier, encoder.encode(texts, call));
}

std::optional<size_t> apply_cascade(const ResolvedVerifier& verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs,
                                    std::vector<float>& scores, size_t batch_size,
                                    std::chrono::steady_clock::time_point deadline) {
  SIEVE_THROW_IF_NOT(verifier.cascade(), "'" << verifier.name << "' is not a cascade");
  require_calibrated_cascade(verifier);
  SIEVE_THROW_IF_NOT(pairs.size() == scores.size(), "the cascade needs one fast score per pair");
  const double cross_threshold = verifier.cross->threshold();
  SIEVE_THROW_IF_NOT(!std::isnan(cross_threshold), "'" << verifier.name << "': the cross-encoder has no threshold");
  std::vector<std::pair<std::string, std::string>> sent;
  std::vector<size_t> at;
  for (size_t i = 0; i < scores.size(); ++i)
    if (verifier.band.contains(scores[i])) {
      sent.push_back(pairs[i]);
      at.push_back(i);
    }
  if (sent.empty()) return 0;
  const std::optional<std::vector<float>> scored =
      deadline == std::chrono::steady_clock::time_point::max()
          ? std::optional<std::vector<float>>(verifier.cross->score_pairs(sent, batch_size))
          : verifier.cross->score_pairs_until(sent, deadline, std::min<size_t>(batch_size, 8));
  if (!scored) return std::nullopt;
  const std::vector<float>& cross = *scored;
  for (size_t i = 0; i < at.size(); ++i)
    scores[at[i]] =
        cascade_score(scores[at[i]], cross[i], verifier.threshold(), cross_threshold, verifier.combination, verifier.band);
  return sent.size();
}

bool scores_are_probabilities(const ResolvedVerifier& verifier) {
  if (verifier.cross && !verifier.cascade()) return true;  // a cross-encoder's sigmoid
  // A token-map verifier, or a cascade (its scores on its fast tier's scale, cascade_score).
  return verifier.verifier && verifier.verifier->config().kind == VerifierKind::Mlp;
}

std::optional<std::vector<float>> score_pairs_by_kind(const ResolvedVerifier& verifier,
                                                      const std::vector<std::pair<std::string, std::string>>& pairs,
                                                      const std::function<std::vector<float>()>& fast,
                                                      std::chrono::steady_clock::time_point deadline, bool logits,
                                                      size_t batch_size) {
  using Clock = std::chrono::steady_clock;
  if (verifier.cross && !verifier.cascade()) {
    if (deadline == Clock::time_point::max())
      return logits ? verifier.cross->logits(pairs, batch_size) : verifier.cross->score_pairs(pairs, batch_size);
    return logits ? verifier.cross->logits_until(pairs, deadline) : verifier.cross->score_pairs_until(pairs, deadline);
  }
  require_calibrated_cascade(verifier);  // before the fast tier's work
  std::vector<float> scores = fast();
  if (verifier.cascade() && !apply_cascade(verifier, pairs, scores, batch_size, deadline)) return std::nullopt;
  return scores;
}

std::vector<float> score_text_pairs(const Encoder* encoder, const ResolvedVerifier& verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs, size_t batch_size) {
  return *score_pairs_by_kind(
      verifier, pairs,
      [&] {
        SIEVE_THROW_IF_NOT(encoder != nullptr, "scoring with " << verifier.name << " needs an encoder");
        return score_text_pairs(*encoder, verifier.verifier.get(), pairs, batch_size);
      },
      std::chrono::steady_clock::time_point::max(), false, batch_size);
}

namespace {
// Cosine of the pooled unit keys of texts a and b.
float pooled_cosine(const Embeddings& e, size_t a, size_t b) {
  double dot = 0;
  for (size_t h = 0; h < e.dim; ++h) dot += double(e.pooled[a * e.dim + h]) * e.pooled[b * e.dim + h];
  return static_cast<float>(dot);
}
}  // namespace

std::vector<float> score_pairs(const Verifier* verifier, const Embeddings& e) {
  if (verifier != nullptr) return score_pairs(*verifier, e.tokens);
  std::vector<float> out(e.pooled.size() / std::max<size_t>(1, e.dim) / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = pooled_cosine(e, 2 * i, 2 * i + 1);
  return out;
}

std::vector<float> score_candidates(const Verifier* verifier, const Embeddings& e) {
  const size_t n = e.pooled.size() / std::max<size_t>(1, e.dim);
  std::vector<float> out;
  if (n < 2) return out;
  if (verifier != nullptr) {
    std::vector<const TokenStates*> cands;
    for (size_t i = 1; i < e.tokens.size(); ++i) cands.push_back(&e.tokens[i]);
    return verifier->score(e.tokens[0], cands);
  }
  for (size_t i = 1; i < n; ++i) out.push_back(pooled_cosine(e, 0, i));
  return out;
}

std::string explanation_json(const Explanation& x, const std::string& svg_path) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < x.map.m; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t j = 0; j < x.map.n; ++j) row.push_back(std::round(x.map.values[i * x.map.n + j] * 1e4) / 1e4);
    rows.push_back(row);
  }
  nlohmann::json j = {{"query_tokens", x.query_tokens}, {"candidate_tokens", x.candidate_tokens}, {"map", rows},
                      {"stage1_cosine", x.stage1_cosine}, {"verifier", x.verifier},
                      {"score", x.score},                 {"decision", x.decision}};
  if (!std::isnan(x.threshold)) j["threshold"] = x.threshold;
  if (!svg_path.empty()) j["svg"] = svg_path;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string explanation_svg(const Explanation& x) {
  return render_map_svg(x.map, x.query_tokens, x.candidate_tokens, x.title);
}

}  // namespace sieve
