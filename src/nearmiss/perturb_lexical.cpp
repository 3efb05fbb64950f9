// Antonym and synonym substitution: one content word replaced through WordNet, inflection kept.
#include <set>
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"

namespace sieve::nearmiss::rules {

// ---- antonym / synonym -------------------------------------------------------------------------

namespace {

// The inflection of `word` (part of speech `p`) relative to a base, and how to re-apply it.
struct Inflection {
  std::string base;
  int form = -1;  // noun: 0 sing, 1 plural; verb: 0 base, 1 past, 2 participle, 3 third, 4 -ing; adj/adv: 0
};
Inflection inflection_of(const std::string& w, Pos p, const Lexicon& lex) {
  Inflection inf;
  if (p == Pos::Adj || p == Pos::Adv) {
    // A comparative or superlative ("larger") is skipped: its antonym would lose the degree.
    for (const auto& b : lex.base_forms(w, p))
      if (b != w) return inf;
    if (lex.has(w, p)) inf = {w, 0};
    return inf;
  }
  for (const auto& b : lex.base_forms(w, p)) {
    if (b.find(' ') != std::string::npos) continue;
    if (p == Pos::Noun) {
      if (w == b) return {b, 0};
      if (w == lex.noun_plural(b)) return {b, 1};
    } else {
      if (w == b) return {b, 0};
      if (w == lex.verb_past(b)) return {b, 1};
      if (w == lex.verb_past_participle(b)) return {b, 2};
      if (w == lex.verb_third_person(b)) return {b, 3};
      if (w == lex.verb_present_participle(b)) return {b, 4};
    }
  }
  return inf;
}
std::string inflect(const std::string& base, Pos p, int form, const Lexicon& lex) {
  if (p == Pos::Noun) return form == 1 ? lex.noun_plural(base) : base;
  if (p == Pos::Verb) {
    switch (form) {
      case 1: return lex.verb_past(base);
      case 2: return lex.verb_past_participle(base);
      case 3: return lex.verb_third_person(base);
      case 4: return lex.verb_present_participle(base);
      default: return base;
    }
  }
  return base;
}

bool tag_pos(Tag g, Pos& p) {
  switch (g) {
    case Tag::Noun: p = Pos::Noun; return true;
    case Tag::Verb: p = Pos::Verb; return true;
    case Tag::Adj: p = Pos::Adj; return true;
    case Tag::Adv: p = Pos::Adv; return true;
    default: return false;
  }
}

}  // namespace

void lexical_candidates(const Sentence& s, const Lexicon& lex, bool antonym, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  for (size_t i = 0; i < t.size(); ++i) {
    Pos p;
    if (!tag_pos(t[i].tag, p)) continue;
    const std::string& w0 = t[i].text;
    if (!is_alpha_word(w0) || (i > 0 && starts_upper(w0))) continue;
    std::string w = lower(w0);
    if (w.size() < 3 || is_closed_class(w)) continue;
    static const std::set<std::string> kSkip = {"first", "second", "third", "last", "own", "other", "same",
                                                "only", "next", "certain", "such", "former", "latter"};
    if (kSkip.count(w)) continue;
    // A sentence-initial -ing word is a gerund or a participle phrase the tagger cannot resolve.
    if (i == 0 && ends_with(w, "ing")) continue;
    if (p == Pos::Adj && lex.has(w, Pos::Noun) && !kAttributes.count(w) && i + 1 < t.size() &&
        t[i + 1].tag == Tag::Noun)
      continue;
    // Words whose complement depends on the word itself ("began to", "limited to", "fond of") keep
    // it only under a synonym, and not always then: skip verbs and participles before to/that/of.
    if (i + 1 < t.size() && (p == Pos::Verb || (p == Pos::Adj && ends_with(w, "ed")))) {
      std::string next = lower(t[i + 1].text);
      if (next == "to" || next == "that" || next == "of" || next == "on" || next == "with") continue;
    }
    Inflection inf = inflection_of(w, p, lex);
    if (inf.form < 0) continue;
    std::vector<std::string> alts =
        antonym ? lex.antonyms(inf.base, p, p == Pos::Adj, 1) : lex.synonyms(inf.base, p, 1);
    for (const auto& a : alts) {
      if (!is_alpha_word(a) || starts_upper(a) || a.find(' ') != std::string::npos) continue;
      // Abbreviations and symbols ("s" for second, "h" for hour) inflect into nonsense ("ses").
      if (a.size() < 3) continue;
      if (antonym && p == Pos::Noun && a.rfind("non", 0) == 0) continue;  // "noninterference"
      std::string form = inflect(a, p, inf.form, lex);
      if (form.empty() || lower(form) == w || !is_alpha_word(form)) continue;
      if (!article_ok(s, i, form)) continue;
      Sentence r = s;
      r.tokens[i].text = case_like(w0, form);
      out.push_back(r);
    }
  }
}

}  // namespace sieve::nearmiss::rules
