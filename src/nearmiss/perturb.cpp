// Rule-based near-miss perturbations (see perturb.h); the edit check is in edit_check.cpp.
//
// Every rule works on the tagged, chunked sentence of sentence.h and builds a list of candidate
// edits; apply() picks one with the caller's rng. A rule that does not recognise the sentence's
// shape contributes no candidate, so the answer is nullopt rather than a guess.
#include "nearmiss/perturb.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "nearmiss/perturb_tables.h"
#include "nearmiss/sentence.h"
#include "sieve/error.h"

namespace sieve::nearmiss {

const std::vector<std::pair<std::string, std::string>>& quantifier_flips() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"some", "no"}, {"all", "no"}, {"every", "no"}, {"something", "nothing"},
      {"everything", "nothing"}, {"somebody", "nobody"}, {"someone", "nobody"},
      {"everybody", "nobody"}, {"everyone", "nobody"}, {"always", "never"}};
  return v;
}

const std::vector<SpatialRule>& spatial_rules() {
  static const std::vector<SpatialRule> v = {
      {"left", "right", Ctx::Side},         {"right", "left", Ctx::Side},
      {"above", "below", Ctx::Any},         {"below", "above", Ctx::Any},
      {"over", "under", Ctx::Object},       {"under", "over", Ctx::Object},
      {"in front of", "behind", Ctx::Any},  {"behind", "in front of", Ctx::Object},
      {"ahead of", "behind", Ctx::Any},     {"inside", "outside", Ctx::Any},
      {"outside", "inside", Ctx::Any},      {"before", "after", Ctx::Any},
      {"after", "before", Ctx::Any},        {"on top of", "beneath", Ctx::Any},
      {"beneath", "on top of", Ctx::Object}, {"underneath", "on top of", Ctx::Object},
      {"upstairs", "downstairs", Ctx::Any}, {"downstairs", "upstairs", Ctx::Any},
      {"uphill", "downhill", Ctx::Any},     {"downhill", "uphill", Ctx::Any},
      {"upward", "downward", Ctx::Any},     {"downward", "upward", Ctx::Any},
      {"upwards", "downwards", Ctx::Any},   {"downwards", "upwards", Ctx::Any},
      {"upstream", "downstream", Ctx::Any}, {"downstream", "upstream", Ctx::Any},
      {"north", "south", Ctx::Any},         {"south", "north", Ctx::Any},
      {"east", "west", Ctx::Any},           {"west", "east", Ctx::Any},
      {"northern", "southern", Ctx::Any},   {"southern", "northern", Ctx::Any},
      {"eastern", "western", Ctx::Any},     {"western", "eastern", Ctx::Any},
      {"top", "bottom", Ctx::AfterDet},     {"bottom", "top", Ctx::AfterDet},
      {"upper", "lower", Ctx::AfterDet},    {"lower", "upper", Ctx::AfterDet},
      {"inner", "outer", Ctx::AfterDet},    {"outer", "inner", Ctx::AfterDet},
      {"interior", "exterior", Ctx::AfterDet}, {"exterior", "interior", Ctx::AfterDet},
      {"forward", "backward", Ctx::Any},    {"backward", "forward", Ctx::Any},
      {"forwards", "backwards", Ctx::Any},  {"backwards", "forwards", Ctx::Any},
      {"clockwise", "counterclockwise", Ctx::Any}, {"counterclockwise", "clockwise", Ctx::Any},
      {"into", "out of", Ctx::Object},      {"near", "far from", Ctx::Object},
      {"toward", "away from", Ctx::Object}, {"towards", "away from", Ctx::Object},
      {"away from", "toward", Ctx::Object},
  };
  return v;
}


const std::vector<std::pair<std::string, std::string>>& determiner_rules() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"every", "each"},          {"each", "every"},          {"all the", "all of the"}, {"all of the", "all the"},
      {"both the", "both of the"}, {"both of the", "both the"}, {"a lot of", "lots of"},  {"lots of", "a lot of"}};
  return v;
}

namespace {
// Both directions of each pair.
std::vector<std::pair<std::string, std::string>> both_ways(
    std::initializer_list<std::pair<const char*, const char*>> pairs) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& p : pairs) {
    v.emplace_back(p.first, p.second);
    v.emplace_back(p.second, p.first);
  }
  return v;
}
}  // namespace

const std::vector<std::pair<std::string, std::string>>& complementary_adjectives() {
  static const auto v = both_ways({{"dead", "alive"},         {"absent", "present"},     {"possible", "impossible"},
                                   {"legal", "illegal"},      {"visible", "invisible"},  {"correct", "incorrect"},
                                   {"true", "false"},         {"complete", "incomplete"}, {"asleep", "awake"},
                                   {"equal", "unequal"},      {"married", "unmarried"},  {"finite", "infinite"},
                                   {"mortal", "immortal"},    {"literate", "illiterate"}, {"legitimate", "illegitimate"},
                                   {"open", "closed"},        {"same", "different"},     {"guilty", "innocent"},
                                   {"necessary", "unnecessary"}, {"audible", "inaudible"}});
  return v;
}

const std::vector<std::pair<std::string, std::string>>& complementary_verbs() {
  static const auto v = both_ways({{"forget", "remember"}, {"fail", "succeed"}});
  return v;
}

