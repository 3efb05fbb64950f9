// The token-level edit check of perturb.h: how a perturbation differs from its source, and
// whether that is the edit its kind intends.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "nearmiss/perturb.h"
#include "nearmiss/perturb_tables.h"
#include "nearmiss/sentence.h"

namespace sieve::nearmiss {
namespace {

using Words = std::vector<std::string>;

// ---- check_edit helpers ------------------------------------------------------------------------

Words diff_words(const std::string& text) {
  Sentence s = tokenize(text);
  Words w;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    std::string x = lower(s.tokens[i].text);
    bool before_nt = i + 1 < s.tokens.size() && lower(s.tokens[i + 1].text) == "n't";
    if (x == "cannot") {
      w.push_back("can");
      w.push_back("not");
      continue;
    }
    if (before_nt && x == "ca") x = "can";
    if (before_nt && x == "wo") x = "will";
    if (before_nt && x == "sha") x = "shall";
    w.push_back(x);
  }
  return w;
}

bool is_neg_token(const std::string& w) { return w == "not" || w == "n't" || w == "never"; }
bool is_do(const std::string& w) { return w == "do" || w == "does" || w == "did"; }

// `longer` = do + neg + X + base, `shorter` = X + inflected, with the do-form's tense on `inflected`.
bool do_support_pair(const Words& longer, const Words& shorter, const Lexicon& lex) {
  if (longer.size() < 3 || longer.size() != shorter.size() + 2) return false;
  if (!is_do(longer[0]) || (longer[1] != "not" && longer[1] != "n't")) return false;
  for (size_t k = 2; k + 1 < longer.size(); ++k)
    if (longer[k] != shorter[k - 2]) return false;
  const std::string& base = longer.back();
  const std::string& inflected = shorter.back();
  const std::string& d = longer[0];
  std::string expected = d == "did" ? lex.verb_past(base) : d == "does" ? lex.verb_third_person(base) : base;
  if (base == "have") expected = d == "did" ? "had" : d == "does" ? "has" : "have";
  return !expected.empty() && expected == inflected;
}

bool agreement_pair(const std::string& a, const std::string& b, const Lexicon& lex) {
  static const std::set<std::pair<std::string, std::string>> kAux = {
      {"is", "are"}, {"are", "is"}, {"was", "were"}, {"were", "was"},
      {"has", "have"}, {"have", "has"}, {"does", "do"}, {"do", "does"}};
  if (kAux.count({a, b})) return true;
  for (const auto& ba : lex.base_forms(a, Pos::Verb))
    for (const auto& bb : lex.base_forms(b, Pos::Verb))
      if (ba == bb) return (a == lex.verb_third_person(ba) && b == ba) || (b == lex.verb_third_person(ba) && a == ba);
  return false;
}

// Is b-mid the a-mid with a prefix and a suffix span exchanged (X M Y -> Y M X)?
bool is_swap(const Words& a, const Words& b, const Lexicon& lex) {
  const size_t n = a.size();
  if (n != b.size() || n < 2) return false;
  for (size_t lx = 1; lx < n; ++lx)
    for (size_t ly = 1; lx + ly <= n; ++ly) {
      if (!std::equal(a.begin(), a.begin() + lx, b.end() - lx)) continue;
      if (!std::equal(a.end() - ly, a.end(), b.begin())) continue;
      size_t diffs = 0, at = 0;
      for (size_t k = 0; k + lx + ly < n; ++k)
        if (a[lx + k] != b[ly + k]) {
          ++diffs;
          at = k;
        }
      if (diffs == 0) return true;
      if (diffs == 1 && agreement_pair(a[lx + at], b[ly + at], lex)) return true;
    }
  return false;
}

std::string join(const Words& w) {
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i ? " " : "") + w[i];
  return s;
}

bool lexical_relation(const std::string& from, const std::string& to, bool antonym, const Lexicon& lex) {
  for (Pos p : lex.parts_of_speech(from)) {
    std::vector<std::string> to_bases = lex.base_forms(to, p);
    if (to_bases.empty()) continue;
    for (const auto& b : lex.base_forms(from, p)) {
      auto rel = antonym ? lex.antonyms(b, p, true) : lex.synonyms(b, p, SIZE_MAX);
      for (const auto& r : rel)
        for (const auto& tb : to_bases)
          if (lower(r) == tb) return true;
    }
  }
  return false;
}


