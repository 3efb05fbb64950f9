// A byte-level BPE tokenizer (RoBERTa's layout, as make-fixture writes it) and a Unigram one
// (SentencePiece's Metaspace layout) on arbitrary bytes.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_target.h"
#include "sieve/model.h"
#include "sieve/tokenizer.h"

namespace {
const sieve::Tokenizer& bpe() {
  static const std::unique_ptr<sieve::Tokenizer> tok = [] {
    sieve::FixtureModelOptions f;
    f.config.model_type = "roberta";
    f.config.vocab_size = 400;
    const std::string dir = sieve::fuzz::scratch_dir() + "/roberta";
    sieve::write_fixture_model(dir, f);
    return sieve::Tokenizer::from_model_dir(dir);
  }();
  return *tok;
}
const sieve::Tokenizer& unigram() {
  static const std::unique_ptr<sieve::Tokenizer> tok = [] {
    using json = nlohmann::json;
    json vocab = json::array({json::array({"<unk>", 0.0}), json::array({"\xE2\x96\x81", -2.0})});
    const char* pieces[] = {"the", "dog", "bit", "man", "a", "e", "t", "h", "d", "o", "g", "\xE2\x96\x81the", "ing", "s"};
    double score = -3.0;
    for (const char* p : pieces) vocab.push_back(json::array({p, score -= 0.25}));
    json j = {{"normalizer", {{"type", "NFKC"}}},
              {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}}},
              {"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}, {"byte_fallback", false}}}};
    return sieve::parse_tokenizer_json(j.dump());
  }();
  return *tok;
}
void check(const sieve::Tokenizer& tok, std::string_view text) {
  sieve::EncodeOptions o;
  o.max_length = 128;
  const sieve::Encoding e = tok.encode(text, o);
  for (size_t i = 0; i < e.ids.size(); ++i)
    if (e.ids[i] < 0 || static_cast<size_t>(e.ids[i]) >= tok.vocab_size()) std::abort();
}
}  // namespace

SIEVE_FUZZ_TARGET(bpe_unigram) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] { check(bpe(), text); });
  sieve::fuzz::expect_only_sieve_errors([&] { check(unigram(), text); });
  return 0;
}