namespace {

using Words = std::vector<std::string>;

struct KindInfo {
  Kind kind;
  const char* name;
};
const KindInfo kKinds[] = {{Kind::Negation, "negation"},         {Kind::RoleSwap, "role_swap"},
                           {Kind::BindingSwap, "binding_swap"}, {Kind::SpatialFlip, "spatial_flip"},
                           {Kind::Antonym, "antonym"},           {Kind::Synonym, "synonym"},
                           {Kind::Passive, "passive"},           {Kind::Contraction, "contraction"},
                           {Kind::Coordination, "coordination"}, {Kind::Possessive, "possessive"},
                           {Kind::AdverbMove, "adverb_move"},    {Kind::PassiveRoleSwap, "passive_role_swap"},
                           {Kind::Determiner, "determiner"},     {Kind::NegatedAntonym, "negated_antonym"}};

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

// True when replacing token `i` by `replacement` keeps a preceding a/an correct.
bool article_ok(const Sentence& s, size_t i, const std::string& replacement) {
  if (i == 0) return true;
  std::string prev = lower(s.tokens[i - 1].text);
  if (prev != "a" && prev != "an") return true;
  return article_for(replacement) == prev;
}

bool is_question(const Sentence& s) {
  const auto& t = s.tokens;
  if (t.empty()) return true;
  for (size_t i = t.size(); i-- > 0;) {
    if (t[i].text == "?") return true;
    if (t[i].tag != Tag::Punct) break;
  }
  Tag f = t[0].tag;
  return f == Tag::Wh || f == Tag::Be || f == Tag::Do || f == Tag::Modal || f == Tag::Have;
}

// Makes the first token's case follow the original sentence's (a capitalised start stays so).
void fix_initial_case(const Sentence& orig, Sentence& s) {
  if (orig.tokens.empty() || s.tokens.empty()) return;
  if (starts_upper(orig.tokens[0].text)) {
    auto& w = s.tokens[0].text;
    w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
  }
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

// The finite form of a verb: which inflection of which base it is.
enum class Form { Base, Past, Third, None };
struct VerbForm {
  std::string base;
  Form form = Form::None;
  bool past_equals_base = false;
};
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

// ---- negation ----------------------------------------------------------------------------------

bool is_negation_word(const std::string& lw) {
  return lw == "not" || lw == "n't" || lw == "never" || lw == "cannot" || lw == "no" || lw == "nothing" ||
         lw == "nobody" || lw == "none" || lw == "neither" || lw == "nor" || lw == "nowhere";
}

void negation_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  size_t negs = 0, neg_at = 0;
  for (size_t i = 0; i < t.size(); ++i)
    if (is_negation_word(lower(t[i].text))) {
      ++negs;
      neg_at = i;
    }
  if (negs > 1) return;
  if (negs == 1) {
    // Removal.
    std::string lw = lower(t[neg_at].text);
    if (neg_at == 0) return;
    Sentence r = s;
    auto& rt = r.tokens;
    if (lw == "cannot") {
      rt[neg_at].text = case_like(t[neg_at].text, "can");
      out.push_back(r);
      return;
    }
    if (lw == "nothing" || lw == "nobody") {
      rt[neg_at].text = case_like(t[neg_at].text, lw == "nothing" ? "something" : "somebody");
      out.push_back(r);
      return;
    }
    if (lw == "never") {
      if (t[neg_at - 1].tag == Tag::Punct || neg_at + 1 >= t.size()) return;
      Tag nt = t[neg_at + 1].tag;
      if (nt != Tag::Verb && nt != Tag::Be && nt != Tag::Have && nt != Tag::Adv) return;
      rt.erase(rt.begin() + neg_at);
      out.push_back(r);
      return;
    }
    if (lw != "not" && lw != "n't") return;
    const Token& prev = t[neg_at - 1];
    std::string lp = lower(prev.text);
    if (lp == "ca" || lp == "wo" || lp == "sha") {
      rt[neg_at - 1].text = case_like(prev.text, lp == "ca" ? "can" : lp == "wo" ? "will" : "shall");
      rt.erase(rt.begin() + neg_at);
      out.push_back(r);
      return;
    }
    if (prev.tag == Tag::Do) {
      if (neg_at - 1 == 0) return;  // "Don't go": imperative
      size_t v = neg_at + 1;
      while (v < t.size() && t[v].tag == Tag::Adv) ++v;
      if (v >= t.size() || t[v].tag != Tag::Verb) return;
      std::string base = lower(t[v].text);
      if (!lex.has(base, Pos::Verb) || base.find('-') != std::string::npos) return;
      std::string form = lp == "did" ? lex.verb_past(base) : lp == "does" ? lex.verb_third_person(base) : base;
      if (form.empty()) return;
      rt[v].text = case_like(t[v].text, form);
      rt[v].space_before = v == neg_at + 1 ? prev.space_before : rt[v].space_before;
      if (v != neg_at + 1) rt[neg_at + 1].space_before = prev.space_before;
      rt.erase(rt.begin() + (neg_at - 1), rt.begin() + neg_at + 1);
      out.push_back(r);
      return;
    }
    if (prev.tag == Tag::Be || prev.tag == Tag::Have || prev.tag == Tag::Modal) {
      if (lp == "'d" || lp == "'ll") return;
      rt.erase(rt.begin() + neg_at);
      out.push_back(r);
    }
    return;
  }
  // Insertion in the main clause.
  Clause c;
  if (parse_clause(s, c)) {
    size_t f = c.verb_group.b;
    Sentence r = s;
    auto& rt = r.tokens;
    const std::string lf = lower(t[f].text);
    auto insert_not_after = [&](size_t k) {
      rt.insert(rt.begin() + k + 1, make_token("not", " ", Tag::Neg));
      out.push_back(r);
    };
    auto do_support = [&](size_t v, const std::string& do_form, const std::string& base) {
      std::string space = rt[v].space_before;
      rt[v].text = base;
      rt.insert(rt.begin() + v, make_token("not", " ", Tag::Neg));
      rt.insert(rt.begin() + v, make_token(do_form, space, Tag::Do));
      out.push_back(r);
    };
    Tag g = t[f].tag;
    bool s3 = np_third_singular(s, c.subject, lex);
    if (g == Tag::Modal) {
      if (lf == "can") {
        rt[f].text = case_like(t[f].text, "cannot");
        out.push_back(r);
      } else if (lf != "'ll" && lf != "'d" && lf != "ca" && lf != "wo" && lf != "sha") {
        insert_not_after(f);
      }
    } else if (g == Tag::Be || g == Tag::Do) {
      insert_not_after(f);  // "is not", "'s not", "did not go"
    } else if (g == Tag::Have) {
      if (c.head_is_verb && c.head > f) {
        if (lf != "'ve") insert_not_after(f);
      } else if (lf == "has") {
        do_support(f, "does", "have");
      } else if (lf == "had") {
        do_support(f, "did", "have");
      } else if (lf == "have" && !s3) {
        do_support(f, "do", "have");
      }
    } else if (g == Tag::Verb && c.head_is_verb && c.head == f) {
      VerbForm vf = verb_form(t[f].text, lex);
      if (vf.form == Form::Past && !(vf.past_equals_base && !s3)) do_support(f, "did", vf.base);
      else if (vf.form == Form::Third && s3) do_support(f, "does", vf.base);
      else if (vf.form == Form::Base && !s3 && !vf.past_equals_base) do_support(f, "do", vf.base);
      else if (vf.form == Form::Base && s3 && vf.past_equals_base) do_support(f, "did", vf.base);
    }
  }
  // Quantifier flips before a noun phrase or as a pronoun.
  for (size_t i = 0; i < t.size(); ++i) {
    std::string lw = lower(t[i].text);
    for (const auto& q : quantifier_flips()) {
      if (lw != q.first) continue;
      bool pron = t[i].tag == Tag::Pron;
      bool before_nominal = i + 1 < t.size() && (t[i + 1].tag == Tag::Noun || t[i + 1].tag == Tag::Adj);
      bool adverb = lw == "always" && i + 1 < t.size() && (t[i + 1].tag == Tag::Verb || t[i + 1].tag == Tag::Be);
      if (!(pron || before_nominal || adverb)) continue;
      if (lw == "every" || lw == "some" || lw == "all") {
        // "some of", "all the": not before a determiner; "all" only before a plural noun.
        if (!before_nominal) continue;
      }
      Sentence r = s;
      r.tokens[i].text = case_like(t[i].text, q.second);
      out.push_back(r);
    }
  }
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

// ---- role swap ---------------------------------------------------------------------------------

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

// "the dog bit the man" -> "the man was bitten by the dog": a meaning-preserving rewrite of a
// simple finite transitive clause (one verb word, no auxiliary or negation, NPs that are not
// pronouns, an object that ends cleanly and is not a time or measure adverbial).
void passive_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  Clause c;
  if (!parse_clause(s, c) || !c.head_is_verb || c.verb_group.size() != 1 || c.object.empty()) return;
  const auto& t = s.tokens;
  for (Range np : {c.subject, c.object})
    for (size_t k = np.b; k < np.e; ++k)
      if (t[k].tag == Tag::Pron || t[k].tag == Tag::Poss) return;
  if (!np_boundary_after(s, c.object.e)) return;
  static const std::set<std::string> kNotTransitive = {
      "become", "seem", "remain", "appear", "look", "feel", "sound", "stay", "turn", "get", "prove", "stand",
      "grow", "go", "come", "keep", "make", "call", "name", "elect", "consider", "have", "cost", "weigh",
      "last", "take", "mean", "resemble", "lack", "fit", "suit", "equal", "contain", "hold", "become", "spend"};
  VerbForm vf = verb_form(t[c.head].text, lex);
  if (vf.form == Form::None || kNotTransitive.count(vf.base)) return;
  if (vf.form == Form::Base && vf.past_equals_base) return;  // "they put": present or past?
  const std::string head = lower(t[c.object.e - 1].text);
  if (head == "night" || head == "day" || head == "time" || head == "way" || head == "home" || head == "lot") return;
  // The object must be a clear noun phrase: a determiner, quantifier, number or possessive in
  // front, or a name ("Mahler"); bare words are too often adverbs or idioms ("poked fun").
  const Tag first = t[c.object.b].tag, last = t[c.object.e - 1].tag;
  if (last != Tag::Noun && last != Tag::Propn) return;
  if (first != Tag::Det && first != Tag::Quant && first != Tag::Num && first != Tag::Poss && first != Tag::Propn) return;
  const std::string participle = lex.verb_past_participle(vf.base);
  if (participle.empty() || !is_alpha_word(participle)) return;
  // Number of the new subject from its head noun: a plural has a base form other than itself.
  bool singular = true;
  if (last == Tag::Noun)
    for (const auto& b : lex.base_forms(head, Pos::Noun))
      if (b != head) singular = false;
  const bool past = vf.form == Form::Past;
  const std::string be = past ? (singular ? "was" : "were") : (singular ? "is" : "are");
  Sentence r;
  r.trailing = s.trailing;
  for (size_t k = c.object.b; k < c.object.e; ++k) {
    Token tok = t[k];
    if (k == c.object.b) tok.space_before = t[0].space_before;
    r.tokens.push_back(tok);
  }
  r.tokens.push_back(make_token(be, " ", Tag::Be));
  r.tokens.push_back(make_token(participle, " ", Tag::Verb));
  r.tokens.push_back(make_token("by", " ", Tag::Prep));
  for (size_t k = c.subject.b; k < c.subject.e; ++k) {
    Token tok = t[k];
    if (k == c.subject.b) tok.space_before = " ";
    if (k == 0 && tok.tag != Tag::Propn && tok.text != "I") tok.text = lower(tok.text);
    r.tokens.push_back(tok);
  }
  for (size_t k = c.object.e; k < t.size(); ++k) r.tokens.push_back(t[k]);
  out.push_back(std::move(r));
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

// ---- spatial flip ------------------------------------------------------------------------------

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

bool object_follows(const Sentence& s, size_t e) {
  if (e >= s.tokens.size()) return false;
  Tag g = s.tokens[e].tag;
  return g == Tag::Det || g == Tag::Poss || g == Tag::Num || g == Tag::Noun || g == Tag::Adj || g == Tag::Propn ||
         (g == Tag::Pron && lower(s.tokens[e].text) != "there") || g == Tag::Quant;
}

void spatial_candidates(const Sentence& s, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  static const std::set<std::string> kSideNouns = {"of", "side", "hand", "wing", "arm", "leg", "foot", "eye",
                                                   "ear", "bank", "turn", "field", "corner", "edge", "margin",
                                                   "lane", "half", "-hand", "shoulder", "knee", "wrist"};
  for (size_t i = 0; i < t.size(); ++i) {
    for (const auto& rule : spatial_rules()) {
      Words from = split_words(rule.from);
      if (i + from.size() > t.size()) continue;
      bool match = true;
      for (size_t k = 0; k < from.size(); ++k)
        if (lower(t[i + k].text) != from[k]) match = false;
      if (!match) continue;
      size_t e = i + from.size();
      std::string prev = i > 0 ? lower(t[i - 1].text) : "";
      Tag prev_tag = i > 0 ? t[i - 1].tag : Tag::Other;
      switch (rule.ctx) {
        case Ctx::Side: {
          if (prev_tag == Tag::Pron || prev_tag == Tag::Propn || prev_tag == Tag::Noun || prev_tag == Tag::Have ||
              prev_tag == Tag::Neg || prev_tag == Tag::Modal || prev_tag == Tag::Do)
            continue;
          std::string next = e < t.size() ? lower(t[e].text) : "";
          bool side = kSideNouns.count(next) > 0;
          bool bare = (prev == "the" || prev == "to" || prev == "on") && (e >= t.size() || t[e].tag == Tag::Punct);
          if (!side && !bare) continue;
          break;
        }
        case Ctx::Object:
          if (!object_follows(s, e)) continue;
          break;
        case Ctx::AfterDet:
          if (!(prev_tag == Tag::Det || prev_tag == Tag::Poss)) continue;
          break;
        case Ctx::Any:
          // "look forward to", "look back on": idioms, not directions.
          if ((from[0] == "forward" || from[0] == "backward" || from[0] == "forwards" || from[0] == "backwards") &&
              e < t.size() && lower(t[e].text) == "to")
            continue;
          break;
      }
      Sentence r = s;
      Words to = split_words(rule.to);
      std::vector<Token> repl;
      for (size_t k = 0; k < to.size(); ++k)
        repl.push_back(make_token(k == 0 ? case_like(t[i].text, to[k]) : to[k], k == 0 ? t[i].space_before : " ",
                                  Tag::Prep));
      r.tokens.erase(r.tokens.begin() + i, r.tokens.begin() + e);
      r.tokens.insert(r.tokens.begin() + i, repl.begin(), repl.end());
      out.push_back(r);
    }
  }
}

// ---- antonym / synonym -------------------------------------------------------------------------

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

// ---- contraction (a positive) ------------------------------------------------------------------

// True for a past participle ("been", "gone", "done", "come"): "he's gone" is "he has gone", so
// "'s" before one is not expanded to "is".
bool past_participle_form(const std::string& w, const Lexicon& lex) {
  if (w == "been" || w == "got" || w == "gotten") return true;
  for (const auto& b : lex.base_forms(w, Pos::Verb))
    if (lex.verb_past_participle(b) == w) return true;
  return false;
}

// The first token from `i` on that is not an adverb or a negation (n when none).
size_t skip_adverbs(const Sentence& s, size_t i) {
  while (i < s.tokens.size() && (s.tokens[i].tag == Tag::Adv || s.tokens[i].tag == Tag::Neg)) ++i;
  return i;
}

// Hosts of the pronoun + auxiliary contractions.
bool host_of(const std::string& aux, const std::string& pron) {
  static const std::set<std::string> kIs = {"it", "he", "she", "that", "there", "what"};
  static const std::set<std::string> kAre = {"you", "we", "they"};
  static const std::set<std::string> kHave = {"i", "you", "we", "they"};
  static const std::set<std::string> kWill = {"i", "you", "he", "she", "it", "we", "they"};
  if (aux == "am") return pron == "i";
  if (aux == "is") return kIs.count(pron) > 0;
  if (aux == "has") return kIs.count(pron) > 0 && pron != "what";
  if (aux == "are") return kAre.count(pron) > 0;
  if (aux == "have") return kHave.count(pron) > 0;
  if (aux == "will") return kWill.count(pron) > 0;
  return false;
}

// "is not" <-> "isn't", "cannot" <-> "can't", "will not" <-> "won't", "it is" <-> "it's", "they
// are" <-> "they're", "I am" <-> "I'm", "I have seen" <-> "I've seen", "we will go" <-> "we'll go".
// Questions are skipped by the caller; inverted auxiliaries ("isn't it", "don't you") are left
// alone, as are "'d" (had or would?) and "'s" before a participle (is or has?).
void contraction_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  static const std::set<std::string> kNotAux = {"is", "are", "was", "were", "do", "does", "did", "has",
                                                "have", "had", "could", "would", "should", "must"};
  static const std::set<std::string> kNtAux = {"is", "are", "was", "were", "do", "does", "did", "has", "have",
                                               "had", "could", "would", "should", "must", "need", "might"};
  auto lw = [&](size_t i) { return i < n ? lower(t[i].text) : std::string(); };
  // An auxiliary + negation with its subject after it ("isn't it", "don't you") is inverted.
  auto inverted = [&](size_t aux, size_t after_neg) {
    if (after_neg < n && t[after_neg].tag == Tag::Pron) return true;
    return aux == 0 && lw(aux) != "do";  // "Do not go" is an imperative; "Is not ..." is not a statement
  };
  for (size_t i = 0; i < n; ++i) {
    const std::string w = lw(i);
    // aux + not -> aux + n't
    if (i + 1 < n && lw(i + 1) == "not" && !t[i + 1].space_before.empty() && !t[i].text.empty() &&
        t[i].text[0] != '\'' &&
        (t[i].tag == Tag::Be || t[i].tag == Tag::Do || t[i].tag == Tag::Have || t[i].tag == Tag::Modal)) {
      const bool have = w == "has" || w == "have" || w == "had";
      size_t v = skip_adverbs(s, i + 2);
      bool ok = (kNotAux.count(w) || w == "can" || w == "will") && !inverted(i, i + 2) && lw(i + 2) != "only";
      // "has not a penny" is archaic; only the auxiliary have contracts.
      if (have && !(v < n && (t[v].tag == Tag::Verb || t[v].tag == Tag::Be) && past_participle_form(lw(v), lex)))
        ok = false;
      if (ok) {
        Sentence r = s;
        if (w == "can") r.tokens[i].text = case_like(t[i].text, "ca");
        if (w == "will") r.tokens[i].text = case_like(t[i].text, "wo");
        r.tokens[i + 1].text = "n't";
        r.tokens[i + 1].space_before = "";
        out.push_back(r);
      }
    }
    // cannot -> can't
    if (w == "cannot" && i > 0 && !inverted(i, i + 1)) {
      Sentence r = s;
      r.tokens[i].text = case_like(t[i].text, "ca");
      r.tokens.insert(r.tokens.begin() + i + 1, make_token("n't", "", Tag::Neg));
      out.push_back(r);
    }
    // aux + n't -> aux + not
    if (i + 1 < n && lw(i + 1) == "n't" && t[i + 1].space_before.empty() && !inverted(i, i + 2)) {
      Sentence r = s;
      if (w == "ca") {
        r.tokens[i].text = case_like(t[i].text, "cannot");
        r.tokens.erase(r.tokens.begin() + i + 1);
        out.push_back(r);
      } else if (w == "wo" || w == "sha" || kNtAux.count(w)) {
        if (w == "wo" || w == "sha") r.tokens[i].text = case_like(t[i].text, w == "wo" ? "will" : "shall");
        r.tokens[i + 1].text = "not";
        r.tokens[i + 1].space_before = " ";
        out.push_back(r);
      }
    }
    // Pronoun + auxiliary. The auxiliary needs a complement after it: "I know who he is" and
    // "where it is now" keep the full form, and so does anything after a wh-word, "than" or "as".
    if (i + 1 >= n || (t[i].tag != Tag::Pron && w != "that" && w != "what")) continue;
    const std::string prev = i > 0 ? lw(i - 1) : "";
    if (i > 0 && (t[i - 1].tag == Tag::Wh || prev == "than" || prev == "as" || prev == "so")) continue;
    // "that" and "there" only where they start a clause ("doing that is like", "standing there is"),
    // or "that" as a relative after a noun ("the book that is on the table").
    if ((w == "that" || w == "there") && i > 0 && t[i - 1].tag != Tag::Punct && t[i - 1].tag != Tag::Conj &&
        !(w == "that" && t[i - 1].tag == Tag::Noun))
      continue;
    const std::string a = lw(i + 1);
    const size_t nx = i + 2;
    if (nx >= n || lw(nx) == "n't") continue;  // "it isn't" -> "it'sn't"
    const Tag nt = t[nx].tag;
    const bool complement = nt != Tag::Punct && nt != Tag::Pron && nt != Tag::Conj && nt != Tag::Other &&
                            !(nt == Tag::Adv && (nx + 1 >= n || t[nx + 1].tag == Tag::Punct));
    if (!complement) continue;
    const size_t v = skip_adverbs(s, nx);
    const bool participle = v < n && past_participle_form(lw(v), lex);
    if (!t[i + 1].space_before.empty() && host_of(a, w)) {
      // Contract. have/has/will only as auxiliaries, and not before "not" ("I've not", "he'll not").
      std::string clitic;
      if (a == "am") clitic = "'m";
      else if (a == "is") clitic = "'s";
      else if (a == "are") clitic = "'re";
      else if ((a == "have" || a == "has") && nt != Tag::Neg && participle) clitic = a == "has" ? "'s" : "'ve";
      else if (a == "will" && (nt == Tag::Verb || nt == Tag::Be || nt == Tag::Have)) clitic = "'ll";
      if (!clitic.empty()) {
        Sentence r = s;
        r.tokens[i + 1].text = clitic;
        r.tokens[i + 1].space_before = "";
        out.push_back(r);
      }
    } else if (t[i + 1].space_before.empty()) {
      // Expand.
      std::string full;
      if (a == "'m" && host_of("am", w)) full = "am";
      else if (a == "'re" && host_of("are", w)) full = "are";
      else if (a == "'ve" && host_of("have", w)) full = "have";
      else if (a == "'ll" && host_of("will", w)) full = "will";
      else if (a == "'s" && host_of("is", w) && !participle && lw(v) != "got") full = "is";
      if (!full.empty()) {
        Sentence r = s;
        r.tokens[i + 1].text = full;
        r.tokens[i + 1].space_before = " ";
        out.push_back(r);
      }
    }
  }
}

// Token `e`, tagged Verb right after an NP, is the verb and not a noun the NP failed to take in
// ("the dog house"): it cannot be a noun, or it is a finite form followed by a determiner, a
// possessive, an adverb, a pronoun, "to", a preposition other than "of", or the end of the sentence
// ("the owner of the dog lives here").
bool verb_after_np(const Sentence& s, size_t e, const Lexicon& lex) {
  const auto& t = s.tokens;
  const std::string w = lower(t[e].text);
  const auto pos = lex.parts_of_speech(w);
  if (std::find(pos.begin(), pos.end(), Pos::Noun) == pos.end()) return true;
  const VerbForm vf = verb_form(w, lex);
  if (vf.form != Form::Past && vf.form != Form::Third) return false;
  if (e + 1 >= t.size()) return false;
  const Tag g = t[e + 1].tag;
  if (g == Tag::Punct) return t[e + 1].text == "." || t[e + 1].text == "!";
  if (g == Tag::Prep) return lower(t[e + 1].text) != "of";
  return g == Tag::Det || g == Tag::Poss || g == Tag::Adv || g == Tag::Pron || g == Tag::To || g == Tag::Quant;
}

// ---- coordination (a positive) -----------------------------------------------------------------

// Binomials whose order is fixed: reversed they sound wrong or lose their idiomatic sense.
const std::set<std::string> kFixedBinomials = {
    "bread and butter", "rock and roll", "law and order", "trial and error", "pros and cons", "ups and downs",
    "odds and ends", "arts and crafts", "life and death", "ladies and gentlemen", "fish and chips",
    "rank and file", "flesh and blood", "cats and dogs", "heart and soul", "hide and seek", "wear and tear",
    "nuts and bolts", "bits and pieces", "peace and quiet", "bed and breakfast", "salt and vinegar",
    "king and queen", "husband and wife", "father and son", "mother and daughter",
    "ham and eggs", "bacon and eggs", "cause and effect", "question and answer",
    "supply and demand", "research and development", "time and space", "space and time", "chapter and verse",
    "part and parcel", "sticks and stones", "fire and brimstone", "bells and whistles", "goods and services",
    "cup and saucer", "knife and fork", "needle and thread", "horse and carriage", "horse and buggy",
    "hammer and sickle", "milk and honey", "song and dance", "wine and dine", "name and address",
    "arms and legs", "hands and knees", "head and shoulders", "body and soul", "mind and body",
    "day and night", "night and day", "morning and evening", "beginning and end", "black and white",
    "fits and starts", "wrack and ruin", "rack and ruin", "pomp and circumstance", "room and board",
    "bump and grind", "mop and mow", "kith and kin", "rhyme and reason", "nook and cranny", "hue and cry",
    "cloak and dagger", "smoke and mirrors", "trials and tribulations", "leaps and bounds",
    "twists and turns", "ins and outs", "dribs and drabs", "stars and stripes", "skin and bones",
    "flesh and bone", "blood and guts", "bread and circuses", "sackcloth and ashes", "loaves and fishes",
    "sword and sorcery", "stick and carrot", "carrot and stick", "hearth and home", "house and home",
    "lock and key", "bow and arrow", "rod and reel", "pen and ink", "pen and paper", "pencil and paper",
    "nickel and dime", "tooth and nail", "hook and line", "sink and drain", "lord and master", "duck and cover",
    "null and void", "pro and con", "pros and cons", "work and play", "death and taxes", "shipping and handling",
    "bed and board", "board and lodging", "cut and paste", "wear and tear", "alpha and omega"};

// Words that make an NP unfit for reordering: comparatives ("more and more"), fractions ("a century
// and one half").
// Also "other" / "such" / "same", which point back at the first NP ("the lion and other animals").
const std::set<std::string> kNotCoordinated = {"more", "less", "most", "least", "much", "half", "halves",
                                               "quarter", "quarters", "third", "thirds", "percent", "lot",
                                               "other", "another", "such", "same", "similar", "rest", "former",
                                               "latter", "respective", "else"};
// Bare singular nouns that are adverbials or parts of idioms ("at home and cocoon", "at work").
const std::set<std::string> kAdverbialBare = {"home", "school", "work", "church", "bed", "town", "sea", "court",
                                              "college", "hospital", "prison", "jail", "class", "lunch", "dinner",
                                              "breakfast", "night", "day", "time", "hand", "foot", "heart",
                                              "order", "place", "way", "part", "course", "fact", "case", "hand"};

// "salt and pepper" -> "pepper and salt", "a red car and a blue house" -> "a blue house and a red
// car": two simple NPs around "and", both determined or both bare nouns, without pronouns, names or
// possessives, not inside a longer list, after "between" or "of", nor followed by a modifier that
// could attach to the second NP only (a prepositional phrase, a relative clause).
void coordination_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  for (const auto& tok : t)
    if (lower(tok.text) == "respectively") return;
  auto simple_np = [&](Range r, bool& determined) {
    if (r.empty() || r.size() > 5) return false;
    const Tag f = t[r.b].tag;
    determined = f == Tag::Det || f == Tag::Quant || f == Tag::Poss || f == Tag::Num;
    bool adjectives = false;
    for (size_t k = r.b; k < r.e; ++k) {
      const Tag g = t[k].tag;
      if (g == Tag::Pron || g == Tag::Propn || g == Tag::PossS || g == Tag::Other) return false;
      if (k > r.b && starts_upper(t[k].text)) return false;
      if (g == Tag::Adj || g == Tag::Adv) adjectives = true;
      if ((g == Tag::Noun || g == Tag::Adj) && !is_alpha_word(t[k].text)) return false;
    }
    if (t[r.e - 1].tag != Tag::Noun) return false;
    for (size_t k = r.b; k < r.e; ++k)
      if (kNotCoordinated.count(lower(t[k].text))) return false;
    // A bare NP is one noun: in "old men and women" or "traffic noise and smog" the modifier may
    // scope over both, and a bare two-word "NP" is often a misread verb ("grate carrots and onions").
    return determined || (r.size() == 1 && !adjectives && !kAdverbialBare.count(lower(t[r.b].text)));
  };
  for (size_t i = 1; i + 1 < n; ++i) {
    if (lower(t[i].text) != "and") continue;
    size_t b1 = i;
    for (size_t b = 0; b < i; ++b)
      if (np_end(s, b) == i) {
        b1 = b;
        break;
      }
    if (b1 == i) continue;
    if (lower(t[b1].text) == "both") ++b1;  // "both salt and pepper": "both" stays in front
    const size_t b2 = i + 1, e2 = np_end(s, b2);
    if (e2 <= b2 || b1 >= i) continue;
    const Range x{b1, i}, y{b2, e2};
    bool det1 = false, det2 = false;
    if (!simple_np(x, det1) || !simple_np(y, det2) || det1 != det2) continue;
    if (span_text(s, x) == span_text(s, y)) continue;
    // "the mare and all her mates" -> "all her mates and the mare": "her" would come before the noun
    // it may refer to.
    bool poss1 = false, poss2 = false;
    for (size_t k = x.b; k < x.e; ++k) poss1 = poss1 || t[k].tag == Tag::Poss;
    for (size_t k = y.b; k < y.e; ++k) poss2 = poss2 || t[k].tag == Tag::Poss;
    if (poss2 && !poss1) continue;
    // What comes before the first NP: not a list ("apples, pears and plums"), not "between X and
    // Y", not "the owner of X and Y" (X alone or X and Y?).
    if (b1 > 0) {
      const std::string p = lower(t[b1 - 1].text);
      const Tag pt = t[b1 - 1].tag;
      if (p == "," || p == "between" || p == "of" || p == "among" || p == "and" || p == "or" || p == "nor" ||
          p == "from" || p == "either" || p == "neither")
        continue;
      if (pt == Tag::Adj || pt == Tag::Noun || pt == Tag::Propn || pt == Tag::PossS || pt == Tag::Num ||
          pt == Tag::Det || pt == Tag::Other || pt == Tag::Adv)
        continue;
    }
    // What comes after the second NP: the end, a sentence punctuation mark, a subordinating
    // conjunction, or (when "X and Y" is the subject) the verb.
    bool ok = false;
    if (e2 >= n) {
      ok = true;
    } else {
      const std::string nx = lower(t[e2].text);
      const Tag nt = t[e2].tag;
      if (nt == Tag::Punct) {
        ok = !(nx == "," && e2 + 1 < n && (t[e2 + 1].tag == Tag::Wh || lower(t[e2 + 1].text) == "that"));
        if (nx == "'" || nx == "\"" || nx == "(" || nx == "-" || nx == "--") ok = false;
      } else if (nt == Tag::Conj) {
        ok = nx != "and" && nx != "or" && nx != "nor" && nx != "that";
      } else if (b1 == 0 && (nt == Tag::Be || nt == Tag::Have || nt == Tag::Modal || nt == Tag::Do)) {
        ok = true;
      } else if (b1 == 0 && nt == Tag::Verb) {
        ok = verb_after_np(s, e2, lex);
      }
    }
    if (!ok) continue;
    std::string both = lower(span_text(s, Range{det1 ? x.b + 1 : x.b, x.e})) + "and " +
                       lower(span_text(s, Range{det2 ? y.b + 1 : y.b, y.e}));
    both.pop_back();
    if (kFixedBinomials.count(both)) continue;
    out.push_back(swap_spans(s, x, y));
  }
}