// Is `x` -> `y` (either way round) a contraction or expansion of an auxiliary after `host`, the
// word before it? ("not" <-> "n't" after "is"; "is" <-> "'s" after "it"; "am" <-> "'m" after "i").
bool contraction_pair(const std::string& x, const std::string& y, const std::string& host) {
  static const std::set<std::string> kNotHosts = {"is", "are", "was", "were", "do", "does", "did", "has", "have",
                                                  "had", "can", "will", "shall", "could", "would", "should",
                                                  "must", "need", "might"};
  static const std::set<std::string> kSHosts = {"it", "he", "she", "that", "there", "what", "here", "who"};
  static const std::set<std::string> kReHosts = {"you", "we", "they", "who", "what"};
  static const std::set<std::string> kVeHosts = {"i", "you", "we", "they", "who"};
  static const std::set<std::string> kLlHosts = {"i", "you", "he", "she", "it", "we", "they", "that", "there", "who"};
  const bool x_clitic = !x.empty() && (x[0] == '\'' || x == "n't");
  const std::string& full = x_clitic ? y : x;
  const std::string& clitic = x_clitic ? x : y;
  if (full == "not") return clitic == "n't" && kNotHosts.count(host);
  if (full == "is" || full == "has") return clitic == "'s" && kSHosts.count(host);
  if (full == "are") return clitic == "'re" && kReHosts.count(host);
  if (full == "am") return clitic == "'m" && host == "i";
  if (full == "have") return clitic == "'ve" && kVeHosts.count(host);
  if (full == "will") return clitic == "'ll" && kLlHosts.count(host);
  if (full == "would" || full == "had") return clitic == "'d" && kLlHosts.count(host);
  return false;
}

// Is `a` `b` with one word moved (a = w R, b = R w, or the reverse)? Sets `moved` to that word.
bool one_word_moved(const Words& a, const Words& b, std::string& moved) {
  const size_t n = a.size();
  if (n < 2 || b.size() != n) return false;
  if (a[0] == b[n - 1] && std::equal(a.begin() + 1, a.end(), b.begin())) {
    moved = a[0];
    return true;
  }
  if (a[n - 1] == b[0] && std::equal(a.begin(), a.end() - 1, b.begin() + 1)) {
    moved = a[n - 1];
    return true;
  }
  return false;
}

bool ly_adverb(const std::string& w, const Lexicon& lex) {
  return w.size() > 4 && w.compare(w.size() - 2, 2, "ly") == 0 && lex.has(w, Pos::Adv);
}

// Is `gen` `of` with one "the X of the Y" turned into "the Y 's X" (or "the Y ' X")?
bool of_to_genitive(const Words& of, const Words& gen) {
  const size_t n = of.size();
  if (gen.size() + 1 != n) return false;
  for (size_t i = 2; i + 2 < n; ++i) {
    if (of[i] != "of" || of[i + 1] != "the") continue;
    for (size_t x0 = i - 1; x0-- > 0 && x0 + 6 > i;) {
      if (of[x0] != "the") continue;
      for (size_t y1 = i + 3; y1 <= n && y1 <= i + 6; ++y1) {
        Words w(of.begin(), of.begin() + static_cast<std::ptrdiff_t>(x0) + 1);
        w.insert(w.end(), of.begin() + static_cast<std::ptrdiff_t>(i) + 2, of.begin() + static_cast<std::ptrdiff_t>(y1));
        const size_t marker = w.size();
        w.push_back("'s");
        w.insert(w.end(), of.begin() + static_cast<std::ptrdiff_t>(x0) + 1, of.begin() + static_cast<std::ptrdiff_t>(i));
        w.insert(w.end(), of.begin() + static_cast<std::ptrdiff_t>(y1), of.end());
        if (w == gen) return true;
        w[marker] = "'";
        if (w == gen) return true;
      }
    }
  }
  return false;
}

// Is `b` `a` with one "X and Y" turned into "Y and X" (X != Y)? `p` and `q` are the lengths of the
// common prefix and suffix: the exchanged spans cover everything between them.
bool coordination_pair(const Words& a, const Words& b, size_t p, size_t q) {
  const size_t n = a.size();
  if (b.size() != n) return false;
  for (size_t m = 1; m + 1 < n; ++m) {
    if (a[m] != "and") continue;
    for (size_t x0 = std::min(p, m - 1) + 1; x0-- > 0;)
      for (size_t y1 = std::max(n - q, m + 2); y1 <= n; ++y1) {
        const Words x(a.begin() + static_cast<std::ptrdiff_t>(x0), a.begin() + static_cast<std::ptrdiff_t>(m));
        const Words y(a.begin() + static_cast<std::ptrdiff_t>(m) + 1, a.begin() + static_cast<std::ptrdiff_t>(y1));
        if (x == y) continue;
        Words w(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(x0));
        w.insert(w.end(), y.begin(), y.end());
        w.push_back("and");
        w.insert(w.end(), x.begin(), x.end());
        w.insert(w.end(), a.begin() + static_cast<std::ptrdiff_t>(y1), a.end());
        if (w == b) return true;
      }
  }
  return false;
}

}  // namespace

