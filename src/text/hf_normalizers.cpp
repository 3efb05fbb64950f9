// tokenizer.json normalizers: Unicode forms, Lowercase, StripAccents, Strip, Replace, Prepend,
// BertNormalizer, ByteLevel and Sequence. Every output character keeps the original byte span of
// the character(s) it came from.
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "sieve/error.h"
#include "text/hf_tokenizer.h"
#include "text/utf8.h"

namespace sieve::hf {

namespace {

enum class Form { NFC, NFD, NFKC, NFKD };

// utf8proc's normalization of a run of code points.
std::u32string normalize_cps(const std::u32string& in, Form f) {
  std::string utf8 = encode_utf8(in);
  int opts = UTF8PROC_STABLE;
  opts |= (f == Form::NFC || f == Form::NFKC) ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
  if (f == Form::NFKC || f == Form::NFKD) opts |= UTF8PROC_COMPAT;
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                                    utf8proc_ssize_t(utf8.size()), &dst, utf8proc_option_t(opts));
  SIEVE_ASSERT_MSG(n >= 0, "utf8proc_map failed: " << utf8proc_errmsg(n));
  std::u32string out;
  for (const CodePoint& c : decode_utf8(std::string_view(reinterpret_cast<char*>(dst), size_t(n))))
    out.push_back(c.cp);
  std::free(dst);
  return out;
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(Form f) : f_(f) {}
  void normalize(NStr& s) const override {
    bool ascii = std::all_of(s.begin(), s.end(), [](const NChar& c) { return c.cp < 0x80; });
    if (ascii) return;
    std::u32string all;
    for (const NChar& c : s) all.push_back(c.cp);
    std::u32string whole = normalize_cps(all, f_);
    if (whole == all) return;
    // Align: cut the text into segments that start at a starter (combining class 0), normalize
    // them one by one, and merge a segment into the previous one whenever normalizing them
    // together differs from normalizing them apart (compositions across starters).
    NStr out;
    out.reserve(whole.size());
    size_t i = 0;
    std::u32string buf, seg;
    size_t buf_begin = 0;
    auto next_segment = [&](size_t from) {
      size_t j = from + 1;
      while (j < s.size() && combining_class(s[j].cp) != 0) ++j;
      return j;
    };
    auto flush = [&](size_t buf_end) {
      if (buf.empty()) return;
      std::u32string n = normalize_cps(buf, f_);
      const size_t len = buf_end - buf_begin;
      if (n.size() <= len) {
        // Same length or composed: an output character found among the remaining inputs takes
        // that input's span; a composed one takes the span of the input it starts at (its
        // base), which is how tokenizers aligns compositions.
        size_t in = buf_begin;
        for (char32_t c : n) {
          size_t hit = in;
          while (hit < buf_end && s[hit].cp != c) ++hit;
          if (hit == buf_end) hit = std::min(in, buf_end - 1);
          out.push_back({c, s[hit].b, s[hit].e});
          in = std::min(hit + 1, buf_end);
        }
      } else {
        // Decomposed: every output character spans the run it came from.
        uint32_t b = s[buf_begin].b, e = s[buf_end - 1].e;
        for (char32_t c : n) out.push_back({c, b, e});
      }
    };
    size_t buf_end = 0;
    while (i < s.size()) {
      size_t j = next_segment(i);
      seg.clear();
      for (size_t k = i; k < j; ++k) seg.push_back(s[k].cp);
      if (buf.empty()) {
        buf = seg;
        buf_begin = i;
      } else {
        std::u32string together = normalize_cps(buf + seg, f_);
        if (together == normalize_cps(buf, f_) + normalize_cps(seg, f_)) {
          flush(buf_end);
          buf = seg;
          buf_begin = i;
        } else {
          buf += seg;
        }
      }
      buf_end = j;
      i = j;
    }
    flush(buf_end);
    std::u32string check;
    for (const NChar& c : out) check.push_back(c.cp);
    if (check != whole) {
      // Interactions across more than two segments: keep the exact text, align coarsely.
      out.clear();
      uint32_t b = s.front().b, e = s.back().e;
      for (char32_t c : whole) out.push_back({c, b, e});
    }
    s.swap(out);
  }

