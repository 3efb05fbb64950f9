// Source cleaners (see sources.h; the rules with examples are in docs/corpus.md).
#include "corpus/sources.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/file_util.h"
#include "nearmiss/sentence.h"
#include "sieve/error.h"

namespace sieve::corpus {

const char* source_name(Source s) {
  switch (s) {
    case Source::WordNet:
      return "wordnet";
    case Source::Gcide:
      return "gcide";
    case Source::Foldoc:
      return "foldoc";
  }
  return "?";
}

Source source_from_name(const std::string& name) {
  if (name == "wordnet") return Source::WordNet;
  if (name == "gcide") return Source::Gcide;
  if (name == "foldoc") return Source::Foldoc;
  SIEVE_THROW("unknown corpus source '" << name << "' (expected wordnet, gcide or foldoc)");
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

size_t indentation(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

std::vector<std::string_view> split_lines(std::string_view text) {
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
std::string collapse_spaces(std::string_view s) {
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
std::string tidy(std::string_view text) {
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

const std::unordered_map<std::string, std::string>& named_codes() {
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
bool accent_code(std::string_view code, std::string& out) {
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
bool is_domain_label(std::string_view content, bool strict) {
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
std::string strip_leading_labels(std::string s) {
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

const std::unordered_set<std::string>& abbreviations() {
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

bool is_abbreviation(std::string_view word) {
  // `word` ends with '.'; strip an opening quote or parenthesis.
  while (!word.empty() && (word.front() == '"' || word.front() == '(' || word.front() == '\''))
    word.remove_prefix(1);
  if (word.size() == 2 && is_alpha(word[0])) return true;  // "n.", "v.", "t.", initials "W."
  if (word.find('.') < word.size() - 1) return true;       // "e.g.", "i.e.", "U.S.", "p.m."
  std::string lw;
  for (char c : word) lw.push_back(to_lower(c));
  return abbreviations().count(lw) > 0;
}

}  // namespace

std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string s = collapse_spaces(text);
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '.' && c != '!' && c != '?') continue;
    size_t end = i + 1;  // closing quotes and brackets stay with the sentence
    while (end < s.size() && (s[end] == '"' || s[end] == '\'' || s[end] == ')')) ++end;
    if (end >= s.size() || s[end] != ' ' || end + 1 >= s.size()) continue;
    char next = s[end + 1];
    if (next == '"' || next == '(' || next == '\'') next = end + 2 < s.size() ? s[end + 2] : ' ';
    if (!is_upper(next) && !is_digit(next)) continue;
    if (c == '.') {
      size_t wb = s.rfind(' ', i);
      wb = wb == std::string::npos ? 0 : wb + 1;
      std::string_view word(s.data() + wb, i + 1 - wb);
      if (word == ".") continue;  // an ellipsis ". . ."
      if (is_abbreviation(word)) continue;
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
    i = end;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  for (auto& x : out) x = std::string(trim(x));
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& x) { return x.empty(); }),
            out.end());
  return out;
}

size_t count_words(std::string_view text) {
  size_t n = 0;
  bool in_word = false, has_alnum = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (is_space(c)) {
      if (in_word && has_alnum) ++n;
      in_word = has_alnum = false;
    } else {
      in_word = true;
      if (is_alpha(c) || is_digit(c) || static_cast<unsigned char>(c) >= 0x80) has_alnum = true;
    }
  }
  return n;
}

bool is_full_clause(const std::string& text, const nearmiss::Lexicon& lex) {
  if (count_words(text) < 3) return false;
  nearmiss::Sentence s = nearmiss::analyse(text, lex);
  nearmiss::Clause c;
  return nearmiss::parse_clause(s, c);
}

// A definition that only points elsewhere ("See Weir.", "Same as Weir.", "Alt. of Dog.") says
// nothing on its own.
bool is_cross_reference(const std::string& d) {
  for (const char* p : {"See ", "Same as ", "Alt. of ", "Alt. ", "Obs. ", "Variant of ", "Plural of ", "of "})
    if (starts_with(d, p) && count_words(d) <= 8) return true;
  return count_words(d) < 2;
}

std::string as_sentence(std::string text) {
  text = std::string(trim(text));
  while (!text.empty() && std::strchr(",;:", text.back()) != nullptr) text.pop_back();
  if (text.empty()) return text;
  text[0] = to_upper(text[0]);
  char last = text.back();
  if (last != '.' && last != '!' && last != '?' && last != '"') text.push_back('.');
  return text;
}

std::string fold_accent_codes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      size_t j = i + 1;
      while (j < text.size() && j - i <= 14 && text[j] != ']' && text[j] != '[' && text[j] != ' ') ++j;
      std::string repl;
      if (j < text.size() && text[j] == ']' && accent_code(text.substr(i + 1, j - i - 1), repl)) {
        out += repl;
        i = j;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string fold_to_ascii(std::string_view text) {
  // Latin-1 U+00C0..U+00FF to ASCII (index = code point - 0xC0).
  static const char* const kLatin1[64] = {
      "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I",  "I",
      "D", "N", "O", "O", "O", "O", "O",  "x", "O", "U", "U", "U", "U", "Y", "Th", "ss",
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",
      "d", "n", "o", "o", "o", "o", "o",  "/", "o", "u", "u", "u", "u", "y", "th", "y"};
  auto latin1 = [&](unsigned cp, std::string& out) {
    if (cp >= 0xC0 && cp <= 0xFF)
      out += kLatin1[cp - 0xC0];
    else if (cp == 0xA0)
      out += ' ';
    else if (cp == 0xB0)
      out += " degrees";
    else if (cp == 0xA3)
      out += 'L';
    // other Latin-1 symbols (section sign, inverted marks, ...) carry no words
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    // A valid UTF-8 sequence?
    size_t len = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool valid = len > 0 && i + len <= text.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (valid) {
      if (len == 2) {
        unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
        if (cp <= 0xFF)
          latin1(cp, out);
        else
          out.append(text.substr(i, 2));
      } else {
        unsigned cp = len == 3
                          ? ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
                                (static_cast<unsigned char>(text[i + 2]) & 0x3Fu)
                          : 0;
        if (cp == 0x2018 || cp == 0x2019)
          out += '\'';
        else if (cp == 0x201C || cp == 0x201D)
          out += '"';
        else if (cp == 0x2013 || cp == 0x2014)
          out += '-';
        else
          out.append(text.substr(i, len));
      }
      i += len - 1;
      continue;
    }
    // A stray single byte: cp1252 punctuation, else Latin-1.
    switch (c) {
      case 0x91:
      case 0x92:
        out += '\'';
        break;
      case 0x93:
      case 0x94:
        out += '"';
        break;
      case 0x96:
      case 0x97:
        out += '-';
        break;
      default:
        latin1(c, out);
    }
  }
  return out;
}

std::string strip_gcide_markup(std::string_view text, bool quotation) {
  std::string s = fold_accent_codes(fold_to_ascii(text));
  // Brackets (possibly nested: etymologies contain codes and cross-references).
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ']') continue;  // an unmatched closer
    if (s[i] != '[') {
      out.push_back(s[i]);
      continue;
    }
    int depth = 0;
    size_t j = i;
    for (; j < s.size(); ++j) {
      if (s[j] == '[') ++depth;
      if (s[j] == ']' && --depth == 0) break;
    }
    if (j >= s.size()) continue;  // an unmatched opener: drop the character alone
    std::string_view inner(s.data() + i + 1, j - i - 1);
    bool one_word = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) {
      return is_alpha(c) || c == '\'' || c == '-';
    });
    if (quotation && one_word)
      out.append(inner);
    else if (!out.empty() && !is_space(out.back()) && j + 1 < s.size() && is_alpha(s[j + 1]))
      out.push_back(' ');  // "word[Obs.]word" must not glue the words
    i = j;
  }
  // Braces: keep the words; a braced form with pronunciation marks ({Chal`a*zo*gam"ic}) loses them.
  {
    std::string kept;
    kept.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == '}') continue;
      if (out[i] != '{') {
        kept.push_back(out[i]);
        continue;
      }
      size_t close = out.find('}', i);
      std::string_view inner =
          std::string_view(out).substr(i + 1, close == std::string::npos ? 0 : close - i - 1);
      if (close != std::string::npos &&
          (inner.find('*') != std::string_view::npos || inner.find('`') != std::string_view::npos)) {
        for (char c : inner)
          if (c != '*' && c != '`' && c != '"') kept.push_back(c);
        i = close;
      }
    }
    out = std::move(kept);
  }
  // Abbreviated domain labels anywhere: "{Dog ape} (Zool.), a male ape".
  std::string res;
  res.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '(') {
      size_t close = out.find(')', i);
      size_t inner_open = out.find('(', i + 1);
      if (close != std::string::npos && (inner_open == std::string::npos || inner_open > close) &&
          is_domain_label(std::string_view(out).substr(i + 1, close - i - 1), true)) {
        i = close;
        continue;
      }
    }
    res.push_back(out[i]);
  }
  return tidy(res);
}

