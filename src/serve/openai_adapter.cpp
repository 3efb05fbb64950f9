// OpenAI's embeddings API (POST /v1/embeddings) over the service's encoder: strings or token
// arrays in, float or base64 vectors out, with OpenAI's usage counts.
#include <climits>

#include "serve/request_json.h"
#include "serve/service.h"

namespace sieve::serve {
namespace {

std::string base64(const unsigned char* p, size_t n) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace

Response Service::embeddings_openai(const std::string& body, Clock::time_point deadline) {
  const json j = parse_object(body, fields_of("/v1/embeddings"));
  if (!j.contains("input")) throw bad("missing field 'input'");
  const std::string format = string_of(j, "encoding_format", "float");
  if (format != "float" && format != "base64") throw bad("'encoding_format' must be \"float\" or \"base64\"");
  if (j.contains("dimensions") && !j.at("dimensions").is_null()) {  // OpenAI's: only the model's own width
    int64_t d = 0;
    if (!whole_number(j.at("dimensions"), &d) || d != static_cast<int64_t>(encoder_->dim()))
      throw too_much("'dimensions' must be the model's " + std::to_string(encoder_->dim()) + " (it cannot be shortened)");
  }
  string_of(j, "user", "");  // OpenAI's end-user id: checked as a string, not used
  const json& in = j.at("input");
  Embeddings e;
  // OpenAI's input: a string, strings, or token arrays (one array of ints, or arrays of them).
  const bool ids = in.is_array() && !in.empty() && (in[0].is_number() || in[0].is_array());
  if (ids) {
    std::vector<std::vector<int32_t>> lists;
    auto take = [&](const json& a) {
      std::vector<int32_t> l;
      for (const auto& x : a) {
        int64_t v = 0;
        if (!whole_number(x, &v)) throw bad("'input' token arrays must hold integers");
        if (v < 0 || v > INT32_MAX) throw too_much("token id " + std::to_string(v) + " is out of range");
        l.push_back(static_cast<int32_t>(v));
      }
      lists.push_back(std::move(l));
    };
    if (in[0].is_number()) {
      take(in);
    } else {
      for (const auto& a : in) {
        if (!a.is_array()) throw bad("'input' must be a string, strings, or token arrays");
        take(a);
      }
    }
    if (lists.size() > opt_.max_texts) throw too_much(std::to_string(lists.size()) + " inputs, more than the limit " + std::to_string(opt_.max_texts));
    e = batcher_->encode_ids(lists, deadline);  // the queue's limit and its 503 hold for token arrays too
  } else {
    const std::vector<std::string> texts = strings_of(j, "input", true);
    if (texts.empty()) throw bad("'input' is empty");
    if (texts.size() > opt_.max_texts) throw too_much(std::to_string(texts.size()) + " inputs, more than the limit " + std::to_string(opt_.max_texts));
    e = encode(texts, false, "POST /v1/embeddings", deadline);
  }
  json data = json::array();
  size_t tokens = 0;
  for (size_t i = 0; i < e.encodings.size(); ++i) {
    tokens += e.encodings[i].ids.size();
    const float* v = &e.pooled[i * e.dim];
    json item = {{"object", "embedding"}, {"index", i}};
    item["embedding"] = format == "float" ? floats(v, e.dim)
                                          : json(base64(reinterpret_cast<const unsigned char*>(v), e.dim * sizeof(float)));
    data.push_back(std::move(item));
  }
  return json_response({{"object", "list"},
                        {"data", data},
                        {"model", string_of(j, "model", model_name_)},
                        {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

}  // namespace sieve::serve