// ---- possessive (a positive) -------------------------------------------------------------------

// Heads X of "the X of the Y" that do not alternate with "the Y's X": partitives, measures and
// containers ("the rest of the team"), parts and places ("the middle of the road", "the city of
// ..."), and nouns whose "of" phrase is their object ("the fear of the dark" is not "the dark's
// fear", "the picture of the dog" is not "the dog's picture").
const std::set<std::string> kNoPossessive = {
    "rest", "most", "half", "part", "parts", "piece", "pieces", "bit", "bits", "lot", "lots", "number", "numbers",
    "amount", "amounts", "quantity", "majority", "minority", "bulk", "remainder", "portion", "share", "percent",
    "percentage", "fraction", "kind", "kinds", "sort", "sorts", "type", "types", "variety", "form", "forms",
    "cup", "cups", "glass", "glasses", "bottle", "bottles", "box", "boxes", "bag", "bags", "bowl", "bowls",
    "plate", "plates", "slice", "slices", "loaf", "bunch", "pair", "pairs", "couple", "set", "sets", "series",
    "group", "groups", "herd", "flock", "pack", "crowd", "row", "rows", "line", "lines", "stack", "pile", "dozen",
    "hundred", "thousand", "million", "one", "ones", "top", "bottom", "side", "sides", "front", "back", "middle",
    "center", "centre", "inside", "outside", "rear", "head", "foot", "tip", "course", "sake", "case", "use",
    "lack", "way", "time", "times", "day", "days", "year", "years", "period", "age", "city", "town", "state",
    "kingdom", "island", "river", "lake", "sea", "land", "country", "fear", "love", "hatred", "hate", "dread",
    "knowledge", "study", "studies", "analysis", "treatment", "understanding", "awareness", "perception",
    "view", "views", "sight", "picture", "pictures", "image", "images", "photo", "photos", "photograph",
    "painting", "paintings", "drawing", "drawings", "portrait", "map", "model", "copy", "copies", "story",
    "stories", "history", "account", "description", "definition", "theory", "idea", "concept", "notion",
    "thought", "thoughts", "prospect", "threat", "question", "problem", "subject", "topic", "discussion",
    "review", "report", "memory", "memories", "desire", "need", "hope", "search", "pursuit", "investigation",
    "examination", "control", "care", "sense", "act", "process", "result", "cause",
    "word", "words", "art", "science", "language", "music", "sound", "smell", "mention", "absence",
    "presence", "loss", "fact", "matter", "point", "spirit", "letter", "order", "member", "issue", "theme",
    "principle", "practice", "virtue", "vice", "sin", "phrase", "expression", "category", "class", "square",
    "cube", "root", "sum", "product", "inverse", "reciprocal", "logarithm", "derivative", "integral", "plural",
    "singular", "title", "term", "figure", "symbol", "version", "edition", "volume", "chapter", "page"};