namespace {

// --- GCIDE article structure ----------------------------------------------------------------------

// A line holding only bracket tags: "[1913 Webster]", "[PJC]", "[Obs.]".
bool tag_only(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '[') return false;
  int depth = 0;
  for (char c : line) {
    if (c == '[')
      ++depth;
    else if (c == ']')
      --depth;
    else if (depth == 0 && !is_space(c))
      return false;
  }
  return depth == 0;
}

// Net bracket depth change of a header line: [ ] ( ) { }.
int bracket_balance(std::string_view line) {
  int d = 0;
  for (char c : line) {
    if (c == '[' || c == '(' || c == '{') ++d;
    if (c == ']' || c == ')' || c == '}') --d;
  }
  return d;
}

// "1. ", "12. " at the start of a stripped line.
size_t sense_number_length(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && i < 2 && is_digit(s[i])) ++i;
  if (i == 0 || i + 1 >= s.size() || s[i] != '.' || s[i + 1] != ' ') return 0;
  return i + 2;
}

// "(a) " at the start of a stripped line.
bool is_subsense_start(std::string_view s) {
  return s.size() > 4 && s[0] == '(' && is_lower(s[1]) && s[2] == ')' && s[3] == ' ';
}

// A header continuation that is only part-of-speech abbreviations or labels: "t. [L. ...",
// "n. [Acetyl ...", "(Chem.)".
bool looks_like_header_tail(std::string_view s) {
  s = trim(s);
  if (s.empty()) return false;
  if (s.front() == '[') return true;  // an etymology that starts on its own line
  if (s.front() == '(') {             // a line of labels only: "(Chem.)", "(Med., Chem.)"
    while (!s.empty() && s.front() == '(') {
      size_t c = s.find(')');
      if (c == std::string_view::npos || !is_domain_label(s.substr(1, c - 1), false)) return false;
      s = trim(s.substr(c + 1));
    }
    return s.empty();
  }
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t b = i;
    while (i < s.size() && is_lower(s[i])) ++i;
    if (i == b || i - b > 6 || i >= s.size() || s[i] != '.') break;
    ++i;
    any = true;
    while (i < s.size() && (s[i] == ' ' || s[i] == '&' || s[i] == ',')) ++i;
    if (i >= s.size() || s[i] == '[' || s[i] == '(') return true;
  }
  return any && i >= s.size();
}

