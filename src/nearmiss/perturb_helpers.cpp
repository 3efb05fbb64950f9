// Helpers shared by the perturbation rules (perturb_rules.h): case, articles, spans, verb forms.
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"

namespace sieve::nearmiss::rules {

bool starts_upper(const std::string& w) { return !w.empty() && std::isupper(static_cast<unsigned char>(w[0])); }

// `w` with the first letter's case of `like`.
std::string case_like(const std::string& like, std::string w) {
  if (w.empty()) return w;
  if (starts_upper(like)) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
  return w;
}

bool ends_with(const std::string& s, const char* suf) {
  size_t n = std::char_traits<char>::length(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

bool is_alpha_word(const std::string& w) {
  if (w.empty()) return false;
  for (char c : w)
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '-') return false;
  return std::isalpha(static_cast<unsigned char>(w[0]));
}

namespace {

// "a" or "an" before `w` (spelling rule with the common exceptions).
std::string article_for(const std::string& word) {
  std::string w = lower(word);
  if (w.empty()) return "a";
  static const char* const kAnExceptions[] = {"hour", "honest", "honor", "honour", "heir"};
  for (const char* e : kAnExceptions)
    if (w.rfind(e, 0) == 0) return "an";
  static const char* const kAExceptions[] = {"unique", "unit", "univ", "unic", "unif", "union", "unil", "unis",
                                             "use", "usu", "uti", "uten", "ura", "ure", "uro", "eu", "ewe",
                                             "one", "once"};
  for (const char* e : kAExceptions)
    if (w.rfind(e, 0) == 0) return "a";
  return std::strchr("aeiou", w[0]) ? "an" : "a";
}

}  // namespace

// True when replacing token `i` by `replacement` keeps a preceding a/an correct.
bool article_ok(const Sentence& s, size_t i, const std::string& replacement) {
  if (i == 0) return true;
  std::string prev = lower(s.tokens[i - 1].text);
  if (prev != "a" && prev != "an") return true;
  return article_for(replacement) == prev;
}

// The tokens of `s` with [r1) and [r2) exchanged (r1 before r2). The moved spans take the
// whitespace of the slots they land in; a sentence-initial common word moved away is lower-cased.
Sentence swap_spans(const Sentence& s, Range r1, Range r2) {
  Sentence out;
  out.trailing = s.trailing;
  const auto& t = s.tokens;
  auto put_span = [&](Range from, const std::string& slot_space) {
    for (size_t k = from.b; k < from.e; ++k) {
      Token tok = t[k];
      if (k == from.b) tok.space_before = slot_space;
      if (k == 0 && tok.tag != Tag::Propn && tok.text != "I" && out.tokens.size() > 0) tok.text = lower(tok.text);
      out.tokens.push_back(tok);
    }
  };
  for (size_t k = 0; k < r1.b; ++k) out.tokens.push_back(t[k]);
  put_span(r2, t[r1.b].space_before);
  for (size_t k = r1.e; k < r2.b; ++k) out.tokens.push_back(t[k]);
  put_span(r1, t[r2.b].space_before);
  for (size_t k = r2.e; k < t.size(); ++k) out.tokens.push_back(t[k]);
  return out;
}

Token make_token(const std::string& text, const std::string& space, Tag tag) {
  Token t;
  t.text = text;
  t.space_before = space;
  t.tag = tag;
  return t;
}

VerbForm verb_form(const std::string& word, const Lexicon& lex) {
  VerbForm vf;
  std::string w = lower(word);
  for (const auto& b : lex.base_forms(w, Pos::Verb)) {
    if (b.find(' ') != std::string::npos) continue;
    vf.base = b;
    vf.past_equals_base = lex.verb_past(b) == b;
    if (w == b) vf.form = Form::Base;
    else if (w == lex.verb_past(b)) vf.form = Form::Past;
    else if (w == lex.verb_third_person(b)) vf.form = Form::Third;
    else continue;
    return vf;
  }
  return VerbForm{};
}

// Adjectives that are also nouns ("stock", "minute") are edited only when they are common
// attributes (a noun-like modifier is usually part of a compound: "stock market").
const std::set<std::string> kAttributes = {
    "red", "blue", "green", "yellow", "black", "white", "brown", "gray", "grey", "pink", "purple",
    "orange", "small", "old", "young", "hot", "cold", "warm", "cool", "wet", "dry", "short", "tall",
    "long", "round", "square", "flat", "soft", "hard", "light", "dark", "heavy", "sweet", "sour",
    "bitter", "plain", "fine", "good", "bad", "poor", "rich", "clean", "dirty", "empty", "full",
    "high", "low", "quiet", "loud", "fast", "slow", "deep", "wide", "thick", "thin", "bright", "dull",
    "strong", "weak", "happy", "sad", "wooden", "metal", "glass", "plastic", "paper", "stone",
    "gold", "silver", "iron", "leather", "silk", "cotton", "wool", "left", "right", "top", "front",
    "back", "male", "female", "public", "private", "early", "late", "major", "minor", "real",
    "natural", "national", "local", "general", "modern", "ancient", "simple", "complex", "common",
    "human", "final", "key", "chief", "prime", "double", "single", "giant", "tiny"};

bool np_boundary_after(const Sentence& s, size_t e) {
  if (e >= s.tokens.size()) return true;
  Tag g = s.tokens[e].tag;
  std::string w = lower(s.tokens[e].text);
  // "X of Y", "X and Y": the NP continues, moving only its first part would garble it.
  if (w == "of" || w == "and" || w == "or" || w == "nor") return false;
  return g == Tag::Punct || g == Tag::Prep || g == Tag::Conj || g == Tag::To || g == Tag::Wh;
}

std::string span_text(const Sentence& s, Range r) {
  std::string out;
  for (size_t k = r.b; k < r.e; ++k) out += lower(s.tokens[k].text) + " ";
  return out;
}

Words split_words(const std::string& s) {
  Words w;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) w.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return w;
}

}  // namespace sieve::nearmiss::rules