// "the X of the Y" and "the Y's X" read differently when X is an action, event or attitude and Y
// can act: "the discovery of the murderer" (Y found) is not "the murderer's discovery" (Y found
// something, or was found?), "the doctor's appointment" is not "the appointment of the doctor". Also
// a WordNet compound "Y's X" ("potter's wheel") is a kind of thing, not an X belonging to a Y.
bool possessive_ambiguous(const std::string& xhead, const std::string& yhead, const Lexicon& lex) {
  auto base = [&](const std::string& w) {
    const auto b = lex.base_forms(w, Pos::Noun);
    return b.empty() ? w : b.front();
  };
  const std::string xb = base(xhead), yb = base(yhead);
  if (lex.has(yb + "'s " + xb, Pos::Noun) || lex.has(yhead + "'s " + xhead, Pos::Noun)) return true;
  bool agent = false;
  for (int f : lex.lex_files(yb, Pos::Noun, 2))
    if (f == 5 || f == 14 || f == 18) agent = true;  // noun.animal, noun.group, noun.person
  if (!agent) return false;
  for (const char* suf : {"tion", "sion", "ment", "ance", "ence", "ure", "ery", "ism", "ing"})
    if (ends_with(xb, suf)) return true;
  for (int f : lex.lex_files(xb, Pos::Noun, 1))  // act, cognition, communication, event, feeling, process
    if (f == 4 || f == 9 || f == 10 || f == 11 || f == 12 || f == 22) return true;
  return false;
}