// The citation "--Author." of a line: position of the dashes, or npos. A citation follows the end of
// a sentence or quotation (or starts the line) and names a capitalised author or a book
// ("--Shak.", "-- 2 Kings", "--[MI11]"); "; -- called also" is a dash.
size_t find_citation(std::string_view line) {
  size_t from = 0;
  for (;;) {
    size_t p = line.find("--", from);
    if (p == std::string_view::npos) return p;
    from = p + 2;
    size_t q = p + 2;
    if (q < line.size() && line[q] == ' ') ++q;
    // At the end of the line the author is on the next (deep-indented) line.
    bool at_end = q >= line.size();
    if (!at_end && !(is_upper(line[q]) || is_digit(line[q]) || line[q] == '[')) continue;
    size_t k = p;
    while (k > 0 && line[k - 1] == ' ') --k;
    if (k == 0) return p;
    if (k == p) continue;  // "word--Word" is a hyphenated compound, not a citation
    if (std::strchr(".!?\"')]", line[k - 1]) != nullptr) return p;
  }
}

const char kCiteOpen = '\x01', kCiteClose = '\x02';

// Joins the lines of a block, marking citations as \x01author\x02 and dropping the deep-indented
// continuation lines of an attribution ("-- 2 Kings" / "viii. 13").
std::string join_block(const std::vector<std::string_view>& lines) {
  std::string out;
  bool after_citation = false;
  for (std::string_view line : lines) {
    if (after_citation && indentation(line) >= 25) continue;
    after_citation = false;
    std::string_view s = trim(line);
    size_t p = find_citation(s);
    if (!out.empty()) out.push_back(' ');
    if (p != std::string_view::npos) {
      out.append(s.substr(0, p));
      std::string_view author = trim(s.substr(p + 2));
      out.push_back(kCiteOpen);
      out.append(author);
      out.push_back(kCiteClose);
      after_citation = true;
    } else {
      out.append(s);
    }
  }
  return out;
}

// Takes the inline quotations out of a joined block: a "..." right before a citation becomes a
// Quotation with that author; a citation without a quotation (the source of a definition) is
// dropped. Returns the remaining text.
std::string take_quotations(const std::string& text, std::vector<Quotation>& quotes) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find(kCiteOpen, i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    size_t close = text.find(kCiteClose, open);
    if (close == std::string::npos) close = text.size() - 1;
    std::string author = collapse_spaces(text.substr(open + 1, close - open - 1));
    std::string before = text.substr(i, open - i);
    std::vector<std::string> taken;
    for (;;) {  // "A." "B." --Author: both quotations are the author's
      std::string_view b = trim(before);
      if (b.empty() || b.back() != '"') break;
      size_t q = b.substr(0, b.size() - 1).rfind('"');
      if (q == std::string_view::npos) break;
      taken.push_back(std::string(b.substr(q + 1, b.size() - q - 2)));
      before = std::string(b.substr(0, q));
    }
    std::reverse(taken.begin(), taken.end());
    for (auto& t : taken) {
      std::string clean = strip_gcide_markup(t, true);
      if (!clean.empty()) quotes.push_back({clean, strip_gcide_markup(author)});
    }
    out.append(before);
    out.push_back(' ');
    i = close + 1;
  }
  return out;
}

// A sense may end with the derived words of the entry, another part of speech's definition:
// "... and micropyle. -- {Chal`a*zo*gam"ic}, a." or "-- n. An asiphonate mollusk."; they are cut.
std::string cut_derived_forms(std::string text) {
  size_t from = 0;
  for (;;) {
    size_t p = text.find("-- ", from);
    if (p == std::string::npos) return text;
    from = p + 3;
    std::string_view rest = std::string_view(text).substr(p + 3);
    bool derived = false;
    if (starts_with(rest, "{")) {
      size_t c = rest.find('}');
      std::string_view inner = rest.substr(1, c == std::string_view::npos ? 0 : c - 1);
      derived = inner.find('*') != std::string_view::npos || inner.find('`') != std::string_view::npos ||
                inner.find('"') != std::string_view::npos;
    } else {
      for (const char* pos : {"n. ", "a. ", "adv. ", "v. t. ", "v. i. ", "adj. "})
        if (starts_with(rest, pos)) derived = true;
    }
    if (derived) {
      text.resize(p);
      return text;
    }
  }
}

