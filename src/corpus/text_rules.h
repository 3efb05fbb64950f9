// Character classes, whitespace tidying, GCIDE accent codes, domain labels and abbreviations:
// the small text rules every source cleaner shares (sources.cpp, gcide.cpp). Internal header.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "corpus/sources.h"

namespace sieve::corpus::detail {


inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
inline char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline size_t indentation(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t b = 0;
  while (b <= text.size()) {
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    std::string_view l = text.substr(b, e - b);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    b = e + 1;
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  return lines;
}

// Collapses whitespace runs to one space and trims.
inline std::string collapse_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (char c : s) {
    if (is_space(c)) {
      space = !out.empty();
    } else {
      if (space) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
  }
  return out;
}

// Repairs the punctuation that removing markup leaves behind: "word ," -> "word,", "( x )" ->
// "(x)", "()" and ", ," dropped, leading separators removed.
inline std::string tidy(std::string_view text) {
  std::string s = collapse_spaces(text);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ' && i + 1 < s.size()) {
      // A space before punctuation goes, except inside an ellipsis ". . .".
      char n = s[i + 1];
      bool ellipsis = n == '.' && ((!out.empty() && out.back() == '.') ||
                                   (i + 3 < s.size() && s[i + 2] == ' ' && s[i + 3] == '.'));
      if (std::strchr(",;:)]!?", n) != nullptr || (n == '.' && !ellipsis)) continue;
    }
    if (c == ' ' && !out.empty() && out.back() == '(') continue;
    if (c == ')' && !out.empty() && out.back() == '(') {
      out.pop_back();
      while (!out.empty() && out.back() == ' ') out.pop_back();
      continue;
    }
    if ((c == ',' || c == ';') && !out.empty() && (out.back() == ',' || out.back() == ';')) continue;
    out.push_back(c);
  }
  out = collapse_spaces(out);
  // A separator left at the start or before the final period by a removed tag.
  while (!out.empty() && std::strchr(",;:", out.front()) != nullptr) out = collapse_spaces(out.substr(1));
  for (const char* bad : {",.", ";.", ":."}) {
    size_t p;
    while ((p = out.find(bad)) != std::string::npos) out.erase(p, 1);
  }
  return out;
}

// --- accent codes ---------------------------------------------------------------------------------

inline const std::unordered_map<std::string, std::string>& named_codes() {
  static const std::unordered_map<std::string, std::string> m = [] {
    std::unordered_map<std::string, std::string> t = {
        {"ae", "ae"},         {"AE", "AE"},      {"oe", "oe"},    {"OE", "OE"},      {"imac", "i"},
        {"aum", "a"},         {"add", "a"},      {"udd", "u"},    {"asl", "a"},      {"eth", "th"},
        {"thorn", "th"},      {"ng", "ng"},      {"th", "th"},    {"yogh", "y"},     {"deg", " degrees"},
        {"sect", "section "}, {"root", "root "}, {"pounds", "L"}, {"times", "x"},    {"divby", "/"},
        {"div", "/"},         {"middot", "."},   {"nbsp", " "},   {"ldqo", "\""},    {"rdqo", "\""},
        {"lsquo", "'"},       {"rsquo", "'"},    {"prime", "'"},  {"bprime", "''"},  {"dagger", ""},
        {"dag", ""},          {"para", ""},      {"hand", ""},    {"rarr", "->"},    {"sharp", "#"},
        {"flat", "b"},        {"natural", ""},   {"filig", "fi"}, {"fllig", "fl"},   {"ffllig", "ffl"},
        {"bar", ""},          {"break", ""},     {"dsdot", "d"},  {"lsdot", "l"},    {"zdot", "z"},
        {"mdot", "m"},        {"tsdo", "t"},     {"schwa", "e"},  {"upslur", ""},    {"colret", ""},
        {"lbrace2", ""},      {"rbrace2", ""},   {"asper", ""},   {"ounceap", "oz"}, {"?", ""}};
    for (const char* g :
         {"alpha", "beta",    "gamma", "delta", "epsilon", "zeta",    "eta",    "theta", "iota",
          "kappa", "lambda",  "mu",    "nu",    "xi",      "omicron", "pi",     "rho",   "sigma",
          "tau",   "upsilon", "phi",   "chi",   "psi",     "omega",   "digamma"}) {
      std::string name(g);
      t[name] = name;
      std::string cap = name;
      cap[0] = to_upper(cap[0]);
      t[cap] = cap;
    }
    t["sigmat"] = "sigma";
    return t;
  }();
  return m;
}

