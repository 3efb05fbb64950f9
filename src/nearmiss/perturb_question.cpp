// Question near-misses (issue 57): the twins of a question that ask something else while keeping
// almost every word. Question negation ("which drugs interact with warfarin?" -> "which drugs do
// not interact with warfarin?", "does aspirin reduce fever?" -> "does aspirin not reduce fever?",
// and the negation removed), the wh-word changed ("why do cats purr?" -> "how do cats purr?"), the
// question's two NPs exchanged ("did Google buy YouTube?" -> "did YouTube buy Google?") and a
// number or a month changed ("what happened in 1998?" -> "what happened in 1999?").
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"

namespace sieve::nearmiss::rules {

namespace {

bool is_aux(Tag g) { return g == Tag::Be || g == Tag::Do || g == Tag::Modal || g == Tag::Have; }

// The index of the question's first auxiliary when the question starts with it ("does ...") or
// with a wh-word and at most three words before it ("why does ...", "which country has ...");
// t.size() when none.
size_t leading_aux(const std::vector<Token>& t) {
  for (size_t i = 0; i < t.size() && i < 4; ++i) {
    if (is_aux(t[i].tag)) return i;
    if (i == 0 && t[i].tag != Tag::Wh) return t.size();
    if (t[i].tag == Tag::Punct || t[i].tag == Tag::Neg || t[i].tag == Tag::Verb) return t.size();
  }
  return t.size();
}

// True when [b, k) alone is a noun phrase (np_end of the shorter sentence stops at k).
bool np_end_before(const Sentence& s, size_t b, size_t k) {
  Sentence cut;
  cut.tokens.assign(s.tokens.begin(), s.tokens.begin() + static_cast<std::ptrdiff_t>(k));
  return np_end(cut, b) == k;
}

bool ends_with_question_mark(const std::vector<Token>& t) {
  for (size_t i = t.size(); i-- > 0;) {
    if (t[i].text == "?") return true;
    if (t[i].tag != Tag::Punct) return false;
  }
  return false;
}

// The end of the subject NP that starts at `b` after an inverted auxiliary, when a verb (or, with
// `adjective_ok`, after Be, an adjective) follows it. The tagger reads "the dog bite
// the man" and "aspirin safe" as one NP; its last word is taken back as the verb or the adjective
// when the lexicon knows it as one and an NP is left before it. b when there is none.
size_t inverted_subject_end(const Sentence& s, const Lexicon& lex, size_t b, bool adjective_ok) {
  const auto& t = s.tokens;
  const size_t e = np_end(s, b);
  if (e == b) return b;
  auto fits = [&](size_t k) {
    return k < t.size() && (t[k].tag == Tag::Verb || (adjective_ok && t[k].tag == Tag::Adj));
  };
  if (fits(e)) return e;
  const std::string last = lower(t[e - 1].text);
  if (e - 1 > b && t[e - 1].tag == Tag::Noun && np_end_before(s, b, e - 1) &&
      (lex.has(last, Pos::Verb) || (adjective_ok && lex.has(last, Pos::Adj))))
    return e - 1;
  return b;
}

}  // namespace

bool is_question_sentence(const Sentence& s) {
  const auto& t = s.tokens;
  return !t.empty() && (ends_with_question_mark(t) || t[0].tag == Tag::Wh);
}

void question_negation_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  if (!is_question_sentence(s)) return;
  // A question that holds a negation: the declarative rules remove it ("why don't people answer"
  // -> "why do people answer", "can't I" -> "can I"); one negation only.
  size_t negs = 0;
  for (const auto& tok : t) {
    const std::string w = lower(tok.text);
    negs += tok.tag == Tag::Neg || w == "cannot" || w == "never";
  }
  if (negs > 1) return;
  if (negs == 1) {
    for (size_t i = 1; i < t.size(); ++i) {
      const std::string w = lower(t[i].text), p = lower(t[i - 1].text);
      if (w == "n't" || w == "not") {
        if (!is_aux(t[i - 1].tag) || p == "'d" || p == "'ll") return;
        Sentence r = s;
        if (p == "ca" || p == "wo" || p == "sha") r.tokens[i - 1].text = case_like(t[i - 1].text, p == "ca" ? "can" : p == "wo" ? "will" : "shall");
        r.tokens.erase(r.tokens.begin() + static_cast<std::ptrdiff_t>(i));
        out.push_back(r);
        return;
      }
    }
    if (lower(t[0].text) == "cannot") {
      Sentence r = s;
      r.tokens[0].text = case_like(t[0].text, "can");
      out.push_back(r);
    }
    return;
  }
  const size_t a = leading_aux(t);
  if (a < t.size()) {
    Sentence r = s;
    auto insert_not_at = [&](size_t k) {
      r.tokens.insert(r.tokens.begin() + static_cast<std::ptrdiff_t>(k), make_token("not", " ", Tag::Neg));
      out.push_back(r);
    };
    const bool inverted = a <= 1 || t[a].tag == Tag::Do;  // "does X ...", "why is X ...", "which book did X ..."
    if (!inverted) {
      // The wh-phrase is the subject: "which drugs are safe?" -> "which drugs are not safe?".
      const bool verb_follows = a + 1 < t.size() && t[a + 1].tag == Tag::Verb;
      if ((t[a].tag == Tag::Be || t[a].tag == Tag::Modal || (t[a].tag == Tag::Have && verb_follows)) && a + 1 < t.size() &&
          t[a + 1].tag != Tag::Punct)
        insert_not_at(a + 1);
      return;
    }
    // Subject-aux inversion: the negation goes after the subject ("does aspirin not reduce
    // fever?", "is the sky not blue?"), never before a preposition ("is the capital of ...").
    const bool be = t[a].tag == Tag::Be;
    size_t e = inverted_subject_end(s, lex, a + 1, be);
    if (e == a + 1 && be) {  // "is the moon a planet?": the predicate NP after the subject NP
      e = np_end(s, a + 1);
      if (e == a + 1 || e >= t.size() || (t[e].tag != Tag::Det && t[e].tag != Tag::Num)) return;
    }
    if (e == a + 1 || e >= t.size()) return;
    insert_not_at(e);
    return;
  }
  // A wh-subject with a finite verb: "which drugs interact with warfarin?" -> "which drugs do
  // not interact ...", "who wrote Hamlet?" -> "who did not write Hamlet?".
  if (t[0].tag != Tag::Wh) return;
  size_t v = np_end(s, 1);
  // "which drugs interact": after a wh-determiner the word is a noun even where it could be a
  // verb ("drugs"), when a verb follows it.
  const std::string w0 = lower(t[0].text);
  if (v == 1 && (w0 == "which" || w0 == "what" || w0 == "whose") && t.size() > 2 && t[1].tag == Tag::Verb &&
      t[2].tag == Tag::Verb)
    v = 2;
  if (v >= t.size() || t[v].tag != Tag::Verb) return;
  const VerbForm vf = verb_form(t[v].text, lex);
  std::string aux;
  if (vf.form == Form::Past && !vf.past_equals_base) aux = "did";
  else if (vf.form == Form::Third) aux = "does";
  else if (vf.form == Form::Base && v > 1 && !vf.past_equals_base) aux = "do";
  if (aux.empty() || vf.base.find('-') != std::string::npos) return;
  Sentence r = s;
  const std::string space = t[v].space_before;
  r.tokens[v].text = vf.base;
  r.tokens.insert(r.tokens.begin() + static_cast<std::ptrdiff_t>(v), make_token("not", " ", Tag::Neg));
  r.tokens.insert(r.tokens.begin() + static_cast<std::ptrdiff_t>(v), make_token(aux, space, Tag::Do));
  out.push_back(r);
}