// A cross-reference closing a paragraph: "the dog days, See Dog days." -> "the dog days.";
// "(See Flea.)" too. A "See" that starts the text is left for is_cross_reference.
std::string cut_trailing_see(std::string text) {
  for (const char* sep : {", See ", "; See ", ". See ", ", see ", "; see ", " (See "}) {
    size_t p = text.rfind(sep);
    if (p == std::string::npos || p == 0) continue;
    std::string_view tail = std::string_view(text).substr(p + 2);
    if (count_words(tail) > 9 || tail.find(". ") != std::string_view::npos) continue;
    text.resize(p);
    if (std::strcmp(sep, ". See ") == 0 || text.back() != '.') text.push_back('.');
    return tidy(text);
  }
  return text;
}

// Dashes of the 1913 style: "; -- called also dog" -> "; called also dog", other " -- " -> " - ".
std::string normalise_dashes(std::string s) {
  size_t p;
  while ((p = s.find("; --")) != std::string::npos) s.erase(p + 1, 3);
  while ((p = s.find(", --")) != std::string::npos) s.erase(p + 1, 3);
  while ((p = s.find(" -- ")) != std::string::npos) s.replace(p, 4, " - ");
  while ((p = s.find("-- ")) == 0) s.erase(0, 3);
  return tidy(s);
}

// Splits a clean sense into its definition and the usage examples after "as,".
Sense split_usage(const std::string& text) {
  Sense sense;
  size_t p = std::string::npos;
  if (starts_with(text, "as, ")) {
    p = 0;
  } else {
    for (const char* sep : {"; as, ", ", as, ", ": as, "}) {
      size_t q = text.find(sep);
      if (q != std::string::npos && q < p) p = q;
    }
  }
  if (p == std::string::npos) {
    sense.definition = text;
  } else {
    sense.definition = text.substr(0, p);
    std::string rest = text.substr(text.find("as, ", p) + 4);
    size_t dash = rest.find(" - ");
    if (dash != std::string::npos) rest.resize(dash);
    auto sentences = split_sentences(rest);
    rest = sentences.empty() ? std::string() : sentences.front();
    size_t b = 0;
    while (b <= rest.size()) {
      size_t e = rest.find(';', b);
      if (e == std::string::npos) e = rest.size();
      std::string ex = std::string(trim(std::string_view(rest).substr(b, e - b)));
      for (const char* tail : {", etc.", " etc.", "."})
        if (ex.size() > std::strlen(tail) &&
            ex.compare(ex.size() - std::strlen(tail), std::string::npos, tail) == 0)
          ex.resize(ex.size() - std::strlen(tail));
      while (!ex.empty() && std::strchr(",;: ", ex.back()) != nullptr) ex.pop_back();
      if (count_words(ex) >= 1) sense.examples.push_back(ex);
      b = e + 1;
    }
  }
  // The first sentence: what follows is encyclopedic ("In America it is the common flea.") or a
  // cross-reference ("See Flea.").
  std::string d = strip_leading_labels(sense.definition);
  auto first = split_sentences(d);
  if (!first.empty()) d = first.front();
  while (!d.empty() && std::strchr(",;: ", d.back()) != nullptr) d.pop_back();
  if (!d.empty() && d.back() != '.' && d.back() != '!' && d.back() != '?') d.push_back('.');
  sense.definition = count_words(d) > 0 ? d : std::string();
  return sense;
}

struct GcideHeader {
  std::string headword, pos;
};

GcideHeader parse_header(const std::string& header) {
  GcideHeader h;
  size_t b = header.find('\\');
  size_t e = b == std::string::npos ? std::string::npos : header.find('\\', b + 1);
  std::string word;
  if (e != std::string::npos) {
    word = fold_accent_codes(header.substr(b + 1, e - b - 1));  // before the marks go: ["i] holds a '"'
    word.erase(
        std::remove_if(word.begin(), word.end(), [](char c) { return c == '*' || c == '"' || c == '`'; }),
        word.end());
  } else {
    word = header.substr(0, header.find_first_of(",("));
  }
  h.headword = collapse_spaces(fold_to_ascii(fold_accent_codes(word)));
  // Part of speech: the first abbreviation outside \...\, brackets, parentheses and braces.
  // (After the first \...\ group: the headword before it may itself be "a" or "v".)
  std::string rest;
  int depth = 0;
  bool in_pron = false;
  for (size_t k = e == std::string::npos ? 0 : e + 1; k < header.size(); ++k) {
    char c = header[k];
    if (c == '\\') {
      in_pron = !in_pron;
      continue;
    }
    if (c == '[' || c == '(' || c == '{') ++depth;
    if (depth == 0 && !in_pron) rest.push_back(c);
    if ((c == ']' || c == ')' || c == '}') && depth > 0) --depth;
  }
  if (e == std::string::npos) rest = rest.substr(std::min(rest.size(), rest.find_first_of(",(")));
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && !is_lower(rest[i])) ++i;
    size_t s = i;
    while (i < rest.size() && is_lower(rest[i])) ++i;
    std::string tok = rest.substr(s, i - s);
    bool dotted = i < rest.size() && rest[i] == '.';
    if (tok.empty()) break;
    if (s > 0 && is_alpha(rest[s - 1])) continue;
    if (tok == "n" && (dotted || i >= rest.size() || rest[i] == ' '))
      h.pos = "noun";
    else if (tok == "v" && (dotted || i >= rest.size() || rest[i] == ' '))
      h.pos = "verb";
    else if ((tok == "a" && dotted) || tok == "adj")
      h.pos = "adj";
    else if (tok == "adv")
      h.pos = "adv";
    else if (dotted)
      return h;  // prep., conj., interj., imp., p. p., ...: none of the four
    if (!h.pos.empty()) return h;
  }
  return h;
}