// The ASCII of one code, or false when `code` is not an accent/symbol code (a tag like "Obs.").
inline bool accent_code(std::string_view code, std::string& out) {
  const auto& named = named_codes();
  auto it = named.find(std::string(code));
  if (it != named.end()) {
    out = it->second;
    return true;
  }
  if (starts_with(code, "frac") && code.size() > 5) {
    std::string_view num = code.substr(4);
    if (!std::all_of(num.begin(), num.end(), [](char c) { return is_digit(c) || c == 'x'; })) return false;
    size_t x = num.find('x');
    size_t cut = x != std::string_view::npos ? x : num.size() / 2;
    std::string_view a = num.substr(0, cut), b = num.substr(x != std::string_view::npos ? x + 1 : cut);
    if (a.empty() || b.empty()) return false;
    out = std::string(a) + "/" + std::string(b);
    return true;
  }
  // Diacritics: a mark then one or two letters (["o], [=e], [,c], [-o], [=oo]), or letters then
  // the breve mark (  [a^], [oo^]).
  static const char* const kMarks = "=.~'`\"^,-*";
  auto letters = [](std::string_view l) {
    return !l.empty() && l.size() <= 2 && std::all_of(l.begin(), l.end(), [](char c) { return is_alpha(c); });
  };
  if (code.size() >= 2 && std::strchr(kMarks, code[0]) != nullptr && letters(code.substr(1))) {
    out = std::string(code.substr(1));
    return true;
  }
  if (code.size() >= 2 && code.back() == '^' && letters(code.substr(0, code.size() - 1))) {
    out = std::string(code.substr(0, code.size() - 1));
    return true;
  }
  return false;
}

// --- labels ----------------------------------------------------------------------------------------

// A domain label like "Zool.", "Law", "R. C. Ch.", "Med., Chem.", "Card Playing"; `strict` (used
// in the middle of a sentence, where "(Sirius)" is content) accepts only abbreviations.
inline bool is_domain_label(std::string_view content, bool strict) {
  content = trim(content);
  if (content.empty() || content.size() > 40) return false;
  size_t words = 0, lower_words = 0;
  bool any_letter = false;
  size_t b = 0;
  while (b < content.size()) {
    while (b < content.size() && (content[b] == ' ' || content[b] == ',')) ++b;
    if (b >= content.size()) break;
    size_t e = b;
    while (e < content.size() && content[e] != ' ' && content[e] != ',') ++e;
    std::string_view w = content.substr(b, e - b);
    b = e;
    ++words;
    if (w == "&" || w == "and" || w == "of" || w == "or") continue;
    for (char c : w) {
      if (is_digit(c)) return false;
      if (is_alpha(c)) any_letter = true;
    }
    bool abbrev = w.back() == '.';
    if (strict && !abbrev) return false;
    if (!abbrev && !is_upper(w.front())) ++lower_words;
  }
  if (!any_letter) return false;
  // At the start of a sense a short lower-case label is still a label: "(computers)", "(print.)".
  return lower_words == 0 || (words <= 2 && lower_words == words);
}

