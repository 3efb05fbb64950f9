// tokenizer.json pre-tokenizers: ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
// Punctuation, Digits, BertPreTokenizer, CharDelimiterSplit and Sequence.
#include "sieve/error.h"
#include "text/hf_tokenizer.h"
#include "text/utf8.h"

namespace sieve::hf {

namespace {

// Applies `fn(split, out)` to every split, keeping the non-empty results.
template <class Fn>
void each_split(std::vector<NStr>& splits, Fn fn) {
  std::vector<NStr> out;
  out.reserve(splits.size() * 2);
  for (NStr& s : splits) fn(s, out);
  splits.clear();
  for (NStr& s : out)
    if (!s.empty()) splits.push_back(std::move(s));
}

void invert(std::vector<MatchSpan>& m) {
  for (auto& x : m) x.is_match = !x.is_match;
}

// GPT-2's pattern; tokenizers compiles it with Oniguruma, where \s is White_Space (the PCRE2
// translation in hf_common.cpp keeps that meaning).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& where)
      : add_prefix_space_(add_prefix_space),
        re_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, false, where) : nullptr) {}
  bool splits_at_space() const override { return re_ != nullptr; }  // GPT-2's pattern splits before a space
  void pre_tokenize(std::vector<NStr>& splits) const override {
    each_split(splits, [&](NStr& s, std::vector<NStr>& out) {
      // The prepended space covers no original bytes (tokenizers reports (0, 0) for a lone
      // prefix-space token), unlike Metaspace's prepended replacement below.
      if (add_prefix_space_ && !s.empty() && s.front().cp != ' ')
        s.insert(s.begin(), NChar{' ', s.front().b, s.front().b});
      if (re_) split_by(s, regex_matches(*re_, s), SplitBehavior::Isolated, out);
      else out.push_back(std::move(s));
    });
    const char32_t* alpha = byte_level_alphabet();
    std::string bytes;
    for (NStr& s : splits) {
      NStr mapped;
      mapped.reserve(s.size());
      for (const NChar& c : s) {
        bytes.clear();
        append_utf8(bytes, c.cp);
        for (unsigned char b : bytes) mapped.push_back({alpha[b], c.b, c.e});
      }
      s.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> re_;
};

class Split final : public PreTokenizer {
 public:
  Split(const std::string& pattern, bool literal, SplitBehavior behavior, bool inv,
        const std::string& where)
      : re_(pattern, literal, where + ".pattern"), behavior_(behavior), invert_(inv) {}
  void pre_tokenize(std::vector<NStr>& splits) const override {
    each_split(splits, [&](NStr& s, std::vector<NStr>& out) {
      std::vector<MatchSpan> m = regex_matches(re_, s);
      if (invert_) invert(m);
      split_by(s, std::move(m), behavior_, out);
    });
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class PrependScheme { Always, First, Never };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t rep, PrependScheme scheme, bool split)
      : rep_(rep), scheme_(scheme), split_(split) {}
  bool splits_at_space() const override { return split_; }  // spaces become rep_, split before
  void pre_tokenize(std::vector<NStr>& splits) const override {
    each_split(splits, [&](NStr& s, std::vector<NStr>& out) {
      for (NChar& c : s)
        if (c.cp == ' ') c.cp = rep_;
      bool prepend = !s.empty() && s.front().cp != rep_ &&
                     (scheme_ == PrependScheme::Always ||
                      (scheme_ == PrependScheme::First && s.front().b == 0));
      if (prepend) s.insert(s.begin(), NChar{rep_, s.front().b, s.front().e});
      if (split_) {
        char32_t rep = rep_;
        split_by(s, char_matches(s, [rep](char32_t c) { return c == rep; }),
                 SplitBehavior::MergedWithNext, out);
      } else {
        out.push_back(std::move(s));
      }
    });
  }

 private:
  char32_t rep_;
  PrependScheme scheme_;
  bool split_;
};

class Whitespace final : public PreTokenizer {
 public:
  // Rust regex's \w+|[^\w\s]+ (its \w: Alphabetic, marks, Nd, Pc and the joiners).
  explicit Whitespace(const std::string& where)
      : re_(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]+|)"
            R"([^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\p{White_Space}]+)",
            false, where) {}
  bool splits_at_space() const override { return true; }
  void pre_tokenize(std::vector<NStr>& splits) const override {
    each_split(splits, [&](NStr& s, std::vector<NStr>& out) {
      std::vector<MatchSpan> m = regex_matches(re_, s);
      invert(m);
      split_by(s, std::move(m), SplitBehavior::Removed, out);
    });
  }

 private:
  Regex re_;
};