// 1913 Webster capitalises every headword: "Dog" -> "dog"; "McCarthy" and "DNA" keep theirs.
std::string headword_case(const std::string& w) {
  if (w.size() < 2 || !is_upper(w[0])) return w;
  for (size_t i = 1; i < w.size(); ++i)
    if (is_upper(w[i])) return w;
  std::string r = w;
  r[0] = to_lower(r[0]);
  return r;
}

void add_paragraph(Entry& e, std::string text) {
  text = tidy(text);
  if (!text.empty()) e.paragraphs.push_back(std::move(text));
}

// A sense block (or a run-on phrase's definition): sub-senses "(a)", "(b)" split apart, inline
// quotations and citations taken out, usage examples separated. `drop` characters of the trimmed
// first line are not part of the text (the sense number, the phrase and its labels). With a
// phrase, definitions become Phrase rows and the paragraphs start with the phrase.
void add_senses(Entry& entry, const std::vector<std::string_view>& lines, size_t drop,
                const std::string* phrase) {
  std::vector<std::vector<std::string_view>> parts(1);
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string_view s = trim(lines[k]);
    if (k == 0) s = trim(s.substr(std::min(s.size(), drop)));
    if (is_subsense_start(s)) {
      parts.emplace_back();
      parts.back().push_back(trim(s.substr(4)));
    } else if (k == 0) {
      if (!s.empty()) parts.back().push_back(s);
    } else {
      parts.back().push_back(lines[k]);
    }
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].empty()) continue;
    std::vector<Quotation> quotes;
    std::string joined = take_quotations(cut_derived_forms(join_block(parts[p])), quotes);
    std::string clean = strip_leading_labels(normalise_dashes(strip_gcide_markup(joined)));
    clean = cut_trailing_see(clean);
    // "{Dog Star}. See in the Vocabulary." only points elsewhere: no prose, no pair.
    if (phrase != nullptr && is_cross_reference(clean)) clean.clear();
    std::string paragraph = phrase != nullptr && !clean.empty() ? *phrase + ", " + clean : clean;
    if (p == 0 && parts.size() > 1) {
      // The text before "(a)": a label or a heading of the sub-senses, prose at most.
      if (count_words(clean) >= 3) add_paragraph(entry, paragraph);
    } else {
      add_paragraph(entry, paragraph);
      Sense sense = split_usage(clean);
      if (phrase != nullptr) {
        if (!sense.definition.empty() && !is_cross_reference(sense.definition))
          entry.phrases.push_back({*phrase, sense.definition});
      } else if (!sense.definition.empty() || !sense.examples.empty()) {
        entry.senses.push_back(std::move(sense));
      }
    }
    for (auto& q : quotes) {
      add_paragraph(entry, q.text);
      entry.quotations.push_back(std::move(q));
    }
  }
}

// Length of the prefix of a phrase line that names the phrase: "{Bell cage}, or {Bell carriage}
// (Arch.), " -> up to "a timber frame"; the phrase itself goes to `phrase`.
size_t phrase_prefix(std::string_view first, std::string& phrase) {
  size_t close = first.find('}');
  if (close == std::string_view::npos) return 0;
  phrase = strip_gcide_markup(first.substr(1, close - 1));
  size_t p = close + 1;
  for (;;) {
    size_t q = p;
    while (q < first.size() && (first[q] == ' ' || first[q] == ',' || first[q] == '.')) ++q;
    std::string_view rest = first.substr(q);
    if (starts_with(rest, "or {") || starts_with(rest, "{")) {
      size_t c = first.find('}', q);
      if (c == std::string_view::npos) return q;
      p = c + 1;
      continue;
    }
    if (starts_with(rest, "(")) {
      size_t c = first.find(')', q);
      if (c != std::string_view::npos && is_domain_label(first.substr(q + 1, c - q - 1), false)) {
        p = c + 1;
        continue;
      }
    }
    return q;
  }
}

void add_synonyms(Entry& entry, const std::vector<std::string_view>& lines) {
  std::string text;
  for (auto l : lines) text += std::string(trim(l)) + " ";
  text = std::string(trim(text));
  text.erase(0, 4);  // "Syn:"
  text = std::string(trim(text));
  for (const char* p : {"Syn. --", "Syn. -", "Syn.-", "Syn."})
    if (starts_with(text, p)) {
      text = std::string(trim(text.substr(std::strlen(p))));
      break;
    }
  std::string clean = strip_gcide_markup(text);
  char sep = clean.find(';') != std::string::npos ? ';' : ',';
  size_t b = 0;
  while (b <= clean.size()) {
    size_t e = clean.find(sep, b);
    if (e == std::string::npos) e = clean.size();
    std::string item = std::string(trim(std::string_view(clean).substr(b, e - b)));
    b = e + 1;
    while (!item.empty() && item.back() == '.') item.pop_back();
    if (starts_with(item, "To ") || starts_with(item, "to ")) item = item.substr(3);
    if (item.empty() || starts_with(item, "See ") || item.find('.') != std::string::npos) continue;
    entry.synonyms.push_back(entry.from_wordnet ? item : headword_case(item));
  }
}