void wh_swap_candidates(const Sentence& s, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  if (!is_question_sentence(s)) return;
  // Pairs that ask for another thing of the same clause; "what" <-> "which" is left alone (often a
  // paraphrase), and "how" only when it asks for a manner ("how do ...", not "how many").
  static const std::pair<const char*, const char*> kSwaps[] = {
      {"why", "how"}, {"how", "why"}, {"when", "where"}, {"where", "when"}, {"who", "what"}, {"what", "who"}};
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].tag != Tag::Wh) continue;
    const std::string w = lower(t[i].text);
    if (i + 1 >= t.size() || !is_aux(t[i + 1].tag)) continue;  // "how many", "what time", "who wrote"
    for (const auto& sw : kSwaps) {
      if (w != sw.first) continue;
      // "who" asks for a person: "what" in its place only before a copula ("who is X" -> "what is X").
      if ((w == "who" || w == "what") && t[i + 1].tag != Tag::Be) continue;
      Sentence r = s;
      r.tokens[i].text = case_like(t[i].text, sw.second);
      out.push_back(r);
    }
    return;  // the first wh-word only
  }
}

void question_role_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  if (!is_question_sentence(s)) return;
  // [wh] aux NP1 verb NP2: "did Google buy YouTube?" -> "did YouTube buy Google?", "why did the
  // dog bite the man?" -> "why did the man bite the dog?". Pronouns are left alone (their case
  // would change), and with "does" / "is" both NPs must agree in number with the auxiliary.
  const size_t a = leading_aux(t);
  if (a >= t.size() || t[a].tag == Tag::Have) return;
  const size_t b1 = a + 1, e1 = inverted_subject_end(s, lex, b1, false);
  if (e1 == b1 || e1 >= t.size()) return;
  const size_t v = e1;  // "is X eating Y", "does X own Y": the verb right after the subject
  const size_t b2 = v + 1;
  if (b2 < t.size() && lower(t[b2].text) == "by") return;  // a passive: its agent is not an object
  const size_t e2 = np_end(s, b2);
  if (e2 == b2) return;
  if (e2 < t.size() && t[e2].tag != Tag::Punct && t[e2].tag != Tag::Prep && t[e2].tag != Tag::Conj) return;
  for (size_t i : {b1, b2})
    if (t[i].tag == Tag::Pron) return;
  if (t[a].tag != Tag::Modal && lower(t[a].text) != "did" &&
      np_third_singular(s, Range{b1, e1}, lex) != np_third_singular(s, Range{b2, e2}, lex))
    return;
  Sentence r = swap_spans(s, Range{b1, e1}, Range{b2, e2});
  out.push_back(r);
}

