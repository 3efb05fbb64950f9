// Internal: the pieces of the Hugging Face `tokenizer.json` pipeline (src/text/hf_*.cpp).
//
// Text flows as in Hugging Face tokenizers: added tokens are cut out first, the rest is
// normalized, pre-tokenized into splits and handed split by split to the model; a post-processor
// frames the result. Each character of a normalized string remembers the bytes [b, e) of the
// caller's text it came from, so every token maps back to byte offsets of the original text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sieve/tokenizer.h"

namespace sieve::hf {

using json = nlohmann::json;

/// One character of a normalized string and the original bytes [b, e) it stands for.
struct NChar {
  char32_t cp = 0;
  uint32_t b = 0;
  uint32_t e = 0;
};
using NStr = std::vector<NChar>;

/// UTF-8 of a normalized string, with the byte offset where each character starts (plus the end).
std::string to_utf8(const NStr& s, std::vector<uint32_t>* char_starts = nullptr);
/// A string's characters, all aligned to the span [b, e).
NStr from_utf8(std::string_view s, uint32_t b, uint32_t e);

// --- character properties as Rust's std (and the crates tokenizers uses) define them ---------
bool rust_is_whitespace(char32_t c);   ///< White_Space property
bool rust_is_alphanumeric(char32_t c); ///< Alphabetic or Numeric (approximated by L*, N*)
bool rust_is_numeric(char32_t c);      ///< Nd, Nl, No
bool is_punctuation_hf(char32_t c);    ///< ASCII punctuation or P*
bool is_mark(char32_t c);              ///< Mn, Mc, Me

// --- regular expressions (PCRE2) -------------------------------------------------------------

/// A compiled pattern with Oniguruma-like semantics (what tokenizers uses for tokenizer.json
/// regexes); immutable and shareable. `where` names the JSON path for error messages.
class Regex {
 public:
  Regex(const std::string& pattern, bool literal, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  /// Every match in `s` as byte spans, with Oniguruma's find_iter rules for empty matches.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  void* code_ = nullptr;  // pcre2_code_8*
};

/// A segment of a string in characters and whether it matched the pattern.
struct MatchSpan {
  size_t begin, end;
  bool is_match;
};

/// How a pre-tokenizer splits around matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior parse_behavior(const json& v, const std::string& where);

/// Matches of a regex over a normalized string, as character spans covering all of it.
std::vector<MatchSpan> regex_matches(const Regex& re, const NStr& s);
/// Each character satisfying `pred` is a match of its own.
template <class Pred>
std::vector<MatchSpan> char_matches(const NStr& s, Pred pred) {
  std::vector<MatchSpan> out;
  if (s.empty()) {
    out.push_back({0, 0, false});
    return out;
  }
  size_t last = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!pred(s[i].cp)) continue;
    if (last < i) out.push_back({last, i, false});
    out.push_back({i, i + 1, true});
    last = i + 1;
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
  return out;
}
/// Splits `s` at `matches` following `behavior`; appends the non-empty pieces to `out`.
void split_by(const NStr& s, std::vector<MatchSpan> matches, SplitBehavior behavior,
              std::vector<NStr>& out);

// --- components --------------------------------------------------------------------------------

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NStr& s) const = 0;
  /// False when it may remove or rewrite spaces (Replace, ByteLevel), which pre-tokenizers split at.
  virtual bool keeps_spaces() const { return true; }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Replaces each split by its sub-splits (empty ones dropped).
  virtual void pre_tokenize(std::vector<NStr>& splits) const = 0;
  /// True when no split it makes holds a space with characters on both sides (it splits there).
  virtual bool splits_at_space() const { return false; }
};

/// A token of one split: its id, string and characters [begin, end) of the split.
struct ModelToken {
  int32_t id;
  std::string token;
  size_t begin, end;
};

class Model {
 public:
  virtual ~Model() = default;
  /// Tokenizes one split (UTF-8 `text`, whose characters start at `starts`).
  virtual void tokenize(const std::string& text, const std::vector<uint32_t>& starts,
                        std::vector<ModelToken>& out) const = 0;
  /// Id of a vocabulary entry, or -1.
  virtual int32_t find(std::string_view token) const = 0;
  /// Vocabulary entry of an id, or nullptr when out of range.
  virtual const std::string* token_of(int32_t id) const = 0;
  virtual size_t size() const = 0;
  /// The unknown token's id, or -1 when the model has none.
  virtual int32_t unk_id() const = 0;
};

/// Each factory reads the component at `where` (a JSON path such as "pre_tokenizer.pretokenizers[1]")
/// and throws sieve::Error naming that path when the component is unknown or malformed.
std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where);
std::unique_ptr<Model> make_model(const json& j, const std::string& where);

/// The tokenizer of a parsed tokenizer.json (load_tokenizer_json without the parse); `name`
/// labels error messages.
std::unique_ptr<Tokenizer> make_tokenizer(const json& j, const TokenizerJsonOptions& opt,
                                          const std::string& name);

/// The pattern of a Replace normalizer or Split pre-tokenizer ({"String": s} or {"Regex": r}).
std::string read_pattern_of(const json& j, const std::string& where, bool& literal);

/// The 256 characters GPT-2's byte-level BPE writes bytes as.
const char32_t* byte_level_alphabet();

// --- json helpers --------------------------------------------------------------------------------
std::string type_of(const json& j, const std::string& where);
const json& member(const json& j, const char* key, const std::string& where);
bool get_bool(const json& j, const char* key, bool def, const std::string& where);
/// An optional whole-number member in [lo, hi]; sieve::Error naming it otherwise.
int64_t get_int(const json& j, const char* key, int64_t def, int64_t lo, int64_t hi, const std::string& where);
std::string get_string(const json& j, const char* key, const std::string& def,
                       const std::string& where);
/// An optional string member: empty with `present` false when absent or null.
std::string get_opt_string(const json& j, const char* key, bool& present, const std::string& where);

}  // namespace sieve::hf