// dictd's GCIDE articles often end with the next article's headwords: "[1913 Webster] Abelite"
// then "Abelian", or "joy or merriment. Effervescence". They are cut off.
void trim_article_tail(std::vector<std::string_view>& lines, std::vector<std::string>& storage) {
  auto bare = [](std::string_view s) {  // a headword: no sentence punctuation, a few words
    s = trim(s);
    return !s.empty() && s.find_first_of(".:;,[]{}\"") == std::string_view::npos && count_words(s) <= 4;
  };
  for (size_t k = lines.size(); k-- > 1;) {
    std::string_view s = trim(lines[k]);
    if (s.empty() || s.front() != '[') {
      if (bare(s)) continue;
      break;
    }
    size_t close = s.find(']');
    if (close == std::string_view::npos) break;
    if (close + 1 < s.size() && !bare(s.substr(close + 1))) break;
    // lines[k] is "[tag] Next" (or "[tag]") and everything after it is bare headwords.
    storage.push_back(std::string(s.substr(0, close + 1)));
    lines.resize(k);
    lines.push_back(storage.back());
    return;
  }
  if (lines.size() < 2) return;
  std::string_view last = trim(lines.back());
  size_t dot = last.rfind(". ");
  if (dot != std::string_view::npos && last.back() != '.' && last.back() != ']' &&
      bare(last.substr(dot + 2)) && is_upper(last[dot + 2])) {
    storage.push_back(std::string(last.substr(0, dot + 1)));
    lines.back() = storage.back();
  }
}

}  // namespace

Entry clean_gcide_article(const std::string& raw_text) {
  Entry entry;
  entry.source = Source::Gcide;
  // Only WordNet 1.5 tags: a copy of WordNet. "[1913 Webster + WordNet 1.5]" articles are mixed.
  entry.from_wordnet =
      raw_text.find("WordNet 1.5") != std::string::npos && raw_text.find("Webster") == std::string::npos;
  auto lines = split_lines(raw_text);
  std::vector<std::string> storage;
  storage.reserve(2);  // trim_article_tail keeps views into it: no reallocation
  trim_article_tail(lines, storage);
  size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  if (i >= lines.size()) return entry;
  // Header: the first line, plus continuation lines while a bracket is open, the line ends in ','
  // or '&', the next line is at the left margin too (body lines are indented), or it holds only
  // part-of-speech abbreviations, labels and tags.
  std::string header(trim(lines[i]));
  int depth = bracket_balance(lines[i]);
  ++i;
  for (size_t extra = 0; i < lines.size() && extra < 12; ++extra) {
    std::string_view next = trim(lines[i]);
    if (next.empty()) break;
    std::string_view last = trim(header);
    bool cont = depth > 0 || indentation(lines[i]) == 0 ||
                (!last.empty() && (last.back() == ',' || last.back() == '&' || last.back() == '\\')) ||
                looks_like_header_tail(next) || tag_only(next);
    if (!cont && parse_header(header).pos.empty() && next.front() == '(') {
      // The pronunciation of a second headword wrapped onto this line: "(kr?d"?-tr?ks), n. [L. ...]".
      size_t close = next.find(')');
      std::string_view after =
          close == std::string_view::npos ? std::string_view() : trim(next.substr(close + 1));
      if (!after.empty() && after.front() == ',') after = trim(after.substr(1));
      cont = !after.empty() && looks_like_header_tail(after);
    }
    if (!cont || sense_number_length(next) > 0) break;
    header += " " + std::string(next);
    depth += bracket_balance(next);
    ++i;
  }
  GcideHeader h = parse_header(header);
  entry.headword = entry.from_wordnet ? h.headword : headword_case(h.headword);
  entry.pos = h.pos;

  // Blocks: separated by blank lines and tag-only lines; a sense number, "Note:", "Syn:" or
  // "Usage:" at the left margin also starts one.
  std::vector<std::vector<std::string_view>> blocks;
  std::vector<std::string_view> cur;
  auto flush = [&] {
    if (!cur.empty()) blocks.push_back(cur);
    cur.clear();
  };
  for (; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    std::string_view s = trim(line);
    if (s.empty() || tag_only(s)) {
      flush();
      continue;
    }
    bool starter = indentation(line) <= 4 && (sense_number_length(s) > 0 || starts_with(s, "Note:") ||
                                              starts_with(s, "Syn:") || starts_with(s, "Usage:"));
    if (starter) flush();
    cur.push_back(line);
  }
  flush();

  for (const auto& block : blocks) {
    std::string_view first = trim(block.front());
    size_t ind = indentation(block.front());
    if (starts_with(first, "Syn:")) {
      add_synonyms(entry, block);
    } else if (starts_with(first, "Note:") || starts_with(first, "Usage:")) {
      std::vector<std::string_view> ls = block;
      ls[0] = first.substr(first.find(':') + 1);
      std::vector<Quotation> quotes;
      add_paragraph(entry, normalise_dashes(strip_gcide_markup(take_quotations(join_block(ls), quotes))));
      for (auto& q : quotes) {
        add_paragraph(entry, q.text);
        entry.quotations.push_back(std::move(q));
      }
    } else if (size_t n = sense_number_length(first); n > 0) {
      add_senses(entry, block, n, nullptr);
    } else if (ind >= 8 && !is_subsense_start(first)) {
      // A quotation block: the text up to the attribution.
      std::string joined = join_block(block);
      size_t c = joined.find(kCiteOpen);
      Quotation q;
      q.text = strip_gcide_markup(joined.substr(0, c), true);
      if (c != std::string::npos) {
        size_t ce = joined.find(kCiteClose, c);
        q.author = strip_gcide_markup(joined.substr(c + 1, ce == std::string::npos ? ce : ce - c - 1));
      }
      if (!q.text.empty()) {
        add_paragraph(entry, q.text);
        entry.quotations.push_back(std::move(q));
      }
    } else if (first.front() == '{') {
      // A run-on phrase: "{Dog cheap}, very cheap." / "{Bell cage}, or {Bell carriage} (Arch.), ...".
      std::string phrase;
      size_t drop = phrase_prefix(first, phrase);
      add_senses(entry, block, drop, phrase.empty() ? nullptr : &phrase);
    } else {
      add_senses(entry, block, 0, nullptr);
    }
  }
  return entry;
}

