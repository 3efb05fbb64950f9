// Role, binding and entity swaps: subject <-> object, the two NPs of "X of Y", the adjectives of two
// NPs, two names or numbers.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"

namespace sieve::nearmiss::rules {

namespace {

// Re-agrees the finite word of the verb group with a subject whose number changed from
// `old3` (third person singular) to `new3`. False when that cannot be done safely.
bool reagree(Sentence& s, const Clause& c, bool old3, bool new3, const Lexicon& lex) {
  if (old3 == new3) return true;
  size_t f = c.verb_group.b;
  while (f < c.verb_group.e && (s.tokens[f].tag == Tag::Adv || s.tokens[f].tag == Tag::Neg)) ++f;
  if (f >= c.verb_group.e) return false;
  Token& t = s.tokens[f];
  std::string w = lower(t.text);
  auto set = [&](const char* three, const char* other) {
    t.text = case_like(t.text, new3 ? three : other);
    return true;
  };
  if (t.tag == Tag::Modal) return true;
  if (w == "is" || w == "are") return set("is", "are");
  if (w == "was" || w == "were") return set("was", "were");
  if (w == "has" || w == "have") return set("has", "have");
  if (w == "does" || w == "do") return set("does", "do");
  if (w == "had" || w == "did") return true;
  if (t.tag != Tag::Verb) return false;
  VerbForm vf = verb_form(w, lex);
  switch (vf.form) {
    case Form::Past: return true;
    case Form::Third: t.text = case_like(t.text, vf.base); return !new3;
    case Form::Base:
      if (vf.past_equals_base) return false;  // "they put": present or past? don't guess
      if (!new3) return false;
      t.text = case_like(t.text, lex.verb_third_person(vf.base));
      return true;
    default: return false;
  }
}

bool swappable_np(const Sentence& s, Range np) {
  if (np.empty()) return false;
  const auto& t = s.tokens;
  if (np.size() == 1 && t[np.b].tag == Tag::Pron) {
    std::string w = lower(t[np.b].text);
    return w == "it" || w == "you";
  }
  for (size_t k = np.b; k < np.e; ++k)
    if (t[k].tag == Tag::Pron) return false;
  return true;
}

}  // namespace

// ---- role swap ---------------------------------------------------------------------------------

void role_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  Clause c;
  if (!parse_clause(s, c)) return;
  if (!swappable_np(s, c.subject)) return;
  const auto& t = s.tokens;
  auto try_swap = [&](Range other) {
    if (!swappable_np(s, other) || !np_boundary_after(s, other.e)) return;
    std::string head = lower(t[other.e - 1].text);
    if (head == "more" || head == "less" || head == "much" || head == "most" || head == "lot") return;
    // Time and measure adverbials are not objects ("cried the whole trip", "crested last night").
    static const std::set<std::string> kAdverbialHeads = {
        "night", "nights", "day", "days", "week", "weeks", "month", "months", "year", "years", "time",
        "times", "morning", "evening", "afternoon", "hour", "hours", "minute", "minutes", "second",
        "seconds", "trip", "home", "way", "today", "tonight", "yesterday", "tomorrow", "while", "century",
        "centuries", "decade", "decades", "summer", "winter", "spring", "autumn", "weekend", "moment"};
    if (kAdverbialHeads.count(head)) return;
    // The NP that becomes the subject needs a determiner, a name, a plural or "it"/"you": a bare
    // singular ("fly south", "took water") is mostly an adverb or part of an idiom.
    if (other.size() == 1 && t[other.b].tag == Tag::Noun && np_third_singular(s, other, lex)) return;
    if (span_text(s, c.subject) == span_text(s, other)) return;
    Sentence r = s;
    bool old3 = np_third_singular(s, c.subject, lex), new3 = np_third_singular(s, other, lex);
    if (!reagree(r, c, old3, new3, lex)) return;
    out.push_back(swap_spans(r, c.subject, other));
  };
  static const std::set<std::string> kLinking = {"become", "seem", "remain", "appear", "look", "feel", "sound",
                                                 "stay", "turn", "get", "prove", "stand", "grow", "go", "come",
                                                 "keep", "make", "call", "name", "elect", "consider"};
  bool linking = false;
  if (c.head_is_verb) {
    for (const auto& b : lex.base_forms(lower(t[c.head].text), Pos::Verb))
      if (kLinking.count(b)) linking = true;
  }
  // Without an auxiliary the verb must be finite ("laws enforcing noise abatement" is a fragment).
  bool has_aux = false;
  for (size_t k = c.verb_group.b; k < c.head; ++k)
    if (t[k].tag == Tag::Be || t[k].tag == Tag::Have || t[k].tag == Tag::Modal || t[k].tag == Tag::Do) has_aux = true;
  if (c.head_is_verb && !has_aux && verb_form(t[c.head].text, lex).form == Form::None) return;
  // "had acutely pointed toes": an adverb between have and a participle is usually an adjective
  // phrase the tagger misread as a perfect.
  for (size_t k = c.verb_group.b; k + 1 < c.head; ++k)
    if (t[k].tag == Tag::Have && t[k + 1].tag == Tag::Adv) return;
  if (c.head_is_verb && !linking && !c.object.empty()) {
    // Not a passive or a participle phrase ("was bitten by").
    bool passive = false;
    for (size_t k = c.verb_group.b; k < c.head; ++k)
      if (t[k].tag == Tag::Be) passive = true;
    if (!passive || ends_with(lower(t[c.head].text), "ing")) try_swap(c.object);
  }
  // "X is bigger than Y" / "X is more useful than Y".
  if (!c.head_is_verb && t[c.head].tag == Tag::Be && c.head + 1 == c.verb_group.e) {
    size_t k = c.verb_group.e;
    if (k < t.size() && (lower(t[k].text) == "more" || lower(t[k].text) == "less")) ++k;
    if (k + 1 < t.size() && t[k].tag == Tag::Adj && lower(t[k + 1].text) == "than" &&
        (k > c.verb_group.e || ends_with(lower(t[k].text), "er"))) {
      size_t b = k + 2, e = np_end(s, b);
      if (e > b) try_swap(Range{b, e});
    }
  }
}

