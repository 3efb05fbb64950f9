// Meaning-preserving rewrites in place: passive, contraction, determiner, negated antonym.
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nearmiss/perturb_rules.h"
#include "nearmiss/perturb_tables.h"

namespace sieve::nearmiss::rules {

// ---- passive (a positive) ----------------------------------------------------------------------

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

// ---- contraction (a positive) ------------------------------------------------------------------

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace sieve::nearmiss::rules