namespace {

// What a FOLDOC paragraph may start with before its prose: a pronunciation "/bit'blit/", a
// reference "[BLT]", a sense number "1.", the acronym or alias "(HID)", "(Or "contraction")".
std::string foldoc_paragraph_start(std::string s) {
  for (;;) {
    std::string_view v = trim(s);
    size_t cut = 0;
    if (!v.empty() && (v.front() == '/' || v.front() == '[' || v.front() == '(')) {
      char close = v.front() == '/' ? '/' : v.front() == '[' ? ']' : ')';
      size_t e = v.find(close, 1);
      if (e != std::string_view::npos && e < 60 && e + 1 < v.size()) cut = e + 1;
    } else if (sense_number_length(v) > 0) {
      cut = sense_number_length(v);
    }
    if (cut == 0) return std::string(v);
    s = std::string(trim(v.substr(cut)));
  }
}

}  // namespace

Entry clean_foldoc_article(const std::string& raw_text) {
  Entry entry;
  entry.source = Source::Foldoc;
  const std::string text_ascii = fold_to_ascii(raw_text);  // the lines are views into it
  auto lines = split_lines(text_ascii);
  size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  // Headword lines: at the left margin, up to the first blank line.
  for (; i < lines.size() && !trim(lines[i]).empty(); ++i)
    if (entry.headword.empty() && indentation(lines[i]) == 0) entry.headword = collapse_spaces(lines[i]);
  if (entry.headword.find("%%%") != std::string::npos) {  // the database's preface and licence
    entry.headword.clear();
    return entry;
  }
  std::vector<std::vector<std::string_view>> blocks;
  std::vector<std::string_view> cur;
  for (; i <= lines.size(); ++i) {
    if (i == lines.size() || trim(lines[i]).empty()) {
      if (!cur.empty()) blocks.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(lines[i]);
    }
  }
  for (const auto& block : blocks) {
    // Code, tables and ASCII art are indented beyond the paragraph margin.
    bool deep = false;
    for (auto l : block) deep = deep || indentation(l) > 4;
    if (deep) continue;
    std::string text;
    for (auto l : block) text += std::string(trim(l)) + " ";
    text = collapse_spaces(text);
    // "[{Jargon File}]", bibliographic references, lists of cross-references.
    if (text.empty() || text.front() == '[' || starts_with(text, "See ")) continue;
    // URLs, with the "{text (url)}" link form and the "(url)" parentheses around them.
    std::string out;
    for (size_t k = 0; k < text.size();) {
      std::string_view rest = std::string_view(text).substr(k);
      size_t word_end = std::min(rest.find(' '), rest.size());
      bool email =
          (k == 0 || text[k - 1] == ' ') && rest.substr(0, word_end).find('@') != std::string_view::npos;
      if (email || starts_with(rest, "http://") || starts_with(rest, "https://") ||
          starts_with(rest, "ftp://") || starts_with(rest, "www.") || starts_with(rest, "mailto:") ||
          starts_with(rest, "news:")) {
        size_t e = k;
        while (e < text.size() && !is_space(text[e]) && text[e] != ')' && text[e] != '}') ++e;
        while (e > k && std::strchr(".,;:", text[e - 1]) != nullptr) --e;  // sentence punctuation stays
        k = e;
        while (!out.empty() && out.back() == ' ') out.pop_back();
        for (const char* lead : {" at URL", " from URL", " URL"})
          if (out.size() >= std::strlen(lead) &&
              out.compare(out.size() - std::strlen(lead), std::string::npos, lead) == 0) {
            out.resize(out.size() - std::strlen(lead));
            break;
          }
        // A sentence around an address ("Write to x@y.org for a copy.") is left without its object:
        // the marker makes the sentence filter drop it.
        if (email) out += " \x03";
        continue;
      }
      out.push_back(text[k]);
      ++k;
    }
    // "<domain>" tags, "(YYYY-MM-DD)" stamps, then braces.
    std::string cleaned;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == '<') {
        size_t e = out.find('>', k);
        if (e != std::string::npos && e - k <= 40 &&
            std::all_of(out.begin() + static_cast<long>(k) + 1, out.begin() + static_cast<long>(e),
                        [](char c) { return is_alpha(c) || c == ' ' || c == '-' || c == ','; })) {
          k = e;
          continue;
        }
      }
      if (out[k] == '(' && k + 11 < out.size() + 1 && out.size() - k >= 12 && out[k + 11] == ')' &&
          is_digit(out[k + 1]) && out[k + 5] == '-' && out[k + 8] == '-') {
        k += 11;
        continue;
      }
      if (out[k] == '{' || out[k] == '}') continue;
      cleaned.push_back(out[k]);
    }
    cleaned = foldoc_paragraph_start(tidy(cleaned));
    if (count_words(cleaned) == 0) continue;
    if (entry.senses.empty()) {
      Sense s;
      s.definition = split_sentences(cleaned).front();  // the rest is commentary
      s.definition.erase(std::remove(s.definition.begin(), s.definition.end(), '\x03'), s.definition.end());
      s.definition = tidy(s.definition);
      entry.senses.push_back(std::move(s));
    }
    add_paragraph(entry, cleaned);
  }
  return entry;
}