 private:
  Form f_;
};

void lowercase(NStr& s) {
  NStr out;
  out.reserve(s.size());
  for (const NChar& c : s) {
    char32_t low[2];
    int n = to_lower_full(c.cp, low);
    for (int k = 0; k < n; ++k) out.push_back({low[k], c.b, c.e});
  }
  s.swap(out);
}

template <class Pred>
void filter(NStr& s, Pred keep) {
  s.erase(std::remove_if(s.begin(), s.end(), [&](const NChar& c) { return !keep(c.cp); }), s.end());
}

class Lowercase final : public Normalizer {
 public:
  void normalize(NStr& s) const override { lowercase(s); }
};

class StripAccents final : public Normalizer {
 public:
  void normalize(NStr& s) const override {
    filter(s, [](char32_t c) { return !is_mark(c); });
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NStr& s) const override {
    size_t b = 0, e = s.size();
    if (left_)
      while (b < e && rust_is_whitespace(s[b].cp)) ++b;
    if (right_)
      while (e > b && rust_is_whitespace(s[e - 1].cp)) --e;
    s = NStr(s.begin() + long(b), s.begin() + long(e));
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : p_(std::move(p)) {}
  void normalize(NStr& s) const override {
    if (s.empty()) return;
    NStr pre = from_utf8(p_, s.front().b, s.front().e);
    s.insert(s.begin(), pre.begin(), pre.end());
  }

 private:
  std::string p_;
};

class Replace final : public Normalizer {
 public:
  Replace(const std::string& pattern, bool literal, std::string content, const std::string& where)
      : re_(pattern, literal, where + ".pattern"), content_(std::move(content)) {}
  bool keeps_spaces() const override { return false; }  // its pattern may take them
  void normalize(NStr& s) const override {
    if (s.empty()) return;
    std::vector<MatchSpan> m = regex_matches(re_, s);
    NStr out;
    out.reserve(s.size());
    for (const MatchSpan& x : m) {
      if (!x.is_match) {
        out.insert(out.end(), s.begin() + long(x.begin), s.begin() + long(x.end));
        continue;
      }
      uint32_t b, e;
      if (x.end > x.begin) {
        b = s[x.begin].b;
        e = s[x.end - 1].e;
      } else {
        b = e = x.begin < s.size() ? s[x.begin].b : s.back().e;
      }
      NStr rep = from_utf8(content_, b, e);
      out.insert(out.end(), rep.begin(), rep.end());
    }
    s.swap(out);
  }

 private:
  Regex re_;
  std::string content_;
};

// tokenizers' BertNormalizer ranges; unlike Google's BERT (and sieve's WordPiece tokenizer),
// Extension E starts its last range at U+2B920, not U+2B820.
bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean, bool chinese, bool strip, bool lower)
      : clean_(clean), chinese_(chinese), strip_(strip), lower_(lower) {}
  void normalize(NStr& s) const override {
    if (clean_) {
      filter(s, [](char32_t c) {
        if (c == '\t' || c == '\n' || c == '\r') return true;
        return !(c == 0 || c == 0xFFFD || is_other_category(c));
      });
      for (NChar& c : s)
        if (rust_is_whitespace(c.cp)) c.cp = ' ';
    }
    if (chinese_) {
      NStr out;
      out.reserve(s.size());
      for (const NChar& c : s) {
        if (is_chinese_char(c.cp)) {
          out.push_back({' ', c.b, c.e});
          out.push_back(c);
          out.push_back({' ', c.b, c.e});
        } else {
          out.push_back(c);
        }
      }
      s.swap(out);
    }
    if (strip_) {
      UnicodeForm(Form::NFD).normalize(s);
      filter(s, [](char32_t c) { return !is_nonspacing_mark(c); });
    }
    if (lower_) lowercase(s);
  }