// Time words that follow a predicate ("the water's cold today") rather than head an NP.
const std::set<std::string> kTimeNouns = {"today", "tonight", "yesterday", "tomorrow", "now", "morning",
                                          "evening", "afternoon", "night", "week", "year", "day", "time"};

// True for the -ing form of a verb ("barking", "building"), not for "king" or "ceiling".
bool ing_form(const std::string& w, const Lexicon& lex) {
  if (!ends_with(w, "ing")) return false;
  for (const auto& b : lex.base_forms(w, Pos::Verb))
    if (b != w) return true;
  return false;
}

// Tokens [b, e) are Adj* Noun+ in lower case (an NP without its determiner), at most `max` long,
// without -ing forms (gerunds and participles).
bool bare_nominal(const Sentence& s, size_t b, size_t e, size_t max, const Lexicon& lex) {
  const auto& t = s.tokens;
  if (e <= b || e - b > max || e > t.size()) return false;
  size_t k = b;
  while (k < e && t[k].tag == Tag::Adj) ++k;
  if (k == e) return false;
  for (; k < e; ++k)
    if (t[k].tag != Tag::Noun) return false;
  for (size_t j = b; j < e; ++j)
    if (!is_alpha_word(t[j].text) || starts_upper(t[j].text) || ing_form(lower(t[j].text), lex)) return false;
  return true;
}