std::vector<Entry> read_wordnet_entries(const std::string& dir, size_t max) {
  std::vector<Entry> out;
  static const std::array<std::pair<const char*, const char*>, 4> kFiles = {
      {{"data.noun", "noun"}, {"data.verb", "verb"}, {"data.adj", "adj"}, {"data.adv", "adv"}}};
  for (const auto& [file, pos] : kFiles) {
    std::string path = path_join(dir, file);
    std::string text = read_file(path);
    size_t line_no = 0, b = 0;
    while (b < text.size()) {
      size_t e = text.find('\n', b);
      if (e == std::string::npos) e = text.size();
      std::string_view line(text.data() + b, e - b);
      b = e + 1;
      ++line_no;
      if (line.empty() || starts_with(line, "  ")) continue;  // the licence header
      if (max != 0 && out.size() >= max) return out;
      // offset lex_filenum ss_type w_cnt (word lex_id)... ... | gloss
      std::vector<std::string_view> tok;
      size_t bar = line.find(" | ");
      SIEVE_THROW_IF_NOT(bar != std::string_view::npos,
                         path << ":" << line_no << ": no ' | ' before the gloss");
      std::string_view head = line.substr(0, bar);
      size_t t = 0;
      while (t < head.size() && tok.size() < 4 + 2 * 255) {
        size_t sp = head.find(' ', t);
        if (sp == std::string_view::npos) sp = head.size();
        tok.push_back(head.substr(t, sp - t));
        t = sp + 1;
      }
      SIEVE_THROW_IF_NOT(tok.size() >= 4, path << ":" << line_no << ": too few fields");
      size_t count = 0;
      for (char c : tok[3]) {
        int v = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        SIEVE_THROW_IF_NOT(v >= 0, path << ":" << line_no << ": bad word count '" << tok[3] << "'");
        count = count * 16 + static_cast<size_t>(v);
      }
      SIEVE_THROW_IF_NOT(count > 0 && tok.size() >= 4 + 2 * count,
                         path << ":" << line_no << ": word count " << count << " but fewer words");
      Entry entry;
      entry.source = Source::WordNet;
      entry.pos = pos;
      std::vector<std::string> lemmas;
      for (size_t w = 0; w < count; ++w) {
        std::string lemma(tok[4 + 2 * w]);
        size_t paren = lemma.find('(');  // adjective marker "(a)", "(p)", "(ip)"
        if (paren != std::string::npos && lemma.back() == ')') lemma.resize(paren);
        std::replace(lemma.begin(), lemma.end(), '_', ' ');
        if (std::find(lemmas.begin(), lemmas.end(), lemma) == lemmas.end()) lemmas.push_back(lemma);
      }
      entry.headword = lemmas.front();
      entry.synonyms.assign(lemmas.begin() + 1, lemmas.end());
      // The gloss: definition then quoted examples, ';'-separated, split as Lexicon splits it.
      std::string_view g = trim(line.substr(bar + 3));
      Sense sense;
      size_t start = 0;
      bool quoted = false;
      for (size_t k = 0; k <= g.size(); ++k) {
        if (k < g.size() && g[k] == '"') quoted = !quoted;
        if (k < g.size() && (quoted || g[k] != ';')) continue;
        std::string_view part = trim(g.substr(start, k - start));
        start = k + 1;
        if (part.empty()) continue;
        if (part.front() == '"') {
          size_t close = part.rfind('"');
          std::string_view body = close > 0 ? part.substr(1, close - 1) : part.substr(1);
          std::string ex;
          for (char c : body)
            if (c != '"') ex.push_back(c);
          ex = std::string(trim(ex));
          if (!ex.empty()) sense.examples.push_back(ex);
        } else if (sense.examples.empty()) {
          if (!sense.definition.empty()) sense.definition += "; ";
          sense.definition.append(part);
        }
      }
      if (sense.definition.empty()) continue;
      entry.paragraphs.push_back(sense.definition);
      for (const auto& ex : sense.examples) entry.paragraphs.push_back(ex);
      entry.senses.push_back(std::move(sense));
      out.push_back(std::move(entry));
    }
  }
  return out;
}

}  // namespace sieve::corpus
