// Text Embeddings Inference's API: POST /embed (and its aliases / and /invocations) and POST
// /rerank, answered as TEI answers them.
#include <algorithm>
#include <cctype>

#include "serve/request_json.h"
#include "serve/service.h"

namespace sieve::serve {
namespace {

// TEI's fields that sieve takes only at their default: truncation on the right, no prompt.
void check_tei_extras(const json& j) {
  std::string dir = string_of(j, "truncation_direction", "right");
  std::transform(dir.begin(), dir.end(), dir.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (dir != "right") throw too_much("'truncation_direction' must be \"right\": sieve cuts long inputs at their end");
  if (j.contains("prompt_name") && !j.at("prompt_name").is_null())
    throw too_much("'prompt_name': this model has no prompts (send the text as it should be embedded)");
}

}  // namespace

Response Service::embed_tei(const std::string& body, Clock::time_point deadline) {
  const json j = parse_object(body, fields_of("/embed"));
  const std::vector<std::string> texts = strings_of(j, "inputs", true);
  if (texts.empty()) throw bad("'inputs' is empty");
  if (texts.size() > opt_.max_texts) throw too_much(std::to_string(texts.size()) + " inputs, more than the limit " + std::to_string(opt_.max_texts));
  const bool normalize = bool_of(j, "normalize", true), truncate = bool_of(j, "truncate", false);
  check_tei_extras(j);
  Embeddings e = encode(texts, !normalize, "POST /embed", deadline);
  if (!truncate && e.truncated > 0)
    throw too_much("an input is longer than the model's " + std::to_string(encoder_->max_length()) +
                   " tokens; send \"truncate\": true to cut it");
  json out = json::array();
  for (size_t i = 0; i < texts.size(); ++i) {
    if (normalize) {
      out.push_back(floats(&e.pooled[i * e.dim], e.dim));
      continue;
    }
    // The pooled vector before normalisation, from the token states.
    std::vector<float> v(e.dim);
    pool_states(e.tokens[i], e.dim, encoder_->pooling(), v.data());
    out.push_back(floats(v.data(), e.dim));
  }
  return json_response(out);
}

Response Service::rerank_tei(const std::string& body, Clock::time_point deadline) {
  const json j = parse_object(body, fields_of("/rerank"));
  if (!j.contains("query") || !j.at("query").is_string()) throw bad("'query' must be a string");
  std::vector<std::string> texts = strings_of(j, "texts", true);
  if (texts.empty()) throw bad("'texts' is empty");
  if (texts.size() > opt_.max_texts) throw too_much(std::to_string(texts.size()) + " texts, more than the limit " + std::to_string(opt_.max_texts));
  const bool return_text = bool_of(j, "return_text", false), raw = bool_of(j, "raw_scores", false);
  bool_of(j, "truncate", true);  // TEI's; the reranker always cuts a pair to the model's length
  check_tei_extras(j);
  std::vector<std::string> all = {j.at("query").get<std::string>()};
  all.insert(all.end(), texts.begin(), texts.end());
  const ResolvedVerifier& rv = reranker();
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& t : texts) pairs.emplace_back(all[0], t);
  // A cross-encoder's score is already a probability; raw_scores gives its logits (as TEI does).
  auto got = score_pairs_by_kind(
      rv, pairs, [&] { return score_candidates(rv.verifier.get(), encode(all, !rv.cosine(), nullptr, deadline)); },
      deadline, /*logits=*/raw);
  if (!got) throw DeadlineExceeded("the request's deadline passed while the cross-encoder scored the texts");
  std::vector<float> s = std::move(*got);
  require_finite(s, "text");
  const bool probabilities = scores_are_probabilities(rv);
  std::vector<size_t> order(s.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  json out = json::array();
  for (size_t i : order) {
    // Similarities (cosine, F0-F4) lie in [-1, 1]: without raw_scores they are mapped onto [0, 1].
    // Probabilities (the mlp gate, a cross-encoder, a cascade) are already there.
    const double score = raw || probabilities ? s[i] : std::clamp((s[i] + 1.0) / 2.0, 0.0, 1.0);
    json item = {{"index", i}, {"score", score}};
    if (return_text) item["text"] = texts[i];
    out.push_back(std::move(item));
  }
  return json_response(out);
}

}  // namespace sieve::serve