DiffCheck check_edit(const std::string& a_text, const std::string& b_text, Kind k, const Lexicon& lex) {
  const Words A = diff_words(a_text), B = diff_words(b_text);
  size_t p = 0;
  while (p < A.size() && p < B.size() && A[p] == B[p]) ++p;
  size_t q = 0;
  while (q < A.size() - p && q < B.size() - p && A[A.size() - 1 - q] == B[B.size() - 1 - q]) ++q;
  const Words a(A.begin() + p, A.end() - q), b(B.begin() + p, B.end() - q);
  DiffCheck d;
  if (a.empty() && b.empty()) {
    d.shape = "identical";
    return d;
  }
  std::string moved;
  if (a.empty()) d.shape = "insert";
  else if (b.empty()) d.shape = "delete";
  else if (a.size() == 1 && b.size() == 1) d.shape = contraction_pair(a[0], b[0], p > 0 ? A[p - 1] : "") ? "contraction" : "replace1";
  // A word moved is a swap of it with its neighbour span; it is a "move" only for an -ly adverb, so
  // that the shapes of the other kinds' edits stay as they were.
  else if (one_word_moved(a, b, moved) && ly_adverb(moved, lex)) d.shape = "move";
  else if (is_swap(a, b, lex)) d.shape = "swap";
  else if (of_to_genitive(A, B) || of_to_genitive(B, A)) d.shape = "possessive";
  else if (do_support_pair(b, a, lex)) d.shape = "insert";
  else if (do_support_pair(a, b, lex)) d.shape = "delete";
  else if (a.size() <= 3 && b.size() <= 3) d.shape = "replace";
  else d.shape = "other";

  switch (k) {
    case Kind::QuestionNegation:
    case Kind::Negation: {
      if (d.shape == "insert" || d.shape == "delete") {
        const Words& span = a.empty() ? b : b.empty() ? a : Words{};
        if (span.empty()) {
          d.intended = true;  // do-support with a re-inflected verb, verified by do_support_pair
        } else if (span.size() == 1) {
          d.intended = is_neg_token(span[0]);
        } else if (span.size() == 2 && is_do(span[0]) && (span[1] == "not" || span[1] == "n't")) {
          // do-support where the verb's form does not change ("set" -> "did not set"; "do not
          // always need" -> "always need"): the verb after the span (past any adverbs) must be
          // the form the do-form asks for.
          const Words& longer = a.empty() ? B : A;
          size_t v = p + span.size();
          while (v < longer.size() && !lex.has(longer[v], Pos::Verb) && (lex.has(longer[v], Pos::Adv) || is_closed_class(longer[v])) &&
                 !is_neg_token(longer[v]))
            ++v;
          if (v < longer.size()) {
            const std::string& base = longer[v];
            std::string expected = span[0] == "did" ? lex.verb_past(base) : span[0] == "does" ? "" : base;
            d.intended = lex.has(base, Pos::Verb) && expected == base;
          }
        }
      } else if (d.shape == "replace1") {
        for (const auto& f : quantifier_flips())
          if ((a[0] == f.first && b[0] == f.second) || (a[0] == f.second && b[0] == f.first)) d.intended = true;
        if ((a[0] == "nothing" && b[0] == "something") || (a[0] == "nobody" && b[0] == "somebody")) d.intended = true;
      }
      break;
    }
    case Kind::RoleSwap:
    case Kind::QuestionRoleSwap:
    case Kind::EntitySwap:
    case Kind::BindingSwap: d.intended = d.shape == "swap"; break;
    case Kind::SpatialFlip:
      if (d.shape == "replace1" || d.shape == "replace") {
        std::string from = join(a), to = join(b);
        for (const auto& r : spatial_rules())
          if ((from == r.from && to == r.to) || (from == r.to && to == r.from)) d.intended = true;
      }
      break;
    case Kind::WhSwap: {
      static const std::set<std::string> kWh = {"why", "how", "when", "where", "who", "what"};
      d.intended = d.shape == "replace1" && kWh.count(a[0]) > 0 && kWh.count(b[0]) > 0;
      break;
    }
    case Kind::NumberChange: {
      static const std::set<std::string> kMonths = {"january", "february", "march", "april", "may", "june", "july",
                                                    "august", "september", "october", "november", "december"};
      auto number = [](const std::string& w) { return !w.empty() && w.find_first_not_of("0123456789") == std::string::npos; };
      d.intended = d.shape == "replace1" && ((number(a[0]) && number(b[0])) || (kMonths.count(a[0]) && kMonths.count(b[0])));
      break;
    }
    case Kind::Antonym:
    case Kind::Synonym:
      if (d.shape == "replace1") d.intended = lexical_relation(a[0], b[0], k == Kind::Antonym, lex);
      break;
    case Kind::PassiveRoleSwap:
      // A passive of A's words whose subject is still A's subject: B starts with A's words up to
      // A's verb, then a form of "be" (a true passive would start with A's object).
      if (check_edit(a_text, b_text, Kind::Passive, lex).intended) {
        size_t lead = 0;
        while (lead < A.size() && lead < B.size() && A[lead] == B[lead]) ++lead;
        static const std::set<std::string> kBe = {"was", "were", "is", "are"};
        d.intended = lead > 0 && lead < B.size() && kBe.count(B[lead]) > 0;
      }
      break;
    case Kind::Passive: {
      // B = A's words, minus one verb, plus be + that verb's participle + "by" (in any order).
      std::multiset<std::string> wa(A.begin(), A.end()), wb(B.begin(), B.end());
      for (const char* w : {"by"}) {
        auto it = wb.find(w);
        if (it == wb.end()) return d;
        wb.erase(it);
      }
      bool be_found = false;
      for (const char* w : {"was", "were", "is", "are"})
        if (auto it = wb.find(w); it != wb.end() && !be_found) {
          wb.erase(it);
          be_found = true;
        }
      if (!be_found) return d;
      for (const auto& w : A) {
        auto ita = wa.find(w);
        auto itb = wb.find(w);
        if (ita != wa.end() && itb != wb.end()) {
          wa.erase(ita);
          wb.erase(itb);
        }
      }
      if (wa.size() == 1 && wb.size() == 1) {
        for (const auto& base : lex.base_forms(*wa.begin(), Pos::Verb))
          if (lex.verb_past_participle(base) == *wb.begin()) d.intended = true;
      } else if (wa.empty() && wb.empty()) {  // past tense = participle ("chased"): same words
        for (const auto& w : A)
          for (const auto& base : lex.base_forms(w, Pos::Verb))
            if (lex.verb_past_participle(base) == w && lex.verb_past(base) == w) d.intended = true;
      }
      break;
    }
    case Kind::Contraction: d.intended = d.shape == "contraction"; break;
    case Kind::Coordination: d.intended = d.shape == "swap" && coordination_pair(A, B, p, q); break;
    case Kind::Possessive: d.intended = d.shape == "possessive"; break;
    case Kind::AdverbMove:
      d.intended = d.shape == "move";
      break;
    case Kind::Determiner:
      // B is A with one rule applied at one place ("all the" -> "all of the" diffs as an insertion).
      for (const auto& r : determiner_rules()) {
        const Words from = diff_words(r.first), to = diff_words(r.second);
        for (size_t i = 0; i + from.size() <= A.size() && !d.intended; ++i) {
          if (!std::equal(from.begin(), from.end(), A.begin() + static_cast<std::ptrdiff_t>(i))) continue;
          Words c(A.begin(), A.begin() + static_cast<std::ptrdiff_t>(i));
          c.insert(c.end(), to.begin(), to.end());
          c.insert(c.end(), A.begin() + static_cast<std::ptrdiff_t>(i + from.size()), A.end());
          d.intended = c == B;
        }
      }
      break;
    case Kind::NegatedAntonym:
      // [not X] -> [Y] (after a copula or modal), or [do-form not X] -> [Y inflected as the do-form].
      if ((d.shape == "replace" || d.shape == "replace1") && b.size() == 1 && a.size() >= 2 && a.size() <= 3 &&
          is_neg_token(a[a.size() - 2]) && a[a.size() - 2] != "never") {
        const std::string& x = a.back();
        if (a.size() == 2) {
          for (const auto* pairs : {&complementary_adjectives(), &complementary_verbs()})
            for (const auto& pr : *pairs)
              if (pr.first == x && pr.second == b[0] && lexical_relation(x, b[0], true, lex)) d.intended = true;
        } else if (is_do(a[0])) {
          for (const auto& pr : complementary_verbs()) {
            if (pr.first != x) continue;
            const std::string form = a[0] == "did" ? lex.verb_past(pr.second)
                                     : a[0] == "does" ? lex.verb_third_person(pr.second) : pr.second;
            if (form == b[0] && lexical_relation(x, pr.second, true, lex)) d.intended = true;
          }
        }
      }
      break;
  }
  return d;
}

}  // namespace sieve::nearmiss