// "the king of the castle" -> "the castle of the king": the two arguments of an "X of Y" relation.
// Both NPs need a determiner and the same number (so no agreement changes), and neither head may
// be a partitive, measure, container or part word ("a cup of tea", "the top of the hill"), whose
// swap is nonsense rather than a near-miss.
void of_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  static const std::set<std::string> kNotRelational = {
      "piece", "pieces", "cup", "cups", "glass", "glasses", "bottle", "bottles", "box", "boxes", "bag", "bags",
      "bowl", "bowls", "plate", "plates", "slice", "slices", "loaf", "bunch", "lot", "lots", "kind", "kinds",
      "sort", "sorts", "type", "types", "number", "numbers", "amount", "quantity", "group", "groups", "pair",
      "pairs", "couple", "set", "sets", "series", "variety", "part", "parts", "rest", "most", "half", "bit",
      "bits", "side", "sides", "top", "bottom", "front", "back", "middle", "end", "edge", "center", "centre",
      "herd", "flock", "pack", "crowd", "team", "member", "members", "name", "use", "lack", "way", "form",
      "state", "result", "cause", "course", "case", "sake", "one", "ones", "view", "picture", "photo", "image",
      "photograph", "drawing", "painting", "close", "sign", "full", "plenty", "row", "line", "stack", "pile",
      "dozen", "hundred", "thousand", "million", "percent", "majority", "minority", "act", "process", "day",
      "year", "time", "period", "age", "city", "town", "state", "kingdom", "island", "river", "lake", "sea"};
  const auto& t = s.tokens;
  for (size_t i = 1; i + 2 < t.size(); ++i) {
    if (lower(t[i].text) != "of" || t[i + 1].tag != Tag::Det) continue;
    size_t b1 = i;
    for (size_t b = 0; b < i; ++b)
      if (t[b].tag == Tag::Det && np_end(s, b) == i) {
        b1 = b;
        break;
      }
    if (b1 == i) continue;
    const size_t b2 = i + 1, e2 = np_end(s, b2);
    if (e2 <= b2 + 1) continue;
    // Y must end there: a punctuation mark, preposition or conjunction, or the verb when "X of Y"
    // is the subject (its number does not change, so neither does the verb).
    // A verb only counts when it cannot be a noun the NP failed to take in ("the meadow lark").
    bool verb_next = e2 < t.size() && (t[e2].tag == Tag::Be || t[e2].tag == Tag::Have || t[e2].tag == Tag::Do ||
                                       t[e2].tag == Tag::Modal);
    if (e2 < t.size() && t[e2].tag == Tag::Verb) {
      const auto pos = lex.parts_of_speech(lower(t[e2].text));
      verb_next = std::find(pos.begin(), pos.end(), Pos::Noun) == pos.end();
    }
    if (!verb_next && !np_boundary_after(s, e2)) continue;
    const Range x{b1, i}, y{b2, e2};
    if (!swappable_np(s, x) || !swappable_np(s, y)) continue;
    if (t[i - 1].tag != Tag::Noun || t[e2 - 1].tag != Tag::Noun) continue;
    if (kNotRelational.count(lower(t[i - 1].text)) || kNotRelational.count(lower(t[e2 - 1].text))) continue;
    if (np_third_singular(s, x, lex) != np_third_singular(s, y, lex)) continue;
    if (span_text(s, x) == span_text(s, y)) continue;
    out.push_back(swap_spans(s, x, y));
  }
}