// Splits on characters satisfying a predicate.
template <class Pred>
class CharSplit final : public PreTokenizer {
 public:
  CharSplit(Pred pred, SplitBehavior behavior, bool at_space) : pred_(pred), behavior_(behavior), at_space_(at_space) {}
  bool splits_at_space() const override { return at_space_; }
  void pre_tokenize(std::vector<NStr>& splits) const override {
    each_split(splits, [&](NStr& s, std::vector<NStr>& out) {
      split_by(s, char_matches(s, pred_), behavior_, out);
    });
  }

 private:
  Pred pred_;
  SplitBehavior behavior_;
  bool at_space_;
};

template <class Pred>
std::unique_ptr<PreTokenizer> char_split(Pred pred, SplitBehavior behavior) {
  return std::make_unique<CharSplit<Pred>>(pred, behavior, pred(U' '));
}

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  bool splits_at_space() const override {  // later parts only split further
    return std::any_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->splits_at_space(); });
  }
  void pre_tokenize(std::vector<NStr>& splits) const override {
    for (const auto& p : parts_) p->pre_tokenize(splits);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

char32_t single_char(const std::string& s, const std::string& where, const char* key) {
  std::vector<CodePoint> cps = decode_utf8(s);
  SIEVE_THROW_IF_NOT(cps.size() == 1, where << "." << key << ": expected a single character, got '"
                                            << s << "'");
  return cps[0].cp;
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where) {
  const std::string type = type_of(j, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(get_bool(j, "add_prefix_space", true, where),
                                       get_bool(j, "use_regex", true, where), where);
  if (type == "Split") {
    bool literal = false;
    std::string pattern = read_pattern_of(j, where, literal);
    SplitBehavior b = parse_behavior(member(j, "behavior", where), where + ".behavior");
    return std::make_unique<Split>(pattern, literal, b, get_bool(j, "invert", false, where), where);
  }
  if (type == "Metaspace") {
    char32_t rep = single_char(get_string(j, "replacement", "\xE2\x96\x81", where), where,
                               "replacement");
    PrependScheme scheme = PrependScheme::Always;
    auto ps = j.find("prepend_scheme");
    if (ps != j.end() && !ps->is_null()) {
      std::string s = ps->is_string() ? ps->get<std::string>() : "";
      if (s == "always") scheme = PrependScheme::Always;
      else if (s == "first") scheme = PrependScheme::First;
      else if (s == "never") scheme = PrependScheme::Never;
      else SIEVE_THROW(where << ".prepend_scheme: expected \"always\", \"first\" or \"never\"");
    } else if (!get_bool(j, "add_prefix_space", true, where)) {
      scheme = PrependScheme::Never;  // the older field
    }
    return std::make_unique<Metaspace>(rep, scheme, get_bool(j, "split", true, where));
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>(where);
  if (type == "WhitespaceSplit") return char_split(rust_is_whitespace, SplitBehavior::Removed);
  if (type == "Punctuation") {
    SplitBehavior b = SplitBehavior::Isolated;
    if (j.contains("behavior")) b = parse_behavior(j["behavior"], where + ".behavior");
    return char_split(is_punctuation_hf, b);
  }
  if (type == "Digits")
    return char_split(rust_is_numeric, get_bool(j, "individual_digits", false, where)
                                           ? SplitBehavior::Isolated
                                           : SplitBehavior::Contiguous);
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(char_split(rust_is_whitespace, SplitBehavior::Removed));
    parts.push_back(char_split(is_punctuation_hf, SplitBehavior::Isolated));
    return std::make_unique<Sequence>(std::move(parts));
  }
  if (type == "CharDelimiterSplit") {
    char32_t d = single_char(get_string(j, "delimiter", "", where), where, "delimiter");
    return char_split([d](char32_t c) { return c == d; }, SplitBehavior::Removed);
  }
  if (type == "Sequence") {
    const json& list = member(j, "pretokenizers", where);
    SIEVE_THROW_IF_NOT(list.is_array(), where << ".pretokenizers: expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(
          make_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]"));
    return std::make_unique<Sequence>(std::move(parts));
  }
  SIEVE_THROW_IF_NOT(type != "UnicodeScripts" && type != "FixedLength",
                     where << ": the '" << type << "' pre-tokenizer is one of Hugging Face's that sieve does not "
                           << "implement (no model sieve targets uses it)");
  SIEVE_THROW(where << ": unknown type '" << type
                    << "' (supported pre-tokenizers: ByteLevel, Split, Metaspace, Whitespace, "
                       "WhitespaceSplit, Punctuation, Digits, BertPreTokenizer, "
                       "CharDelimiterSplit, Sequence)");
}

}  // namespace sieve::hf