// What may follow a moved "the X of the Y" / "the Y's X": the end, a punctuation mark (not a
// comma before a relative clause), a subordinating conjunction, an auxiliary, or a finite verb that
// cannot be a noun. A prepositional phrase or relative clause could belong to Y alone.
bool possessive_boundary(const Sentence& s, size_t e, const Lexicon& lex) {
  const auto& t = s.tokens;
  if (e >= t.size()) return true;
  const std::string w = lower(t[e].text);
  switch (t[e].tag) {
    case Tag::Punct:
      if (w != "." && w != "," && w != ";" && w != ":" && w != "!" && w != "?" && w != ")") return false;
      return !(w == "," && e + 1 < t.size() && (t[e + 1].tag == Tag::Wh || lower(t[e + 1].text) == "that"));
    case Tag::Conj: return w != "and" && w != "or" && w != "nor" && w != "that";
    case Tag::Be: case Tag::Have:  // finite forms only: "the results of the thing being simulated"
      return w != "be" && w != "being" && w != "been" && w != "having";
    case Tag::Modal: case Tag::Do: return true;
    case Tag::Verb: return verb_after_np(s, e, lex);
    default: return false;
  }
}

// Number of a noun for the possessive marker: 1 singular (or an irregular plural: "the children's"),
// 2 a plural in -s ("the dogs'"), 0 unknown or both ("glasses").
int possessive_number(const std::string& head, const Lexicon& lex) {
  const auto bases = lex.base_forms(head, Pos::Noun);
  if (bases.empty()) return 0;
  bool other = false;
  for (const auto& b : bases)
    if (b != head) other = true;
  if (!ends_with(head, "s")) return 1;
  if (!other) return 0;  // a singular in -s ("boss", "physics"): "'s" or "'"? leave it
  return lex.has(head, Pos::Noun) ? 0 : 2;
}

