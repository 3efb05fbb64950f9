// Negation near-misses: not/n't/never inserted or removed (with do-support), quantifier flips.
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"
#include "nearmiss/perturb_tables.h"

namespace sieve::nearmiss::rules {

namespace {

bool is_negation_word(const std::string& lw) {
  return lw == "not" || lw == "n't" || lw == "never" || lw == "cannot" || lw == "no" || lw == "nothing" ||
         lw == "nobody" || lw == "none" || lw == "neither" || lw == "nor" || lw == "nowhere";
}

}  // namespace

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

}  // namespace sieve::nearmiss::rules