// Removes the labels a sense or phrase definition may start with: "(Zool.)", "pl.", "Fig.:",
// "Hence:", "Specifically:", a part of speech ("1. n. The shot-proof pilot house").
inline std::string strip_leading_labels(std::string s) {
  for (;;) {
    std::string_view v = trim(s);
    if (!v.empty() && v.front() == '(') {
      size_t close = v.find(')');
      if (close != std::string_view::npos && is_domain_label(v.substr(1, close - 1), false)) {
        s = std::string(trim(v.substr(close + 1)));
        while (!s.empty() && (s.front() == ',' || s.front() == ':' || s.front() == ' ')) s.erase(0, 1);
        continue;
      }
    }
    bool changed = false;
    for (const char* label : {"pl.", "Fig.:", "Fig.", "Hence:", "Specifically:", "Specif.:", "Colloq.:",
                              "n. pl.", "n.", "a.", "adj.", "adv.", "v. t.", "v. i.", "v."}) {
      size_t n = std::strlen(label);
      if (v.size() > n + 1 && starts_with(v, label) && v[n] == ' ') {
        s = std::string(trim(v.substr(n)));
        changed = true;
        break;
      }
    }
    if (!changed) return std::string(trim(s));
  }
}

// --- sentence splitting ---------------------------------------------------------------------------

inline const std::unordered_set<std::string>& abbreviations() {
  // Lower-cased; these never end a sentence when a capital follows (single letters and dotted
  // forms are handled by rule).
  static const std::unordered_set<std::string> s = {
      "mr.",  "mrs.",  "ms.",   "dr.",    "st.",   "mt.",     "sr.",     "jr.",  "prof.", "rev.",
      "gen.", "capt.", "col.",  "lieut.", "gov.",  "hon.",    "messrs.", "cf.",  "viz.",  "vs.",
      "esp.", "fig.",  "figs.", "no.",    "nos.",  "vol.",    "vols.",   "ch.",  "chap.", "sec.",
      "pp.",  "adj.",  "adv.",  "prep.",  "conj.", "interj.", "pron.",   "pl.",  "sing.", "imp.",
      "pr.",  "gr.",   "lat.",  "fr.",    "ger.",  "sp.",     "it.",     "oe.",  "ns.",   "ll.",
      "nl.",  "of.",   "skr.",  "icel.",  "dan.",  "sw.",     "goth.",   "ohg.", "mhg.",  "heb.",
      "ar.",  "pref.", "suff.", "fem.",   "masc.", "obs.",    "approx.", "ca.",  "ibid.", "op.",
      "al.",  "dept.", "univ.", "assoc.", "bros.", "ft.",     "in.",     "lb.",  "lbs.",  "oz.",
      "yd.",  "min.",  "sq.",   "zool.",  "bot.",  "compar.", "superl.", "jan.", "feb.",  "mar.",
      "apr.", "jun.",  "jul.",  "aug.",   "sep.",  "sept.",   "oct.",    "nov.", "dec."};
  return s;
}

inline bool is_abbreviation(std::string_view word) {
  // `word` ends with '.'; strip an opening quote or parenthesis.
  while (!word.empty() && (word.front() == '"' || word.front() == '(' || word.front() == '\''))
    word.remove_prefix(1);
  if (word.size() == 2 && is_alpha(word[0])) return true;  // "n.", "v.", "t.", initials "W."
  if (word.find('.') < word.size() - 1) return true;       // "e.g.", "i.e.", "U.S.", "p.m."
  std::string lw;
  for (char c : word) lw.push_back(to_lower(c));
  return abbreviations().count(lw) > 0;
}

// "1. ", "12. " at the start of a stripped line.
inline size_t sense_number_length(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && i < 2 && is_digit(s[i])) ++i;
  if (i == 0 || i + 1 >= s.size() || s[i] != '.' || s[i + 1] != ' ') return 0;
  return i + 2;
}

// Appends `text`, tidied, to the entry's prose unless it is empty.
inline void add_paragraph(Entry& e, std::string text) {
  text = tidy(text);
  if (!text.empty()) e.paragraphs.push_back(std::move(text));
}

}  // namespace sieve::corpus::detail