// "the owner of the dog" <-> "the dog's owner" ("the owners of the dogs" <-> "the dogs' owners").
void possessive_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  auto is_the = [&](size_t k) { return k < n && lower(t[k].text) == "the"; };
  auto retext = [](Token tok, const std::string& space) {
    tok.space_before = space;
    return tok;
  };
  // of-phrase -> possessive
  for (size_t i = 2; i + 2 < n; ++i) {
    if (lower(t[i].text) != "of" || !is_the(i + 1)) continue;
    size_t x0 = i;
    for (size_t b = i >= 6 ? i - 6 : 0; b + 1 < i; ++b)
      if (is_the(b) && bare_nominal(s, b + 1, i, 4, lex)) {
        x0 = b;
        break;
      }
    if (x0 == i) continue;
    if (x0 > 0 && (t[x0 - 1].tag == Tag::Adj || t[x0 - 1].tag == Tag::Noun || t[x0 - 1].tag == Tag::PossS)) continue;
    const size_t b2 = i + 2, e2 = np_end(s, i + 1);
    if (!bare_nominal(s, b2, e2, 3, lex) || !possessive_boundary(s, e2, lex)) continue;
    const std::string xhead = lower(t[i - 1].text), yhead = lower(t[e2 - 1].text);
    if (kNoPossessive.count(xhead) || kTimeNouns.count(xhead) || possessive_ambiguous(xhead, yhead, lex)) continue;
    if (!lex.has(xhead, Pos::Noun) && lex.base_forms(xhead, Pos::Noun).empty()) continue;
    const int num = possessive_number(yhead, lex);
    if (num == 0) continue;
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k <= x0; ++k) r.tokens.push_back(t[k]);  // ... "the"
    for (size_t k = b2; k < e2; ++k) r.tokens.push_back(retext(t[k], " "));
    r.tokens.push_back(make_token(num == 2 ? "'" : "'s", "", num == 2 ? Tag::Punct : Tag::PossS));
    for (size_t k = x0 + 1; k < i; ++k) r.tokens.push_back(retext(t[k], " "));
    for (size_t k = e2; k < n; ++k) r.tokens.push_back(t[k]);
    out.push_back(std::move(r));
  }
  // possessive -> of-phrase
  for (size_t j = 2; j + 1 < n; ++j) {
    const bool s_marker = t[j].text == "'s" && t[j].tag == Tag::PossS;
    const bool bare_marker = t[j].text == "'" && t[j].space_before.empty() && ends_with(lower(t[j - 1].text), "s") &&
                             t[j + 1].space_before == " ";
    if (!s_marker && !bare_marker) continue;
    size_t k = j;
    while (k > 0 && t[k - 1].tag == Tag::Noun) --k;
    if (k == j) continue;
    while (k > 0 && t[k - 1].tag == Tag::Adj) --k;
    if (k == 0 || !is_the(k - 1)) continue;
    const size_t y0 = k - 1;
    if (!bare_nominal(s, y0 + 1, j, 3, lex)) continue;
    if (y0 > 0 && (t[y0 - 1].tag == Tag::Adj || t[y0 - 1].tag == Tag::Noun || t[y0 - 1].tag == Tag::PossS ||
                   t[y0 - 1].tag == Tag::Det || lower(t[y0 - 1].text) == "of"))
      continue;
    const std::string yhead = lower(t[j - 1].text);
    const int num = possessive_number(yhead, lex);
    if (num == 0 || (num == 2) != bare_marker) continue;
    size_t e = j + 1;
    while (e < n && t[e].tag == Tag::Adj) ++e;
    while (e < n && t[e].tag == Tag::Noun) ++e;
    if (!bare_nominal(s, j + 1, e, 4, lex) || !possessive_boundary(s, e, lex)) continue;
    const std::string xhead = lower(t[e - 1].text);
    if (kNoPossessive.count(xhead) || kTimeNouns.count(xhead) || possessive_ambiguous(xhead, yhead, lex)) continue;
    // "the water's cold": an adjective right after 's may be a predicate ("is cold").
    if (t[j + 1].tag == Tag::Adj && s_marker && e == j + 2) continue;
    Sentence r;
    r.trailing = s.trailing;
    for (size_t m = 0; m <= y0; ++m) r.tokens.push_back(t[m]);  // ... "the"
    for (size_t m = j + 1; m < e; ++m) r.tokens.push_back(retext(t[m], " "));
    r.tokens.push_back(make_token("of", " ", Tag::Prep));
    r.tokens.push_back(make_token("the", " ", Tag::Det));
    for (size_t m = y0 + 1; m < j; ++m) r.tokens.push_back(retext(t[m], " "));
    for (size_t m = e; m < n; ++m) r.tokens.push_back(t[m]);
    out.push_back(std::move(r));
  }
}

// ---- adverb move (a positive) ------------------------------------------------------------------

// Manner adverbs that mean the same before the verb and after its object. Subject-oriented ones
// ("wisely", "foolishly"), sentence adverbs ("clearly", "naturally"), frequency and degree words
// ("usually", "hardly") change meaning or sound wrong when moved, so the list is closed.
const std::set<std::string> kMannerAdverbs = {
    "quickly", "slowly", "carefully", "gently", "quietly", "loudly", "softly", "firmly", "tightly", "loosely",
    "neatly", "smoothly", "swiftly", "rapidly", "hastily", "hurriedly", "calmly", "patiently", "eagerly",
    "angrily", "nervously", "anxiously", "politely", "rudely", "warmly", "coldly", "silently", "noisily",
    "cautiously", "thoroughly", "briskly", "steadily", "skillfully", "skilfully", "awkwardly", "clumsily",
    "gracefully", "violently", "fiercely", "tenderly", "cheerfully", "proudly", "confidently", "sharply",
    "heavily", "lightly", "abruptly", "suddenly", "immediately", "promptly", "instantly", "repeatedly",
    "correctly", "properly", "accurately", "precisely", "efficiently", "effectively", "successfully",
    "systematically", "vigorously", "energetically", "enthusiastically", "happily", "reluctantly",
    "willingly", "easily", "furiously", "frantically", "casually", "deliberately", "gradually", "methodically",
    "meticulously"};

// "she quickly opened the door" <-> "she opened the door quickly": subject + (adverb) finite verb
// + object NP that ends the sentence (before final punctuation).
void adverb_move_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  Clause c;
  if (!parse_clause(s, c) || !c.head_is_verb || c.object.empty()) return;
  const auto& t = s.tokens;
  const size_t n = t.size();
  auto final_punct = [&](size_t k) {
    for (; k < n; ++k) {
      const std::string w = t[k].text;
      if (w != "." && w != "!") return false;
    }
    return true;
  };
  const size_t vg = c.verb_group.b;
  if (verb_form(t[c.head].text, lex).form == Form::None) return;  // a finite verb: a clause, not a fragment
  const std::string oh = lower(t[c.object.e - 1].text);
  if (t[c.object.e - 1].tag != Tag::Noun && t[c.object.e - 1].tag != Tag::Propn && t[c.object.e - 1].tag != Tag::Pron)
    return;
  if (oh == "there" || oh == "one" || oh == "it") return;  // "took it lightly": idioms
  // A determined object or a personal pronoun: a bare word after the verb is too often a misread
  // ("These fine china cups damage easily").
  const Tag of = t[c.object.b].tag;
  if (of != Tag::Det && of != Tag::Poss && of != Tag::Quant && of != Tag::Num && of != Tag::Pron) return;
  // Before the verb -> after the object.
  if (c.verb_group.size() == 2 && c.head == vg + 1 && t[vg].tag == Tag::Adv &&
      kMannerAdverbs.count(lower(t[vg].text)) && final_punct(c.object.e)) {
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k < n; ++k) {
      if (k == vg) continue;
      Token tok = t[k];
      if (k == vg + 1) tok.space_before = t[vg].space_before;
      r.tokens.push_back(tok);
      if (k + 1 == c.object.e) {
        Token adv = t[vg];
        adv.space_before = " ";
        r.tokens.push_back(adv);
      }
    }
    out.push_back(std::move(r));
  }
  // After the object -> before the verb.
  if (c.verb_group.size() == 1 && c.head == vg && c.object.e < n && t[c.object.e].tag == Tag::Adv &&
      kMannerAdverbs.count(lower(t[c.object.e].text)) && final_punct(c.object.e + 1)) {
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k < n; ++k) {
      if (k == c.object.e) continue;
      if (k == vg) {
        Token adv = t[c.object.e];
        adv.space_before = t[vg].space_before;
        r.tokens.push_back(adv);
        Token v = t[vg];
        v.space_before = " ";
        r.tokens.push_back(v);
        continue;
      }
      r.tokens.push_back(t[k]);
    }
    out.push_back(std::move(r));
  }
}

// ---- determiner -------------------------------------------------------------------------------

void determiner_candidates(const Sentence& s, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  // "each other", "every so often", "every now and then", "each of": idioms or pronouns.
  static const std::set<std::string> kNotAfterEach = {"other", "so", "now", "once", "of", "and", "or"};
  for (size_t i = 0; i < t.size(); ++i) {
    for (const auto& [from_text, to_text] : determiner_rules()) {
      Words from = split_words(from_text);
      const size_t e = i + from.size();
      if (e >= t.size()) continue;  // a noun phrase must follow
      bool match = true;
      for (size_t k = 0; k < from.size(); ++k)
        if (lower(t[i + k].text) != from[k]) match = false;
      if (!match) continue;
      const Tag next = t[e].tag;
      if (from_text == "every" || from_text == "each") {
        if (!(next == Tag::Noun || next == Tag::Adj) || kNotAfterEach.count(lower(t[e].text))) continue;
        if (i > 0 && (t[i - 1].tag == Tag::Det || t[i - 1].tag == Tag::Poss)) continue;  // "his every move"
      } else if (!(next == Tag::Noun || next == Tag::Adj || next == Tag::Num || next == Tag::Det ||
                   next == Tag::Poss || next == Tag::Quant)) {
        continue;
      }
      // Not a longer determiner or an idiom: "all the more", "all the same", "all the way".
      const std::string after = lower(t[e].text);
      if (after == "more" || after == "same" || after == "way") continue;
      Sentence r = s;
      Words to = split_words(to_text);
      std::vector<Token> repl;
      for (size_t k = 0; k < to.size(); ++k)
        repl.push_back(make_token(k == 0 ? case_like(t[i].text, to[k]) : to[k], k == 0 ? t[i].space_before : " ",
                                  k == 0 ? t[i].tag : (to[k] == "of" ? Tag::Prep : Tag::Det)));
      r.tokens.erase(r.tokens.begin() + static_cast<std::ptrdiff_t>(i), r.tokens.begin() + static_cast<std::ptrdiff_t>(e));
      r.tokens.insert(r.tokens.begin() + static_cast<std::ptrdiff_t>(i), repl.begin(), repl.end());
      out.push_back(r);
    }
  }
}