void number_change_candidates(const Sentence& s, std::mt19937_64& rng, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  static const char* const kMonths[] = {"january", "february", "march",     "april",   "may",      "june",
                                        "july",    "august",   "september", "october", "november", "december"};
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string w = lower(t[i].text);
    if (!w.empty() && w.size() <= 6 && w.find_first_not_of("0123456789") == std::string::npos && w[0] != '0') {
      // A year moves by 1-5 years, another number by 1-3 or doubles: still a plausible value.
      const long n = std::stol(w);
      const bool year = w.size() == 4 && (w[0] == '1' || w[0] == '2');
      const long d = std::uniform_int_distribution<long>(1, year ? 5 : 3)(rng);
      long m = year ? n + (std::uniform_int_distribution<int>(0, 1)(rng) ? d : -d) : (n > 3 ? n * 2 : n + d);
      if (m == n || m <= 0) m = n + 1;
      Sentence r = s;
      r.tokens[i].text = std::to_string(m);
      out.push_back(r);
      continue;
    }
    // A month name (a capitalised "May" only: "may" is the modal).
    for (size_t k = 0; k < 12; ++k) {
      if (w != kMonths[k] || (k == 4 && !starts_upper(t[i].text)) || (k == 2 && !starts_upper(t[i].text))) continue;
      const size_t other = (k + 1 + std::uniform_int_distribution<size_t>(0, 10)(rng)) % 12;
      Sentence r = s;
      r.tokens[i].text = case_like(t[i].text, kMonths[other]);
      out.push_back(r);
    }
  }
}

}  // namespace sieve::nearmiss::rules