 private:
  bool clean_, chinese_, strip_, lower_;
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  bool keeps_spaces() const override { return false; }  // a space becomes U+0120
  void normalize(NStr& s) const override {
    const char32_t* alpha = byte_level_alphabet();
    NStr out;
    out.reserve(s.size());
    std::string bytes;
    for (const NChar& c : s) {
      bytes.clear();
      append_utf8(bytes, c.cp);
      for (unsigned char b : bytes) out.push_back({alpha[b], c.b, c.e});
    }
    s.swap(out);
  }
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  bool keeps_spaces() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->keeps_spaces(); });
  }
  void normalize(NStr& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

// A Replace/Split pattern: {"String": "..."} or {"Regex": "..."}.
std::string read_pattern(const json& j, const std::string& where, bool& literal) {
  const json& p = member(j, "pattern", where);
  SIEVE_THROW_IF_NOT(p.is_object() && p.size() == 1,
                     where << ".pattern: expected {\"String\": ...} or {\"Regex\": ...}");
  if (p.contains("String") && p["String"].is_string()) {
    literal = true;
    return p["String"].get<std::string>();
  }
  if (p.contains("Regex") && p["Regex"].is_string()) {
    literal = false;
    return p["Regex"].get<std::string>();
  }
  SIEVE_THROW(where << ".pattern: expected {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace

std::string read_pattern_of(const json& j, const std::string& where, bool& literal) {
  return read_pattern(j, where, literal);
}

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where) {
  const std::string type = type_of(j, where);
  if (type == "NFC") return std::make_unique<UnicodeForm>(Form::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(Form::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(Form::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(Form::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip")
    return std::make_unique<Strip>(get_bool(j, "strip_left", true, where),
                                   get_bool(j, "strip_right", true, where));
  if (type == "Prepend") {
    const json& p = member(j, "prepend", where);
    SIEVE_THROW_IF_NOT(p.is_string(), where << ".prepend: expected a string");
    return std::make_unique<Prepend>(p.get<std::string>());
  }
  if (type == "Replace") {
    bool literal = false;
    std::string pattern = read_pattern(j, where, literal);
    const json& c = member(j, "content", where);
    SIEVE_THROW_IF_NOT(c.is_string(), where << ".content: expected a string");
    return std::make_unique<Replace>(pattern, literal, c.get<std::string>(), where);
  }
  if (type == "BertNormalizer") {
    bool lower = get_bool(j, "lowercase", true, where);
    bool strip = lower;
    if (j.contains("strip_accents") && !j["strip_accents"].is_null())
      strip = get_bool(j, "strip_accents", lower, where);
    return std::make_unique<BertNormalizer>(get_bool(j, "clean_text", true, where),
                                            get_bool(j, "handle_chinese_chars", true, where),
                                            strip, lower);
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    const json& list = member(j, "normalizers", where);
    SIEVE_THROW_IF_NOT(list.is_array(), where << ".normalizers: expected an array");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]"));
    return std::make_unique<Sequence>(std::move(parts));
  }
  if (type == "Precompiled") {
    auto it = j.find("precompiled_charsmap");
    bool empty = it == j.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty());
    if (empty) return std::make_unique<Sequence>(std::vector<std::unique_ptr<Normalizer>>{});
    SIEVE_THROW(where << ": the 'Precompiled' normalizer (a SentencePiece character map) is not "
                         "supported; load the model's SentencePiece file instead "
                         "(sentencepiece.bpe.model, spiece.model or tokenizer.model), which sieve "
                         "reads with SentencePiece itself");
  }
  SIEVE_THROW(where << ": unknown type '" << type
                    << "' (supported normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, "
                       "Strip, Replace, Prepend, BertNormalizer, ByteLevel, Sequence)");
}

}  // namespace sieve::hf