// ---- negated antonym ---------------------------------------------------------------------------

// The complementary antonym of `w` (a base form) from `pairs`, when WordNet agrees; else "".
std::string complement_of(const std::string& w, Pos p, const std::vector<std::pair<std::string, std::string>>& pairs,
                          const Lexicon& lex) {
  for (const auto& [x, y] : pairs) {
    if (x != w) continue;
    for (const auto& a : lex.antonyms(x, p))
      if (lower(a) == y) return y;
  }
  return "";
}

bool clause_ends(const Sentence& s, size_t e) {
  return e >= s.tokens.size() || s.tokens[e].tag == Tag::Punct || s.tokens[e].tag == Tag::Conj;
}

void negated_antonym_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    const std::string neg = lower(t[i].text);
    if (t[i].tag != Tag::Neg || (neg != "not" && neg != "n't")) continue;
    const Tag aux = t[i - 1].tag;
    const std::string word = lower(t[i + 1].text);
    Sentence r = s;
    if (aux == Tag::Be) {
      // "is not dead" -> "is alive": a predicative adjective that ends its clause.
      if (t[i + 1].tag != Tag::Adj || !clause_ends(s, i + 2)) continue;
      const std::string y = complement_of(word, Pos::Adj, complementary_adjectives(), lex);
      if (y.empty()) continue;
      r.tokens[i + 1].text = case_like(t[i + 1].text, y);
      r.tokens.erase(r.tokens.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (aux == Tag::Do || (aux == Tag::Modal && neg == "not")) {
      // "did not forget" -> "remembered", "will not forget" -> "will remember".
      if (!lex.has(word, Pos::Verb)) continue;
      const std::string y = complement_of(word, Pos::Verb, complementary_verbs(), lex);
      if (y.empty()) continue;
      // "fail" / "succeed" take different objects ("fail the test", "succeed in"): only where
      // the clause ends, or "succeed in" -> "fail in".
      if ((word == "fail" || word == "succeed") && !clause_ends(s, i + 2) &&
          !(word == "succeed" && lower(t[i + 2].text) == "in"))
        continue;
      std::string form = y;
      const std::string d = lower(t[i - 1].text);
      if (aux == Tag::Do) form = d == "did" ? lex.verb_past(y) : d == "does" ? lex.verb_third_person(y) : y;
      if (form.empty()) continue;
      r.tokens[i + 1].text = form;
      if (aux == Tag::Do) {
        r.tokens[i + 1].space_before = t[i - 1].space_before;
        r.tokens[i + 1].text = case_like(t[i - 1].text, form);
        r.tokens.erase(r.tokens.begin() + static_cast<std::ptrdiff_t>(i - 1), r.tokens.begin() + static_cast<std::ptrdiff_t>(i + 1));
      } else {
        r.tokens.erase(r.tokens.begin() + static_cast<std::ptrdiff_t>(i));
      }
    } else {
      continue;
    }
    out.push_back(r);
  }
}

// ---- input guards ------------------------------------------------------------------------------

bool acceptable_input(const std::string& text, const Sentence& s, const PerturbOptions& o) {
  if (text.empty() || text.find('\n') != std::string::npos) return false;
  size_t non_ascii = 0;
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) ++non_ascii;
  if (static_cast<double>(non_ascii) > o.max_non_ascii_ratio * static_cast<double>(text.size())) return false;
  static const char* const kMarkup[] = {"<", ">", "{", "}", "://", "&amp;", "&lt;", "&gt;", "|", "\\", "[[", "]]"};
  for (const char* m : kMarkup)
    if (text.find(m) != std::string::npos) return false;
  size_t words = 0;
  for (const auto& t : s.tokens)
    if (t.tag != Tag::Punct) ++words;
  if (words == 0 || words > o.max_words) return false;
  size_t alpha = 0;
  for (const auto& t : s.tokens)
    if (is_alpha_word(t.text)) ++alpha;
  return alpha * 2 >= words;
}

}  // namespace

const char* kind_name(Kind k) {
  for (const auto& info : kKinds)
    if (info.kind == k) return info.name;
  SIEVE_ASSERT_MSG(false, "unknown near-miss kind " << static_cast<int>(k));
  return "";
}

Kind kind_from_name(const std::string& name) {
  std::string valid;
  for (const auto& info : kKinds) {
    if (name == info.name) return info.kind;
    valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  }
  SIEVE_THROW("unknown near-miss kind '" << name << "'; valid kinds: " << valid);
}

Perturber::Perturber(const Lexicon& lex, PerturbOptions opts) : lex_(lex), opts_(opts) {}

std::optional<std::string> Perturber::apply(const std::string& sentence, Kind k, std::mt19937_64& rng) const {
  if (k == Kind::PassiveRoleSwap) {
    // The passive of a subject-object role swap; kept only when the source's subject still leads
    // (check_edit), so that it reads as a paraphrase of the source while it means the reverse.
    auto swapped = apply(sentence, Kind::RoleSwap, rng);
    if (!swapped) return std::nullopt;
    auto out = apply(*swapped, Kind::Passive, rng);
    if (!out || !check_edit(sentence, *out, Kind::PassiveRoleSwap, lex_).intended) return std::nullopt;
    return out;
  }
  if (sentence.size() > 20 * opts_.max_words + 200) return std::nullopt;
  Sentence s = tokenize(sentence);
  tag_sentence(s, lex_);
  if (!acceptable_input(sentence, s, opts_)) return std::nullopt;
  std::vector<Sentence> cands;
  switch (k) {
    case Kind::Negation:
      if (!is_question(s)) negation_candidates(s, lex_, cands);
      break;
    case Kind::RoleSwap:
      if (!is_question(s)) {
        role_swap_candidates(s, lex_, cands);
        of_swap_candidates(s, lex_, cands);
      }
      break;
    case Kind::BindingSwap: binding_swap_candidates(s, lex_, cands); break;
    case Kind::SpatialFlip: spatial_candidates(s, cands); break;
    case Kind::Antonym: lexical_candidates(s, lex_, true, cands); break;
    case Kind::Synonym: lexical_candidates(s, lex_, false, cands); break;
    case Kind::Passive:
      if (!is_question(s)) passive_candidates(s, lex_, cands);
      break;
    case Kind::Contraction:
      if (!is_question(s)) contraction_candidates(s, lex_, cands);
      break;
    case Kind::Coordination: coordination_candidates(s, lex_, cands); break;
    case Kind::Possessive: possessive_candidates(s, lex_, cands); break;
    case Kind::AdverbMove:
      if (!is_question(s)) adverb_move_candidates(s, lex_, cands);
      break;
    case Kind::Determiner: determiner_candidates(s, cands); break;
    case Kind::NegatedAntonym:
      if (!is_question(s)) negated_antonym_candidates(s, lex_, cands);
      break;
    case Kind::PassiveRoleSwap: break;  // composed of two kinds above
  }
  const std::string source = lower(sentence);
  while (!cands.empty()) {
    size_t pick = std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng);
    Sentence r = std::move(cands[pick]);
    cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(pick));
    fix_initial_case(s, r);
    std::string text = detokenize(r);
    if (lower(text) != source) return text;
  }
  return std::nullopt;
}

}  // namespace sieve::nearmiss