// ---- binding swap ------------------------------------------------------------------------------

void binding_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  struct NP {
    Range np, adj;
  };
  std::vector<NP> nps;
  const auto& t = s.tokens;
  for (size_t i = 0; i < t.size();) {
    size_t e = np_end(s, i);
    if (e > i) {
      Range adj = np_adjectives(s, i, e);
      bool real = !adj.empty();
      static const std::set<std::string> kNotAttributes = {
          "first", "second", "third", "last", "next", "other", "same", "only", "own", "such", "certain",
          "whole", "main", "former", "latter", "various", "entire", "particular", "previous", "following",
          "further", "additional", "more", "less", "most", "least", "many", "few", "several", "different"};
      for (size_t k = adj.b; k < adj.e; ++k)
      {
        std::string w = lower(t[k].text);
        if (!lex.has(w, Pos::Adj) || starts_upper(t[k].text) || kNotAttributes.count(w) || ends_with(w, "ing"))
          real = false;
        if (lex.has(w, Pos::Noun) && !kAttributes.count(w)) real = false;
      }
      if (real) nps.push_back({Range{i, e}, adj});
      i = e;
    } else {
      ++i;
    }
  }
  for (size_t p = 0; p < nps.size(); ++p)
    for (size_t q = p + 1; q < nps.size(); ++q) {
      const Range a = nps[p].adj, b = nps[q].adj;
      if (span_text(s, a) == span_text(s, b)) continue;
      if (!article_ok(s, a.b, t[b.b].text) || !article_ok(s, b.b, t[a.b].text)) continue;
      out.push_back(swap_spans(s, a, b));
    }
}


// ---- entity swap -------------------------------------------------------------------------------

// PAWS-style: two names (runs of capitalised words) or two written numbers of one sentence trade
// places ("born in Paris in 1950, moved to Rome" -> "born in Rome in 1950, moved to Paris").
// The words stay the same and their relation changes. Spans joined only by "and", "or", commas or
// "&" are a coordination, whose swap keeps the meaning ("Paris and Rome"): no candidate there.
void entity_swap_candidates(const Sentence& s, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  auto digits = [](const std::string& w) {
    bool any = false;
    for (char c : w) {
      if (std::isdigit(static_cast<unsigned char>(c))) any = true;
      else if (c != ',' && c != '.') return false;
    }
    return any;
  };
  // A year trades places with a year, a quantity with a quantity ("in 1832 ... 40 acres" is not
  // swapped: "in 40 ... 1832 acres" reads as noise rather than as a near-miss).
  auto year = [](const std::string& w) {
    return w.size() == 4 && w.find_first_not_of("0123456789") == std::string::npos && (w[0] == '1' || w[0] == '2');
  };
  enum Class { kName, kYear, kQuantity };
  struct Span {
    Range r;
    Class c;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < t.size();) {
    if (t[i].tag == Tag::Propn) {
      size_t e = i;
      while (e < t.size() && t[e].tag == Tag::Propn) ++e;
      if (e - i <= 4) spans.push_back({Range{i, e}, kName});
      i = e;
    } else {
      if (t[i].tag == Tag::Num && digits(t[i].text)) spans.push_back({Range{i, i + 1}, year(t[i].text) ? kYear : kQuantity});
      ++i;
    }
  }
  for (size_t p = 0; p < spans.size(); ++p)
    for (size_t q = p + 1; q < spans.size(); ++q) {
      const Span& a = spans[p];
      const Span& b = spans[q];
      if (a.c != b.c || span_text(s, a.r) == span_text(s, b.r)) continue;
      bool coordinated = true;
      for (size_t k = a.r.e; k < b.r.b && coordinated; ++k) {
        const std::string w = lower(t[k].text);
        coordinated = w == "and" || w == "or" || w == "," || w == "&" || w == "nor";
      }
      if (coordinated) continue;
      out.push_back(swap_spans(s, a.r, b.r));
    }
}

}  // namespace sieve::nearmiss::rules
