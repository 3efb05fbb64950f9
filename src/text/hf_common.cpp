// Shared helpers of the tokenizer.json pipeline: character properties, PCRE2 regexes with the
// matching rules tokenizers uses (it compiles tokenizer.json regexes with Oniguruma), splitting
// with a SplitDelimiterBehavior, and JSON accessors whose errors name the JSON path.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>

#include "sieve/error.h"
#include "text/hf_tokenizer.h"
#include "text/utf8.h"

namespace sieve::hf {

std::string to_utf8(const NStr& s, std::vector<uint32_t>* char_starts) {
  std::string out;
  out.reserve(s.size());
  if (char_starts) {
    char_starts->clear();
    char_starts->reserve(s.size() + 1);
  }
  for (const NChar& c : s) {
    if (char_starts) char_starts->push_back(uint32_t(out.size()));
    append_utf8(out, c.cp);
  }
  if (char_starts) char_starts->push_back(uint32_t(out.size()));
  return out;
}

NStr from_utf8(std::string_view s, uint32_t b, uint32_t e) {
  NStr out;
  for (const CodePoint& c : decode_utf8(s)) out.push_back({c.cp, b, e});
  return out;
}

bool rust_is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

namespace {
utf8proc_category_t category(char32_t c) {
  return utf8proc_category(utf8proc_int32_t(c));
}
}  // namespace

bool rust_is_numeric(char32_t c) {
  auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool rust_is_alphanumeric(char32_t c) {
  auto k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) || rust_is_numeric(c);
}

bool is_punctuation_hf(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  return is_punctuation_category(c);
}

bool is_mark(char32_t c) {
  auto k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

// --- regexes -----------------------------------------------------------------------------------

namespace {

// Oniguruma's Unicode \s is the White_Space property and its \w is Alphabetic, marks, decimal
// digits and connector punctuation, plus the Latin-1 superscripts and fractions (its Latin-1
// table); PCRE2's UCP classes differ slightly (no U+0085 in \s, all of \p{N} but no marks in
// \w). Rewrite those escapes so the two engines agree.
std::string onig_to_pcre2(const std::string& p) {
  static const char* kSpace = "\\p{White_Space}";
  static const char* kWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  size_t class_start = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      ++i;
      if (n == 'Q') {  // \Q...\E is literal text: copy it unchanged
        size_t end = p.find("\\E", i + 1);
        size_t stop = end == std::string::npos ? p.size() : end + 2;
        out += p.substr(i - 1, stop - (i - 1));
        i = stop - 1;
        continue;
      }
      const char* cls = n == 's' || n == 'S' ? kSpace : n == 'w' || n == 'W' ? kWord : nullptr;
      if (!cls) {
        out += c;
        out += n;
      } else if (in_class && (n == 's' || n == 'w')) {
        out += cls;
      } else if (in_class) {
        out += '\\';  // a negated class inside a class: keep PCRE2's own
        out += n;
      } else {
        out += (n == 's' || n == 'w') ? "[" : "[^";
        out += cls;
        out += "]";
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      class_start = i;
    } else if (in_class && c == ']') {
      // A ']' right after '[' or '[^' is a literal.
      size_t first = class_start + 1;
      if (first < p.size() && p[first] == '^') ++first;
      if (i != first) in_class = false;
    }
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& where) {
  int err = 0;
  PCRE2_SIZE off = 0;
  // PCRE2_LITERAL admits no UCP (nor needs it).
  uint32_t flags = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  std::string pat = literal ? pattern : onig_to_pcre2(pattern);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat.data()), pat.size(), flags,
                                   &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    SIEVE_THROW(where << ": PCRE2 rejects the regex '" << pattern << "' at offset " << off << ": "
                      << reinterpret_cast<const char*>(buf));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  SIEVE_ASSERT(md != nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (pos <= s.size()) {
    int rc = pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) {
      if (rc != PCRE2_ERROR_NOMATCH) {
        pcre2_match_data_free(md);
        SIEVE_THROW("regex match failed (PCRE2 error " << rc << ")");
      }
      break;
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (b == e && have_last && last_end == e) {
      // Oniguruma's find_iter: no empty match right after the previous match; step one char.
      size_t step = 1;
      if (pos < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[pos]);
        step = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      }
      pos += step;
      continue;
    }
    out.push_back({b, e});
    pos = e;
    have_last = true;
    last_end = e;
  }
  pcre2_match_data_free(md);
}

std::vector<MatchSpan> regex_matches(const Regex& re, const NStr& s) {
  std::vector<MatchSpan> out;
  if (s.empty()) {
    out.push_back({0, 0, false});
    return out;
  }
  std::vector<uint32_t> starts;
  std::string text = to_utf8(s, &starts);
  std::vector<std::pair<size_t, size_t>> m;
  re.find_all(text, m);
  // Byte offset -> character index (matches start and end on character boundaries).
  std::vector<uint32_t> char_at(text.size() + 1, 0);
  for (size_t i = 0; i < starts.size(); ++i) char_at[starts[i]] = uint32_t(i);
  size_t prev = 0;
  for (auto [b, e] : m) {
    size_t cb = char_at[b], ce = char_at[e];
    if (prev != cb) out.push_back({prev, cb, false});
    out.push_back({cb, ce, true});
    prev = ce;
  }
  if (prev != s.size()) out.push_back({prev, s.size(), false});
  return out;
}

SplitBehavior parse_behavior(const json& v, const std::string& where) {
  SIEVE_THROW_IF_NOT(v.is_string(), where << ": behavior must be a string");
  std::string b = v.get<std::string>();
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  SIEVE_THROW(where << ": unknown behavior '" << b
                    << "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
                       "Contiguous)");
}

void split_by(const NStr& s, std::vector<MatchSpan> m, SplitBehavior behavior,
              std::vector<NStr>& out) {
  // Each entry: span and whether to drop it.
  std::vector<MatchSpan> parts;
  parts.reserve(m.size());
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto& x : m) parts.push_back({x.begin, x.end, false});
      break;
    case SplitBehavior::Removed:
      parts = m;
      break;
    case SplitBehavior::Contiguous: {
      bool prev = false;
      for (auto& x : m) {
        if (x.is_match == prev && !parts.empty()) parts.back().end = x.end;
        else parts.push_back({x.begin, x.end, false});
        prev = x.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool prev = false;
      for (auto& x : m) {
        if (x.is_match && !prev && !parts.empty()) parts.back().end = x.end;
        else parts.push_back({x.begin, x.end, false});
        prev = x.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev = false;
      for (size_t k = m.size(); k-- > 0;) {
        auto& x = m[k];
        if (x.is_match && !prev && !parts.empty()) parts.back().begin = x.begin;
        else parts.push_back({x.begin, x.end, false});
        prev = x.is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  for (auto& p : parts) {
    if (p.is_match || p.begin >= p.end) continue;  // is_match here means "remove"
    out.emplace_back(s.begin() + long(p.begin), s.begin() + long(p.end));
  }
}

const char32_t* byte_level_alphabet() {
  static const auto table = [] {
    std::array<char32_t, 256> t{};
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t[size_t(b)] = printable ? char32_t(b) : char32_t(256 + n++);
    }
    return t;
  }();
  return table.data();
}

// --- json helpers --------------------------------------------------------------------------------

std::string type_of(const json& j, const std::string& where) {
  SIEVE_THROW_IF_NOT(j.is_object(), where << ": expected an object");
  auto it = j.find("type");
  SIEVE_THROW_IF_NOT(it != j.end() && it->is_string(), where << ": missing 'type'");
  return it->get<std::string>();
}

const json& member(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  SIEVE_THROW_IF_NOT(it != j.end(), where << ": missing '" << key << "'");
  return *it;
}

bool get_bool(const json& j, const char* key, bool def, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  SIEVE_THROW_IF_NOT(it->is_boolean(), where << "." << key << ": expected true or false");
  return it->get<bool>();
}

int64_t get_int(const json& j, const char* key, int64_t def, int64_t lo, int64_t hi, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  const bool whole = it->is_number_integer() && (it->is_number_unsigned()
                                                     ? it->get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                     : it->get<int64_t>() >= lo && it->get<int64_t>() <= hi);
  SIEVE_THROW_IF_NOT(whole, where << "." << key << ": expected a whole number from " << lo << " to " << hi);
  return it->get<int64_t>();
}

std::string get_string(const json& j, const char* key, const std::string& def,
                       const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  SIEVE_THROW_IF_NOT(it->is_string(), where << "." << key << ": expected a string");
  return it->get<std::string>();
}

std::string get_opt_string(const json& j, const char* key, bool& present, const std::string& where) {
  present = false;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  SIEVE_THROW_IF_NOT(it->is_string(), where << "." << key << ": expected a string or null");
  present = true;
  return it->get<std::string>();
}

}  // namespace sieve::hf
